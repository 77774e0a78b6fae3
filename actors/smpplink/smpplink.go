// Package smpplink connects SMPP binds (carriers/smpp) to the engine: per network, one or
// more binds behind one actors.Carrier, long messages split into parts, delivery receipts
// correlated and folded per message before they reach the engine, and mobile-originated
// messages (parts joined) handed to the inbound sink.
package smpplink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/carriers/smpp"
)

// ReceiptSink takes receipts (Engine.Receipt).
type ReceiptSink func(n carriers.Network, providerID string, st actors.CarrierStatus)

// AnswerSink takes submit_sm_resp that came after their submit gave up (Engine.LateAnswer).
type AnswerSink func(n carriers.Network, account, messageID uuid.UUID, providerID string)

// InboundSink takes a mobile-originated message that came on network n. It returns once the
// message is kept; an error has the SMSC deliver it again later, unless it wraps
// smpp.ErrMORefused (never to be taken).
type InboundSink func(ctx context.Context, n carriers.Network, m smpp.MO) error

// errNoInboundSink refuses MO for now while the node is starting.
var errNoInboundSink = errors.New("smpplink: inbound messages not wired yet")

// Set is every network's binds.
type Set struct {
	nets    map[carriers.Network]*link
	sink    atomic.Pointer[ReceiptSink]
	answers atomic.Pointer[AnswerSink]
	inbound atomic.Pointer[InboundSink]
	log     *slog.Logger
	stop    chan struct{}
	done    sync.WaitGroup
}

// New opens the binds of each network named in binds. Receipts that arrive before Deliver
// is called, and MO before Inbound, are refused with ESME_RX_T_APPN, so the SMSC sends them
// again.
func New(binds map[carriers.Network][]smpp.BindConfig, log *slog.Logger, m *smpp.Metrics) (*Set, error) {
	s := &Set{nets: map[carriers.Network]*link{}, log: log, stop: make(chan struct{})}
	for n, cfgs := range binds {
		// One reassembler per network: an SMSC may send a message's parts on different binds.
		l := &link{network: n, set: s, parts: newParts(), reasm: smpp.NewReassembler(0, 0)}
		for _, c := range cfgs {
			b, err := smpp.NewBind(c, smpp.BindHooks{Deliver: l.deliver, LateResp: l.lateResp, MO: l.mo, Reassembler: l.reasm},
				log.With("network", n.String()), m)
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			l.binds = append(l.binds, b)
		}
		s.nets[n] = l
	}
	s.done.Add(1)
	go s.sweep()
	return s, nil
}

// Deliver routes receipts to f.
func (s *Set) Deliver(f ReceiptSink) { s.sink.Store(&f) }

// Answers routes late submit answers to f.
func (s *Set) Answers(f AnswerSink) { s.answers.Store(&f) }

// Inbound routes mobile-originated messages to f.
func (s *Set) Inbound(f InboundSink) { s.inbound.Store(&f) }

// Carriers is the engine's view of the links.
func (s *Set) Carriers() map[carriers.Network]actors.Carrier {
	out := map[carriers.Network]actors.Carrier{}
	for n, l := range s.nets {
		out[n] = l
	}
	return out
}

// Window is the submits a network's binds hold in flight together: the engine's link window
// should be at least this.
func (s *Set) Window(n carriers.Network) int {
	w := 0
	if l := s.nets[n]; l != nil {
		for _, b := range l.binds {
			w += b.Config().Window
		}
	}
	return w
}

// WaitBound waits until every bind has bound once.
func (s *Set) WaitBound(ctx context.Context) error {
	for _, l := range s.nets {
		for _, b := range l.binds {
			if err := b.WaitBound(ctx); err != nil {
				return fmt.Errorf("%s: %w", b.Name(), err)
			}
		}
	}
	return nil
}

// Close unbinds everything.
func (s *Set) Close() {
	select {
	case <-s.stop:
		return
	default:
		close(s.stop)
	}
	var wg sync.WaitGroup
	for _, l := range s.nets {
		for _, b := range l.binds {
			wg.Add(1)
			go func() { defer wg.Done(); b.Close() }()
		}
	}
	wg.Wait()
	s.done.Wait()
}

// sweep hands on receipts that no part claimed in time and forgets abandoned messages.
func (s *Set) sweep() {
	defer s.done.Done()
	t := time.NewTicker(earlyHold / 4)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			for _, l := range s.nets {
				for _, r := range l.parts.expire(now) {
					l.emit(r.id, r.st)
				}
				l.waiting.Range(func(k, v any) bool {
					if now.Sub(v.(lateSubmit).at) > lateAnswerWait {
						l.waiting.Delete(k)
					}
					return true
				})
			}
		}
	}
}

// link is one network: its binds, used in turn.
type link struct {
	network carriers.Network
	set     *Set
	binds   []*smpp.Bind
	next    atomic.Uint32
	parts   *parts
	reasm   *smpp.Reassembler
	waiting sync.Map // *smpp.PDU → lateSubmit: submits that gave up waiting for their resp
}

// lateSubmit is a message whose first submit_sm went unanswered in time.
type lateSubmit struct {
	out actors.Outgoing
	at  time.Time
}

// lateAnswerWait is how long an unanswered submit_sm is remembered for its resp.
const lateAnswerWait = 10 * time.Minute

// mo hands a mobile-originated message to the inbound sink; it runs on a bind's MO worker.
func (l *link) mo(ctx context.Context, m smpp.MO) error {
	f := l.set.inbound.Load()
	if f == nil {
		return errNoInboundSink
	}
	if m.Incomplete {
		l.set.log.Warn("smpp MO parts missing; kept with the parts that came", "network", l.network,
			"parts", m.Parts, "of", m.Total)
	}
	return (*f)(ctx, l.network, m)
}

// lateResp records the network id of a message whose submit_sm_resp came too late.
func (l *link) lateResp(req, resp *smpp.PDU) {
	v, ok := l.waiting.LoadAndDelete(req)
	if !ok || resp.Status != smpp.StatusOK {
		return
	}
	out := v.(lateSubmit).out
	if f := l.set.answers.Load(); f != nil {
		(*f)(l.network, out.AccountID, out.MessageID, smpp.NormalizeID(resp.MessageID))
	}
}

// submitFirst sends a message's first (or only) part, remembering it if the resp is late.
func (l *link) submitFirst(ctx context.Context, b *smpp.Bind, p *smpp.PDU, m actors.Outgoing) (*smpp.PDU, error) {
	resp, err := b.Submit(ctx, p)
	if errors.Is(err, smpp.ErrNoResponse) {
		l.waiting.Store(p, lateSubmit{out: m, at: time.Now()})
	}
	return resp, err
}

// pick is the next bound bind, or nil when none is.
func (l *link) pick() *smpp.Bind {
	n := uint32(len(l.binds))
	start := l.next.Add(1)
	for i := range n {
		if b := l.binds[(start+i)%n]; b.Bound() {
			return b
		}
	}
	return nil
}

// Submit sends a message's parts on one bind. Its id at the network is the first part's.
func (l *link) Submit(ctx context.Context, m actors.Outgoing) (string, error) {
	b := l.pick()
	if b == nil {
		return "", fmt.Errorf("%s: no bind is up: %w", l.network, actors.ErrUnavailable)
	}
	cfg := b.Config()
	ps, _, err := smpp.Parts(m.Text, b.NextRef(), cfg.Concat)
	if err != nil {
		return "", fmt.Errorf("%w: %w", actors.ErrRejected, err)
	}
	ton, npi := sourceAddr(m.Sender)
	if cfg.SourceTON >= 0 {
		ton = byte(cfg.SourceTON)
	}
	if cfg.SourceNPI >= 0 {
		npi = byte(cfg.SourceNPI)
	}
	dest := strings.TrimPrefix(m.Destination, "+")
	pdu := func(p smpp.Part) *smpp.PDU {
		return &smpp.PDU{SourceTON: ton, SourceNPI: npi, Source: m.Sender, DestTON: cfg.DestTON, DestNPI: cfg.DestNPI, Dest: dest,
			ESMClass: p.ESMClass, DataCoding: p.DataCoding, RegisteredDelivery: 1, ShortMessage: p.ShortMessage, TLVs: p.TLVs}
	}
	if len(ps) == 1 {
		resp, err := l.submitFirst(ctx, b, pdu(ps[0]), m)
		if err != nil {
			return "", mapErr(err)
		}
		return smpp.NormalizeID(resp.MessageID), nil
	}
	// A long message: its parts' receipts are folded into one under the first part's id.
	lm := &longMessage{started: time.Now(), open: true}
	l.parts.begin()
	var refused *actors.CarrierStatus
	defer func() { l.parts.done(lm, refused, l.emit) }()
	for i, p := range ps {
		var resp *smpp.PDU
		var err error
		if i == 0 {
			resp, err = l.submitFirst(ctx, b, pdu(p), m)
		} else {
			resp, err = l.submitPart(ctx, b, pdu(p))
		}
		if err != nil {
			if i == 0 {
				return "", mapErr(err)
			}
			// Some parts went: the message is sent and ends failed once their receipts are in.
			l.set.log.Warn("smpp part refused after earlier parts went", "network", l.network, "part", i+1,
				"of", len(ps), "err", err)
			refused = &actors.CarrierStatus{Final: true, ProviderStatus: "REJECTD", Error: err.Error(), At: time.Now()}
			return lm.first, nil
		}
		l.parts.sent(lm, smpp.NormalizeID(resp.MessageID), l.emit)
	}
	return lm.first, nil
}

// maxPartThrottles bounds how often a later part is throttled before the message is given up
// as partly sent (each try waits the bind's throttle pause first).
const maxPartThrottles = 100

// submitPart submits one part. Later parts of a message are not left half sent for a
// throttle: they wait their turn and go again, for as long as the context allows.
func (l *link) submitPart(ctx context.Context, b *smpp.Bind, pdu *smpp.PDU) (*smpp.PDU, error) {
	for attempt := 1; ; attempt++ {
		resp, err := b.Submit(ctx, pdu)
		var st smpp.Status
		if attempt == maxPartThrottles || !errors.As(err, &st) || smpp.Classify(st) != smpp.ClassThrottle {
			return resp, err
		}
	}
}

// sourceAddr is the TON/NPI of a sender: alphanumeric (5/0), a short code (3/0) or a
// number in international form (1/1), as notes/telecom.md §3.3 recommends.
func sourceAddr(s string) (ton, npi byte) {
	digits := s != ""
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			digits = false
			break
		}
	}
	switch {
	case !digits:
		return 5, 0
	case len(s) <= 8:
		return 3, 0
	}
	return 1, 1
}

// mapErr says what a first part's failure means for the message.
func mapErr(err error) error {
	var st smpp.Status
	switch {
	case errors.As(err, &st):
		switch smpp.Classify(st) {
		case smpp.ClassThrottle:
			return fmt.Errorf("%w: %w", actors.ErrThrottled, err)
		case smpp.ClassPermanent:
			return fmt.Errorf("%w: %w", actors.ErrRejected, err)
		}
		return fmt.Errorf("%w: %w", actors.ErrTemporary, err)
	case errors.Is(err, smpp.ErrNotBound):
		return fmt.Errorf("%w: %w", actors.ErrUnavailable, err)
	case errors.Is(err, smpp.ErrNoResponse):
		// It went and no answer came: the SMSC may have it. Not sent again blindly.
		return fmt.Errorf("%w: %w", actors.ErrUnknownOutcome, err)
	case errors.Is(err, smpp.ErrFieldTooLong), errors.Is(err, smpp.ErrMalformed):
		return fmt.Errorf("%w: %w", actors.ErrRejected, err)
	}
	// A connection lost awaiting the resp, a nack: sent again on the next bind, so a drop
	// duplicates at most the window and loses nothing.
	return fmt.Errorf("%w: %w", actors.ErrTemporary, err)
}

// Query asks a bound bind about a message (query_sm).
func (l *link) Query(ctx context.Context, providerID string) (actors.CarrierStatus, error) {
	b := l.pick()
	if b == nil {
		return actors.CarrierStatus{}, fmt.Errorf("%s: no bind is up: %w", l.network, actors.ErrUnavailable)
	}
	resp, err := b.Query(ctx, providerID, "", 0, 0)
	var st smpp.Status
	switch {
	case errors.As(err, &st) && (st == smpp.StatusQueryFail || st == smpp.StatusInvMsgID):
		return actors.CarrierStatus{}, fmt.Errorf("%w: %w", actors.ErrUnknownMessage, err)
	case err != nil:
		return actors.CarrierStatus{}, mapErr(err)
	}
	state := smpp.MessageState(resp.MessageState)
	return status(state, "", time.Now()), nil
}

// status is a message state in the engine's words.
func status(state smpp.MessageState, errCode string, at time.Time) actors.CarrierStatus {
	st := actors.CarrierStatus{Final: state.Final(), Delivered: state == smpp.StateDelivered,
		ProviderStatus: state.String(), At: at}
	if st.Final && !st.Delivered && errCode != "" {
		st.Error = "err:" + errCode
	}
	return st
}
