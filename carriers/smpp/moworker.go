// The bind's side of mobile-originated messages: the session's reader hands each MO
// deliver_sm to the bind's own worker, which reassembles it, gives whole messages to the
// handler (database work, so never on the reader) and only then answers deliver_sm_resp.

package smpp

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MOHandler takes a mobile-originated message. It returns once the message is kept: nil is
// answered ESME_ROK; an error ESME_RX_T_APPN, so the SMSC delivers it again later (the
// database may be down), unless it wraps ErrMORefused.
type MOHandler func(ctx context.Context, m MO) error

// ErrMORefused is a handler's answer for a message it can never take (say, from an address
// no numbering plan reads): answered ESME_RX_P_APPN, so the SMSC stops offering it.
var ErrMORefused = errors.New("smpp: mobile-originated message refused")

// moQueue bounds the MO deliver_sm a bind holds for its worker. The SMSC's window bounds them
// already; past the queue a deliver_sm is answered ESME_RX_T_APPN at once rather than block
// the reader, which also reads the submit_sm_resp the sends wait for.
const moQueue = 256

type moJob struct {
	s *session
	p *PDU
}

// moWorker is a bind's one goroutine for MO: started by NewBind, stopped by Close.
type moWorker struct {
	b      *Bind
	handle MOHandler
	r      *Reassembler
	jobs   chan moJob
	stop   chan struct{}
	done   chan struct{}
}

func newMOWorker(b *Bind, h MOHandler, r *Reassembler) *moWorker {
	if r == nil {
		r = NewReassembler(0, 0)
	}
	return &moWorker{b: b, handle: h, r: r, jobs: make(chan moJob, moQueue), stop: make(chan struct{}),
		done: make(chan struct{})}
}

// enqueue is called by the reader: it never blocks.
func (w *moWorker) enqueue(s *session, p *PDU) {
	select {
	case w.jobs <- moJob{s: s, p: p}:
	default:
		w.b.log.Warn("smpp MO queue full; the SMSC is asked to deliver again later", "from", p.Source)
		_ = s.w.send(&PDU{Header: Header{ID: DeliverSMResp, Status: StatusXTAppn, Seq: p.Seq}})
	}
}

func (w *moWorker) run() {
	defer close(w.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tick := time.NewTicker(min(max(w.r.wait/4, 10*time.Millisecond), time.Second))
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return // what is queued is unanswered: the SMSC delivers it again on the next bind
		case j := <-w.jobs:
			st := w.take(ctx, j.p)
			_ = j.s.w.send(&PDU{Header: Header{ID: DeliverSMResp, Status: st, Seq: j.p.Seq}})
			if st == StatusXTAppn {
				w.flush(ctx, time.Now()) // the bound may have pushed a message out
			}
		case now := <-tick.C:
			w.flush(ctx, now)
		}
	}
}

// take reassembles one deliver_sm and hands on the message it completes; the status answers
// the deliver_sm. A part held for the rest of its message is answered at once: SMSCs time out
// a deliver_sm_resp in seconds, while parts may come minutes apart.
func (w *moWorker) take(ctx context.Context, p *PDU) Status {
	a, err := w.r.Add(p, time.Now())
	switch {
	case errors.Is(err, ErrReassemblyFull):
		return StatusXTAppn
	case err != nil:
		w.b.log.Error("smpp MO not read", "err", err)
		return StatusXTAppn
	case a == nil:
		return StatusOK
	}
	st := w.deliver(ctx, a)
	if st == StatusXTAppn {
		w.r.Undo(a)
	}
	return st
}

// flush hands on the messages whose parts stopped coming, with what they have.
func (w *moWorker) flush(ctx context.Context, now time.Time) {
	for _, a := range w.r.Due(now) {
		if w.deliver(ctx, a) == StatusXTAppn {
			w.r.Requeue(a) // tried again at the next tick
		}
	}
}

// deliver calls the handler within the bind's response timeout (the SMSC's own timer for
// deliver_sm_resp is about as long); a panic in it is a temporary failure.
func (w *moWorker) deliver(ctx context.Context, a *Assembly) (st Status) {
	ctx, cancel := context.WithTimeout(ctx, w.b.cfg.ResponseTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			w.b.log.Error("smpp MO handler panicked", "panic", r)
			st = StatusXTAppn
		}
	}()
	err := w.handle(ctx, a.MO)
	switch {
	case err == nil:
		w.b.m.mo.Inc()
		return StatusOK
	case errors.Is(err, ErrMORefused):
		w.b.log.Warn("smpp MO refused", "from", a.MO.Source, "to", a.MO.Dest, "err", err)
		return StatusXPAppn
	}
	w.b.log.Warn("smpp MO not taken; the SMSC is asked to deliver it again later", "from", a.MO.Source,
		"err", fmt.Errorf("mo handler: %w", err))
	return StatusXTAppn
}
