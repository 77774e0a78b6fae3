package smpp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// session is one connection of a Bind: requests awaiting their resp by sequence number, a
// reader that answers the SMSC's requests, and the keep-alive.
type session struct {
	b        *Bind
	w        *wire
	lastRead atomic.Int64  // unix nanos
	gone     chan struct{} // closed when the reader stops

	mu      sync.Mutex
	seq     uint32
	pending map[uint32]*call
	ended   bool
	readErr error
}

// call is a request awaiting its resp. An abandoned call (its caller stopped waiting) stays
// a while, so a late submit_sm_resp still tells what the SMSC did.
type call struct {
	req       *PDU
	ch        chan *PDU // the resp; nil when the connection ended first
	at        time.Time
	abandoned bool
}

// ErrNacked means the SMSC answered generic_nack: it could not read the request.
var ErrNacked = errors.New("smpp: generic_nack")

func newSession(b *Bind, nc net.Conn) *session {
	s := &session{b: b, gone: make(chan struct{}), pending: map[uint32]*call{}}
	s.w = newWire(nc, func(pdus, octets int) {
		b.m.writes.Inc()
		b.m.written.Add(float64(pdus))
	})
	s.lastRead.Store(time.Now().UnixNano())
	return s
}

// call sends req with the next sequence number and waits for its resp.
func (s *session) call(ctx context.Context, req *PDU) (*PDU, error) {
	c := &call{req: req, ch: make(chan *PDU, 1), at: time.Now()}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return nil, ErrNotBound
	}
	for {
		s.seq = s.seq%0x7FFFFFFF + 1 // 1 to 0x7FFFFFFF, never one still awaited
		if _, busy := s.pending[s.seq]; !busy {
			break
		}
	}
	req.Seq = s.seq
	s.pending[req.Seq] = c
	s.mu.Unlock()
	if err := s.w.send(req); err != nil {
		s.mu.Lock()
		delete(s.pending, req.Seq)
		s.mu.Unlock()
		if errors.Is(err, ErrFieldTooLong) || errors.Is(err, ErrMalformed) || errors.Is(err, ErrUnknownCommand) || errors.Is(err, ErrBadLength) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrNotBound, err)
	}
	t := time.NewTimer(s.b.cfg.ResponseTimeout)
	defer t.Stop()
	select {
	case resp := <-c.ch:
		if resp == nil {
			return nil, ErrConnectionLost
		}
		if resp.ID == GenericNack {
			return resp, fmt.Errorf("%w: %s", ErrNacked, resp.Status)
		}
		return resp, nil
	case <-t.C:
		s.abandon(c)
		s.b.m.timeouts.Inc()
		return nil, ErrNoResponse
	case <-ctx.Done():
		s.abandon(c)
		return nil, fmt.Errorf("%w: %w", ErrNoResponse, ctx.Err())
	}
}

func (s *session) abandon(c *call) {
	s.mu.Lock()
	c.abandoned = true
	s.mu.Unlock()
	select { // the resp may have come in between
	case resp := <-c.ch:
		if resp != nil {
			s.lateResp(c, resp)
		}
	default:
	}
}

func (s *session) lateResp(c *call, resp *PDU) {
	if s.b.late != nil && resp.ID == SubmitSMResp {
		s.b.late(c.req, resp)
	}
}

// resolve hands a resp to its caller.
func (s *session) resolve(resp *PDU) {
	s.mu.Lock()
	c := s.pending[resp.Seq]
	delete(s.pending, resp.Seq)
	abandoned := c != nil && c.abandoned
	s.mu.Unlock()
	switch {
	case c == nil:
		s.b.log.Debug("smpp resp for no request", "command", resp.ID, "seq", resp.Seq)
	case abandoned:
		s.lateResp(c, resp)
	default:
		c.ch <- resp
	}
}

// end fails what awaits a resp and drops the connection.
func (s *session) end(err error) {
	s.mu.Lock()
	if !s.ended {
		s.ended = true
		for seq, c := range s.pending {
			if !c.abandoned {
				c.ch <- nil
			}
			delete(s.pending, seq)
		}
	}
	s.mu.Unlock()
	if err == nil {
		err = ErrClosed
	}
	s.w.close(err)
}

// readLoop reads PDUs until the connection fails, answering the SMSC's requests.
func (s *session) readLoop() {
	defer close(s.gone)
	defer func() { // a fault in a hook ends this connection, not the process: the bind redials
		if r := recover(); r != nil {
			s.b.log.Error("smpp reader panicked", "panic", r)
			s.stopReading(fmt.Errorf("smpp: reader panicked: %v", r))
		}
	}()
	for {
		frame, err := s.w.read()
		if err != nil {
			s.stopReading(fmt.Errorf("smpp: read: %w", err))
			return
		}
		s.lastRead.Store(time.Now().UnixNano())
		p := new(PDU)
		if err := Decode(frame, p); err != nil {
			h, _ := PeekHeader(frame)
			s.b.log.Warn("smpp undecodable PDU", "err", err, "command", h.ID, "seq", h.Seq)
			_ = s.w.send(&PDU{Header: Header{ID: GenericNack, Status: nackStatus(err), Seq: h.Seq}})
			if errors.Is(err, ErrBadLength) {
				s.stopReading(err)
				return
			}
			continue
		}
		switch p.ID {
		case SubmitSMResp, QuerySMResp, EnquireLinkResp, UnbindResp, BindTransceiverResp,
			BindReceiverResp, BindTransmitterResp, GenericNack:
			s.resolve(p)
		case DeliverSM:
			if s.b.mo != nil && p.IsMO() {
				s.b.mo.enqueue(s, p) // answered by the worker once handled
				continue
			}
			st := s.b.deliver(p)
			_ = s.w.send(&PDU{Header: Header{ID: DeliverSMResp, Status: st, Seq: p.Seq}})
		case EnquireLink:
			_ = s.w.send(&PDU{Header: Header{ID: EnquireLinkResp, Seq: p.Seq}})
		case Unbind:
			_ = s.w.send(&PDU{Header: Header{ID: UnbindResp, Seq: p.Seq}})
			s.w.flushClose()
			s.stopReading(errors.New("smpp: the SMSC unbound"))
			return
		default:
			_ = s.w.send(&PDU{Header: Header{ID: p.ID.Response(), Status: StatusInvBndSts, Seq: p.Seq}})
		}
	}
}

func (s *session) stopReading(err error) {
	s.mu.Lock()
	if s.readErr == nil {
		s.readErr = err
	}
	s.mu.Unlock()
	s.end(err)
}

// nackStatus is the generic_nack status for a decode error.
func nackStatus(err error) Status {
	switch {
	case errors.Is(err, ErrBadLength):
		return StatusInvCmdLen
	case errors.Is(err, ErrUnknownCommand):
		return StatusInvCmdID
	}
	return StatusInvMsgLen
}

// bind sends bind_transceiver and checks the answer.
func (s *session) bind(ctx context.Context) error {
	cfg := s.b.cfg
	resp, err := s.call(ctx, &PDU{Header: Header{ID: BindTransceiver}, SystemID: cfg.SystemID,
		Password: cfg.Password, SystemType: cfg.SystemType, InterfaceVersion: 0x34, AddrTON: cfg.AddrTON, AddrNPI: cfg.AddrNPI})
	if err != nil {
		return fmt.Errorf("smpp: bind: %w", err)
	}
	if resp.Status != StatusOK {
		return fmt.Errorf("smpp: bind refused: %w", resp.Status)
	}
	return nil
}

// keepAlive watches the connection until it ends or stop closes: it sends enquire_link
// after EnquireLink of silence and drops a connection whose answer does not come; on stop
// it unbinds.
func (s *session) keepAlive(stop <-chan struct{}) error {
	cfg := s.b.cfg
	tick := time.NewTicker(max(cfg.EnquireLink/4, 10*time.Millisecond))
	defer tick.Stop()
	probe := make(chan error, 1)
	probing := false
	for {
		select {
		case <-s.gone:
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.readErr
		case <-stop:
			ctx, cancel := context.WithTimeout(context.Background(), cfg.ResponseTimeout)
			_, err := s.call(ctx, &PDU{Header: Header{ID: Unbind}})
			cancel()
			s.w.flushClose()
			return errors.Join(errors.New("smpp: unbound on close"), err)
		case err := <-probe:
			probing = false
			if err != nil {
				s.end(fmt.Errorf("smpp: enquire_link: %w", err))
			}
		case <-tick.C:
			s.sweep(10 * cfg.ResponseTimeout)
			idle := time.Since(time.Unix(0, s.lastRead.Load()))
			if !probing && idle >= cfg.EnquireLink {
				probing = true
				go func() { // owned: answered within ResponseTimeout, read above
					_, err := s.call(context.Background(), &PDU{Header: Header{ID: EnquireLink}})
					probe <- err
				}()
			}
		}
	}
}

// sweep forgets abandoned calls older than age.
func (s *session) sweep(age time.Duration) {
	cut := time.Now().Add(-age)
	s.mu.Lock()
	for seq, c := range s.pending {
		if c.abandoned && c.at.Before(cut) {
			delete(s.pending, seq)
		}
	}
	s.mu.Unlock()
}
