// Package simlink connects the in-process network simulators (carriers/sim) to the engine:
// it adapts each simulator to actors.Carrier and routes their pushed receipts to the engine.
package simlink

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/sim"
)

// ReceiptSink takes pushed receipts (Engine.Receipt).
type ReceiptSink func(n carriers.Network, providerID string, st actors.CarrierStatus)

// Set is one simulator per network.
type Set struct {
	nets map[carriers.Network]*sim.Network
	sink atomic.Pointer[ReceiptSink]
}

// New starts a simulator for each network with its options (Network and OnReceipt are set
// here). Receipts pushed before Deliver is called are dropped; Deliver early.
func New(opts map[carriers.Network]sim.Options) (*Set, error) {
	s := &Set{nets: map[carriers.Network]*sim.Network{}}
	for _, n := range carriers.Networks() {
		o := opts[n]
		o.Network = n
		o.OnReceipt = func(r sim.Receipt) {
			if f := s.sink.Load(); f != nil {
				(*f)(n, r.ProviderID, status(r))
			}
		}
		net, err := sim.New(o)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("simulator for %s: %w", n, err)
		}
		s.nets[n] = net
	}
	return s, nil
}

// Deliver routes pushed receipts to f.
func (s *Set) Deliver(f ReceiptSink) { s.sink.Store(&f) }

// Carriers returns the engine's view of the simulators.
func (s *Set) Carriers() map[carriers.Network]actors.Carrier {
	out := map[carriers.Network]actors.Carrier{}
	for n, net := range s.nets {
		out[n] = carrier{net}
	}
	return out
}

// Network returns the simulator of a network (tests and benches tune and observe it).
func (s *Set) Network(n carriers.Network) *sim.Network { return s.nets[n] }

// Close stops every simulator.
func (s *Set) Close() {
	for _, n := range s.nets {
		n.Close()
	}
}

type carrier struct{ n *sim.Network }

func (c carrier) Submit(ctx context.Context, m actors.Outgoing) (string, error) {
	id, err := c.n.Submit(ctx, sim.Submission{
		MessageID: m.MessageID.String(), Sender: m.Sender, Destination: m.Destination, Text: m.Text,
		Parts: m.Parts, Encoding: m.Encoding,
	})
	return id, mapErr(err)
}

// Lookup asks the simulator whether it took a message (after a lost answer).
func (c carrier) Lookup(ctx context.Context, messageID uuid.UUID) (string, error) {
	id, err := c.n.Lookup(ctx, messageID.String())
	return id, mapErr(err)
}

func (c carrier) Query(ctx context.Context, providerID string) (actors.CarrierStatus, error) {
	r, err := c.n.Query(ctx, providerID)
	if err != nil {
		return actors.CarrierStatus{}, mapErr(err)
	}
	return status(r), nil
}

func status(r sim.Receipt) actors.CarrierStatus {
	st := actors.CarrierStatus{
		Final: r.State != sim.Enroute, Delivered: r.State == sim.Delivered, ProviderStatus: r.ProviderStatus, At: r.DoneAt,
	}
	if r.State == sim.Failed {
		st.Error = "err:" + r.ErrorCode
	}
	return st
}

// mapErr translates the simulator's errors into the engine's vocabulary, keeping the cause.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sim.ErrThrottled):
		return fmt.Errorf("%w: %w", actors.ErrThrottled, err)
	case errors.Is(err, sim.ErrRejected):
		return fmt.Errorf("%w: %w", actors.ErrRejected, err)
	case errors.Is(err, sim.ErrUnknownMessage):
		return fmt.Errorf("%w: %w", actors.ErrUnknownMessage, err)
	case errors.Is(err, sim.ErrDown):
		return fmt.Errorf("%w: %w", actors.ErrUnavailable, err)
	case errors.Is(err, sim.ErrLostAnswer):
		return fmt.Errorf("%w: %w", actors.ErrUnknownOutcome, err)
	default: // temporary failures, closed networks, cancelled contexts: retry later
		return fmt.Errorf("%w: %w", actors.ErrTemporary, err)
	}
}
