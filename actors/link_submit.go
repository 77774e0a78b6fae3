// Link submits: the workers that hand messages to a network, and what the link makes of the
// answers.

package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// submitJob is one submit handed to a worker.
type submitJob struct {
	req *submitReq
	out Outgoing
}

type (
	submitDone struct {
		req        *submitReq
		providerID string
		err        error
		took       time.Duration
		lookedUp   bool // the network was asked whether it had the message, not sent it
	}
)

// submitReady hands marked submits to the workers while the window and the breaker allow.
func (l *linkActor) submitReady(ctx actor.Context, now time.Time) {
	st, e := l.st, l.e
	refused := false
	for len(st.ready) > 0 && st.inflight < st.opts.Window {
		// The rate's slot is taken here, as the submit goes, not at its mark: a mark's time
		// varies, and slots taken at marks went out bunched after a slow one.
		if !l.paced(ctx, now) {
			break
		}
		st.pacer.took(now)
		req := st.ready[0]
		st.ready[0] = nil
		st.ready = st.ready[1:]
		done, err := st.breaker.Allow()
		if err != nil { // half-open with its probes out: wait in line, marked again next time
			refused = true
			l.again(req)
			continue
		}
		req.breakerOK = done
		e.m.net[st.network].attempts.Inc()
		st.inflight++
		st.work <- submitJob{req: req, out: l.outgoing(req)}
	}
	if len(st.ready) == 0 {
		st.ready = nil // let the drained backing array go
	}
	if refused {
		l.flushUnmarks(ctx, false)
		l.wakeAt(ctx, time.Now().Add(breakerProbeEvery))
	}
}

// paced says whether the link's rate and its network's shared schedule allow a submit now,
// taking a slot of the schedule when they do; otherwise it arms the wake-up for when they
// will (or asks for slots).
func (l *linkActor) paced(ctx actor.Context, now time.Time) bool {
	st := l.st
	if at, ok := st.pacer.ready(now); !ok {
		l.wakeAt(ctx, at)
		return false
	}
	if st.shared == nil {
		return true
	}
	at, ok := st.shared.take(now)
	switch {
	case ok:
		return true
	case !at.IsZero():
		l.wakeAt(ctx, at)
	case !st.shared.asking:
		l.askSlots(ctx, len(st.ready)+len(st.retry)+st.queue.len())
	}
	return false
}

// outgoing is a submit as the carrier sees it.
func (l *linkActor) outgoing(req *submitReq) Outgoing {
	out := Outgoing{
		AccountID: req.account, MessageID: req.msg.id, Sender: req.variant.sender, Destination: persistence.Recipient{NSN: req.msg.nsn}.E164(),
		Text: req.variant.text, Parts: req.variant.parts, Encoding: req.variant.encoding,
	}
	if req.msg.body != nil {
		seg := carriers.Segment(*req.msg.body)
		out.Text, out.Parts, out.Encoding = *req.msg.body, seg.Parts, seg.Encoding
	}
	return out
}

// startWorkers starts one submit worker per window slot. They live as long as the engine,
// so a submit costs a channel hand-off instead of a goroutine and a timer.
func (l *linkActor) startWorkers(self *actor.PID) {
	st, e := l.st, l.e
	for range st.opts.Window {
		e.io.Add(1)
		go func() {
			defer e.io.Done()
			for {
				select {
				case <-e.life.Done():
					return
				case j := <-st.work:
					st.inbox.put(e.root, self, l.submit(e.life, j))
				}
			}
		}()
	}
}

// submit hands one message to the network. A message that may have reached the network
// before a crash (unsettled) is asked about first, and so is one whose submit's answer was
// lost, when the network can say: either way it is never submitted twice knowingly.
func (l *linkActor) submit(ctx context.Context, j submitJob) *submitDone {
	st, nm := l.st, &l.e.m.net[l.st.network]
	req := j.req
	start := time.Now()
	d := &submitDone{req: req}
	if req.msg.unsettled {
		// A submit another node marked recently may still be on its way to the network: until
		// askAfter it waits (the network would not know it yet, nor the other node its outcome).
		later := func() *submitDone {
			nm.recovered.notYet.Inc()
			d.err, d.took = errAskLater, time.Since(start)
			return d
		}
		tooSoon := req.askAfter > start.UnixNano()
		if st.looker == nil {
			// A network that cannot be asked: the other node, alive (its mark is recent), records
			// the outcome of a submit it made, which the wait lets arrive.
			if tooSoon {
				return later()
			}
			if req.askAfter != 0 {
				switch queued, err := l.e.store.StillQueued(ctx, req.account, req.msg.id); {
				case err != nil:
					d.err, d.took = fmt.Errorf("%w: %w", errLookupFailed, err), time.Since(start)
					return d
				case !queued:
					nm.recovered.recorded.Inc()
					d.err, d.took = errRecorded, time.Since(start)
					return d
				}
			}
			nm.resentAfterCrash.Inc() // bounded by the windows in flight at the crash
		} else if id, err := st.looker.Lookup(ctx, req.msg.id); err == nil {
			nm.recovered.found.Inc()
			d.providerID, d.lookedUp, d.took = id, true, time.Since(start)
			return d
		} else if !errors.Is(err, ErrUnknownMessage) {
			d.err, d.took = fmt.Errorf("%w: %w", errLookupFailed, err), time.Since(start)
			return d
		} else if tooSoon {
			return later()
		} else {
			nm.recovered.absent.Inc()
		}
	}
	if l.e.lapsed() { // marked while this node still owned the account; its owner may differ now
		d.err = errLapsedSubmit
		return d
	}
	d.providerID, d.err = st.carrier.Submit(ctx, j.out)
	if errors.Is(d.err, ErrUnknownOutcome) && st.looker != nil {
		nm.lostAnswers.Inc()
		switch id, err := st.looker.Lookup(ctx, req.msg.id); {
		case err == nil:
			d.providerID, d.err, d.lookedUp = id, nil, true
		case errors.Is(err, ErrUnknownMessage): // the network never took it: submit again
			d.err = fmt.Errorf("%w: %w", ErrTemporary, d.err)
		}
	}
	d.took = time.Since(start)
	return d
}

// done sorts a submit's outcome. Accepted and permanently refused messages, and those whose
// answer never came, go to receipts, which settle their mark once the outcome is durable.
// Throttled ones wait and go again; temporary failures retry up to MaxAttempts, then fail.
func (l *linkActor) done(ctx actor.Context, d *submitDone) {
	st, m := l.st, l.e.m
	req := d.req
	st.inflight--
	if req.breakerOK != nil {
		req.breakerOK(d.err)
		req.breakerOK = nil
	}
	req.msg.unsettled = false // it is marked again before any further attempt (a failed lookup sets it back)
	nm := &m.net[st.network]
	nm.submitLatency.Observe(d.took.Seconds())
	now := time.Now()
	switch {
	case d.err == nil:
		st.pacer.ok(now)
		nm.submitted.Inc()
		l.finish(req)
		if d.lookedUp {
			st.lookedUp = append(st.lookedUp, d.providerID)
		}
		ctx.Send(l.e.receiptsFor(st.network, d.providerID), &submittedEv{
			s:   persistence.Submitted{AccountID: req.account, MessageID: req.msg.id, ProviderID: d.providerID, Network: st.network, At: now},
			job: req.job, mark: req.mark,
		})
	case errors.Is(d.err, ErrUnknownOutcome):
		// It may have gone: sent with no provider id, neither resent nor refunded; the
		// stale-sent sweep settles it.
		nm.submitted.Inc()
		l.finish(req)
		ctx.Send(l.e.receiptsForMessage(req.msg.id), &submittedEv{
			s:   persistence.Submitted{AccountID: req.account, MessageID: req.msg.id, Network: st.network, At: now},
			job: req.job, mark: req.mark,
		})
	case errors.Is(d.err, ErrLapsed):
		// Not sent: it stays queued, and marked, in the store for the account's new owner, who
		// asks the network about it before sending; this node's job stops.
		l.e.fencedWrite("submit")
		delete(st.known, req.msg.id)
		ctx.Send(req.job, &fenced{})
	case errors.Is(d.err, ErrThrottled):
		nm.throttled.Inc()
		st.pacer.throttled(now)
		l.again(req)
	case errors.Is(d.err, ErrRejected):
		l.fail(ctx, req, "REJECTD", d.err.Error(), now)
	case errors.Is(d.err, ErrUnavailable):
		nm.retries.Inc()
		l.again(req)
	case errors.Is(d.err, errAskLater):
		// Absent for now; asked again once the other node's submit can have arrived. Its mark
		// stays until then, so that a restart meanwhile asks about it too.
		req.msg.unsettled = true
		st.later = append(st.later, req)
		l.wakeAt(ctx, time.Unix(0, req.askAfter))
	case errors.Is(d.err, errRecorded):
		l.finish(req)
		l.settle(req.mark, 1)
		req.mark = uuid.Nil
		var n [carriers.NetworkSlots]int
		n[st.network] = 1
		ctx.Send(req.job, &outcomesDurable{n: n})
	case errors.Is(d.err, errLookupFailed):
		// Whether the network has it is still unknown: never failed (nor refunded) for that.
		req.msg.unsettled = true
		nm.retries.Inc()
		l.again(req)
	default:
		req.attempts++
		if req.attempts >= st.opts.MaxAttempts {
			l.fail(ctx, req, "SUBMIT_FAILED", d.err.Error(), now)
			return
		}
		nm.retries.Inc()
		l.again(req)
	}
}

// again puts a submit the network did not take back first in line; its mark is not needed
// for it any more (it is marked again before it goes).
func (l *linkActor) again(req *submitReq) {
	l.settle(req.mark, 1)
	req.mark = uuid.Nil
	l.st.retry = append(l.st.retry, req)
}

// finish forgets a message whose outcome is handed to receipts, remembering it was submitted.
func (l *linkActor) finish(req *submitReq) {
	delete(l.st.known, req.msg.id)
	l.st.recent.add(req.msg.id)
}

func (l *linkActor) fail(ctx actor.Context, req *submitReq, status, reason string, at time.Time) {
	l.finish(req)
	ctx.Send(l.e.receiptsForMessage(req.msg.id), &failedEv{
		f:       persistence.Failure{AccountID: req.account, MessageID: req.msg.id, ProviderStatus: status, Error: reason, At: at},
		network: l.st.network, job: req.job, mark: req.mark,
	})
}

// queryMany asks the network about messages whose receipts were lost (a restart), on one
// owned goroutine. Final answers go to receipts; messages still en route are asked again with
// growing pauses for up to retryFor; the stale-sent sweep covers the rest.
func (l *linkActor) queryMany(ids []string, retryFor time.Duration) {
	st, e := l.st, l.e
	e.goIO(retryFor+time.Minute, func(c context.Context) {
		pause := 250 * time.Millisecond
		deadline := time.Now().Add(retryFor)
		for len(ids) > 0 {
			var again []string
			for _, id := range ids {
				s, err := st.carrier.Query(c, id)
				switch {
				case c.Err() != nil:
					return
				case err != nil || !s.Final:
					if !errors.Is(err, ErrUnknownMessage) {
						again = append(again, id)
					}
				default:
					e.Receipt(st.network, id, s)
				}
			}
			ids = again
			if len(ids) == 0 || time.Now().Add(pause).After(deadline) {
				return
			}
			select {
			case <-c.Done():
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, 30*time.Second)
		}
	})
}
