package smpp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Bind is one client bind (bind_transceiver) to an SMSC, kept up by its own goroutine:
// a lost or refused bind is tried again with doubling pauses, and a panic in its session is
// recovered as a lost connection, so the bind restarts whole.
type Bind struct {
	cfg     BindConfig
	log     *slog.Logger
	m       bindMetrics
	deliver func(*PDU) Status // deliver_sm (receipts); runs on the reader, must be quick
	late    func(req, resp *PDU)
	mo      *moWorker // nil: MO deliver_sm go to deliver like any other

	cur    atomic.Pointer[session] // nil unless bound
	slots  chan struct{}           // the window: one token per submit awaiting its resp
	pace   sync.Mutex
	next   time.Time   // the next submit's turn under the TPS cap
	sent   []time.Time // when the last TPS submits were let go (a ring), for the cap
	sentAt int
	hold   atomic.Int64 // unix nanos until which a throttled bind holds its submits
	ref    atomic.Uint32
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once
	bound  chan struct{} // closed at the first bind (tests and start-up wait on it)
	first  sync.Once
}

// Errors of a bind's requests.
var (
	// ErrNotBound means nothing was written: there is no bound session.
	ErrNotBound = errors.New("smpp: not bound")
	// ErrNoResponse means the request went out and its resp did not come in time: the SMSC
	// may have acted on it.
	ErrNoResponse = errors.New("smpp: no response in time")
	// ErrConnectionLost means the connection closed with the request awaiting its resp.
	ErrConnectionLost = errors.New("smpp: connection lost awaiting the response")
)

// BindHooks are what a bind calls back.
type BindHooks struct {
	// Deliver answers a deliver_sm (receipts); it runs on the session's reader and must not
	// block. The status returned goes back in deliver_sm_resp (StatusXTAppn asks the SMSC
	// to deliver it again later).
	Deliver func(*PDU) Status
	// LateResp sees a submit_sm_resp that came after its request gave up waiting.
	LateResp func(req, resp *PDU)
	// MO takes mobile-originated messages (deliver_sm of esm_class type 0), parts joined. It
	// runs on the bind's own worker, not the reader, so it may do I/O; each deliver_sm is
	// answered after it returns. Nil leaves them to Deliver.
	MO MOHandler
	// Reassembler joins MO parts; binds of one network should share one, as an SMSC may send
	// a message's parts on different binds. Nil: the bind's own, with the defaults.
	Reassembler *Reassembler
}

// NewBind starts keeping a bind up. Close stops it.
func NewBind(cfg BindConfig, hooks BindHooks, log *slog.Logger, m *Metrics) (*Bind, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("bind %s: %w", cfg.Name, err)
	}
	if hooks.Deliver == nil {
		hooks.Deliver = func(*PDU) Status { return StatusOK }
	}
	b := &Bind{cfg: cfg, log: log.With("bind", cfg.Name, "addr", cfg.Addr), m: m.bind(cfg.Name),
		deliver: hooks.Deliver, late: hooks.LateResp, slots: make(chan struct{}, cfg.Window),
		stop: make(chan struct{}), done: make(chan struct{}), bound: make(chan struct{})}
	b.ref.Store(uint32(time.Now().UnixNano()))
	if hooks.MO != nil {
		b.mo = newMOWorker(b, hooks.MO, hooks.Reassembler)
		go b.mo.run()
	}
	go b.run()
	return b, nil
}

// Name is the bind's name.
func (b *Bind) Name() string { return b.cfg.Name }

// Config is what the bind was made with.
func (b *Bind) Config() BindConfig { return b.cfg }

// Bound says whether a session is bound now.
func (b *Bind) Bound() bool { return b.cur.Load() != nil }

// WaitBound waits for the first bind.
func (b *Bind) WaitBound(ctx context.Context) error {
	select {
	case <-b.bound:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// NextRef is a reference for a concatenated message's parts.
func (b *Bind) NextRef() uint16 { return uint16(b.ref.Add(1)) }

// run keeps the bind up until Close.
func (b *Bind) run() {
	defer close(b.done)
	pause := b.cfg.ReconnectMin
	for {
		bound, err := b.session()
		select {
		case <-b.stop:
			return
		default:
		}
		if bound {
			pause = b.cfg.ReconnectMin
		}
		b.m.reconnects.Inc()
		b.log.Warn("smpp bind down; binding again", "err", err, "in", pause)
		select {
		case <-b.stop:
			return
		case <-time.After(pause):
		}
		if !bound {
			pause = min(2*pause, b.cfg.ReconnectMax)
		}
	}
}

// session dials, binds and serves one connection until it ends. A panic inside ends the
// connection like any other fault.
func (b *Bind) session() (bound bool, err error) {
	b.m.state.Set(1)
	defer b.m.state.Set(0)
	var s *session
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("smpp: session panicked: %v", r)
			b.log.Error("smpp session panicked", "panic", r)
		}
		if s != nil {
			b.cur.CompareAndSwap(s, nil)
			s.end(err)
		}
	}()
	d := net.Dialer{Timeout: b.cfg.ResponseTimeout}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-b.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	defer cancel()
	nc, err := d.DialContext(ctx, "tcp", b.cfg.Addr)
	if err != nil {
		return false, fmt.Errorf("smpp: dial: %w", err)
	}
	s = newSession(b, nc)
	go s.readLoop()
	if err := s.bind(ctx); err != nil {
		return false, err
	}
	b.cur.Store(s)
	b.m.state.Set(2)
	b.first.Do(func() { close(b.bound) })
	b.log.Info("smpp bound")
	return true, s.keepAlive(b.stop)
}

// Submit sends one submit_sm and waits for its resp. It takes a window slot, its turn under
// the TPS cap and any throttle hold first. Errors: ErrNotBound (nothing sent), ErrNoResponse
// and ErrConnectionLost (the SMSC may have it), a Status for a refusal, or ctx's error while
// waiting to send (nothing sent).
func (b *Bind) Submit(ctx context.Context, p *PDU) (*PDU, error) {
	p.ID = SubmitSM
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-b.slots }()
	if err := b.wait(ctx); err != nil {
		return nil, err
	}
	s := b.cur.Load()
	if s == nil {
		return nil, ErrNotBound
	}
	b.m.window.Inc()
	defer b.m.window.Dec()
	start := time.Now()
	resp, err := s.call(ctx, p)
	if err != nil {
		return nil, err
	}
	b.m.latency.Observe(time.Since(start).Seconds())
	if resp.Status != StatusOK {
		if Classify(resp.Status) == ClassThrottle {
			b.m.throttles.Inc()
			b.hold.Store(time.Now().Add(b.cfg.ThrottlePause).UnixNano())
		}
		return resp, resp.Status
	}
	return resp, nil
}

// Query asks the SMSC about a message it took (query_sm).
func (b *Bind) Query(ctx context.Context, messageID string, source string, ton, npi byte) (*PDU, error) {
	s := b.cur.Load()
	if s == nil {
		return nil, ErrNotBound
	}
	resp, err := s.call(ctx, &PDU{Header: Header{ID: QuerySM}, MessageID: messageID, Source: source,
		SourceTON: ton, SourceNPI: npi})
	if err != nil {
		return nil, err
	}
	if resp.Status != StatusOK {
		return resp, resp.Status
	}
	return resp, nil
}

// wait takes the submit's turn: after any throttle hold, and under the TPS cap. Turns are
// reserved 1/TPS apart, so waiters sleep spread out; a sleeper that wakes late could bring two
// submits closer and put one too many in a second, so each is also checked against the
// submits let go in the last second (a window of TPS send times), which a late turn does not
// slow down either.
func (b *Bind) wait(ctx context.Context) error {
	until := time.Unix(0, b.hold.Load())
	if b.cfg.TPS == 0 {
		return sleepUntil(ctx, until)
	}
	interval := time.Second / time.Duration(b.cfg.TPS)
	b.pace.Lock()
	turn := time.Now()
	for _, t := range []time.Time{b.next, until} {
		if t.After(turn) {
			turn = t
		}
	}
	b.next = turn.Add(interval)
	if b.sent == nil {
		b.sent = make([]time.Time, min(b.cfg.TPS, maxPaceWindow))
	}
	b.pace.Unlock()
	if err := sleepUntil(ctx, turn); err != nil {
		return err
	}
	for {
		b.pace.Lock()
		now := time.Now()
		oldest := b.sent[b.sentAt] // the submit len(sent) submits ago
		if now.Sub(oldest) >= time.Second {
			b.sent[b.sentAt] = now
			b.sentAt = (b.sentAt + 1) % len(b.sent)
			b.pace.Unlock()
			return nil
		}
		b.pace.Unlock()
		if err := sleepUntil(ctx, oldest.Add(time.Second)); err != nil {
			return err
		}
	}
}

// maxPaceWindow bounds the send times a bind keeps for its TPS cap; above it, the cap is kept
// by the spacing of turns alone.
const maxPaceWindow = 100_000

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close unbinds (waiting at most the response timeout for unbind_resp) and stops.
func (b *Bind) Close() {
	b.closed.Do(func() {
		close(b.stop)
		<-b.done
		if b.mo != nil {
			close(b.mo.stop)
			<-b.mo.done
		}
	})
}
