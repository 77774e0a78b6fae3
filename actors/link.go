package actors

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/sony/gobreaker/v2"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// linkActor owns one network's connection: it submits only when its token bucket (the
// network's TPS), its window (submits in flight) and its circuit breaker allow. Submits run
// on goroutines and report back as messages. A throttle answer pauses the link and puts the
// message back first in line; it never fails the message.
type linkActor struct {
	e  *Engine
	st *linkState
}

// linkState survives a restart: the queue and what is in flight are the link's work, and the
// goroutines of in-flight submits still report to the same PID.
type linkState struct {
	network carriers.Network
	label   string
	opts    LinkOptions
	carrier Carrier
	breaker *gobreaker.TwoStepCircuitBreaker[struct{}]

	retry    []*submitReq // throttled or temporarily failed: go before the queue
	queue    []*submitReq
	inflight int

	next        time.Time   // when the rate allows the next submit (GCRA's theoretical arrival time)
	sentAt      []time.Time // ring of the latest submit times, for the one-second window (capped links)
	sentPos     int
	pausedUntil time.Time
	wakeAt      time.Time // when the armed timer fires (zero: none)
	pace        pace      // the rate the network tolerates, learnt from its throttles
	accepted    rateMeter // recent accepted submits, to start the pace from

	draining bool
	waiters  []*actor.PID

	work    chan submitJob // to the link's submit workers; never full (at most Window in flight)
	workers sync.Once
}

// submitJob is one submit handed to a worker.
type submitJob struct {
	req  *submitReq
	out  Outgoing
	done func(error)
}

const (
	throttlePause     = 20 * time.Millisecond
	breakerProbeEvery = 100 * time.Millisecond
)

func newLinkState(e *Engine, n carriers.Network) *linkState {
	opts := e.opts.Links[n]
	st := &linkState{network: n, label: n.String(), opts: opts, carrier: e.carriers[n], next: time.Now(),
		sentAt: make([]time.Time, min(int(math.Ceil(opts.TPS)), maxWindowRing)),
		work:   make(chan submitJob, opts.Window)}
	gauge := e.m.breakerState.WithLabelValues(st.label)
	st.breaker = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         st.label,
		MaxRequests:  3,
		Interval:     10 * time.Second,
		BucketPeriod: time.Second,
		Timeout:      opts.BreakerTimeout,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			return c.Requests >= opts.BreakerMinReqs && c.TotalFailures*2 >= c.Requests
		},
		// A rejected message says nothing about the network's health; a throttle is the network
		// working as designed.
		IsSuccessful: func(err error) bool { return err == nil || errors.Is(err, ErrRejected) },
		IsExcluded:   func(err error) bool { return errors.Is(err, ErrThrottled) || errors.Is(err, context.Canceled) },
		// Runs under the breaker's lock: only touch the gauge and log.
		OnStateChange: func(name string, from, to gobreaker.State) {
			gauge.Set(breakerGauge(to))
			e.log.Warn("carrier link breaker", slog.String("network", name), slog.String("from", from.String()), slog.String("to", to.String()))
		},
	})
	return st
}

func breakerGauge(s gobreaker.State) float64 {
	switch s {
	case gobreaker.StateHalfOpen:
		return 1
	case gobreaker.StateOpen:
		return 2
	}
	return 0
}

func (l *linkActor) Receive(ctx actor.Context) {
	st := l.st
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		st.workers.Do(func() { l.startWorkers(ctx.Self()) })
		st.wakeAt = time.Time{} // any timer armed before a restart may be lost; re-arm
		l.pump(ctx)
	case *submitReq:
		st.queue = append(st.queue, msg)
		l.pump(ctx)
	case *submitDone:
		st.inflight--
		l.done(ctx, msg)
		l.pump(ctx)
	case *wake:
		st.wakeAt = time.Time{}
		l.pump(ctx)
	case *queryCmd:
		reply, root := ctx.Sender(), l.e.root
		l.e.goIO(10*time.Second, func(c context.Context) {
			s, err := st.carrier.Query(c, msg.providerID)
			if err != nil {
				root.Send(reply, err)
				return
			}
			root.Send(reply, &s)
		})
	case *queryMany:
		l.queryMany(msg.ids, msg.retryFor)
	case *drain:
		st.draining = true
		st.waiters = append(st.waiters, ctx.Sender())
		l.pump(ctx)
	case *panicNow:
		panic("link: panic requested")
	}
	nm := &l.e.m.net[st.network]
	nm.linkQueue.Set(float64(len(st.queue) + len(st.retry)))
	nm.windowInUse.Set(float64(st.inflight))
}

// pump starts submits while every limit allows, else arms one timer for when one will.
func (l *linkActor) pump(ctx actor.Context) {
	st := l.st
	if st.draining {
		if st.inflight == 0 {
			for _, w := range st.waiters {
				ctx.Send(w, &drained{})
			}
			st.waiters = nil
		}
		return
	}
	now := time.Now()
	for len(st.retry)+len(st.queue) > 0 && st.inflight < st.opts.Window {
		if now.Before(st.pausedUntil) {
			l.wakeAt(ctx, st.pausedUntil)
			return
		}
		tps := st.rate()
		if tps > 0 {
			if now.Before(st.next) {
				l.wakeAt(ctx, st.next)
				return
			}
			if oldest, full := st.windowFull(now, tps); full {
				l.wakeAt(ctx, oldest.Add(time.Second))
				return
			}
		}
		done, err := st.breaker.Allow()
		if err != nil { // open, or half-open with its probes out
			l.wakeAt(ctx, now.Add(breakerProbeEvery))
			return
		}
		if tps > 0 {
			// The schedule keeps its own time, so a late wake-up (a timer, a busy CPU) is made
			// up and the average holds at the rate; the one-second window bounds the catching
			// up, so no second ever carries more than the rate. After an idle spell at most
			// rateCatchUp's worth goes at once.
			st.next = later(st.next, now.Add(-rateCatchUp)).Add(time.Duration(float64(time.Second) / tps))
			st.record(now)
		}
		var req *submitReq
		if len(st.retry) > 0 {
			req, st.retry = st.retry[0], st.retry[1:]
		} else {
			req = st.queue[0]
			st.queue[0] = nil
			st.queue = st.queue[1:]
		}
		st.inflight++
		l.e.m.net[st.network].attempts.Inc()
		l.submit(req, done)
	}
}

// windowFull reports whether the last second already holds rate submits, and when the
// oldest of them was.
func (st *linkState) windowFull(now time.Time, tps float64) (time.Time, bool) {
	k := int(math.Ceil(tps))
	if k > len(st.sentAt) {
		return time.Time{}, false // a rate above the configured cap: the pace, not ours
	}
	oldest := st.sentAt[(st.sentPos-k+len(st.sentAt))%len(st.sentAt)]
	return oldest, !oldest.IsZero() && now.Sub(oldest) < time.Second
}

// record notes a submit in the one-second window.
func (st *linkState) record(at time.Time) {
	if len(st.sentAt) == 0 {
		return
	}
	st.sentAt[st.sentPos] = at
	st.sentPos = (st.sentPos + 1) % len(st.sentAt)
}

// rateCatchUp is the most time a link's schedule makes up after its wake-ups ran late.
const rateCatchUp = 250 * time.Millisecond

// maxWindowRing bounds the memory of the one-second window (a rate cap above it is paced,
// and trusted not to burst).
const maxWindowRing = 100_000

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// rate is the link's submit rate now: its configured cap, lowered to the pace the network has
// shown it tolerates (0: no limit).
func (st *linkState) rate() float64 {
	switch {
	case st.pace.rate == 0:
		return st.opts.TPS
	case st.opts.TPS == 0:
		return st.pace.rate
	}
	return min(st.opts.TPS, st.pace.rate)
}

// pace adapts a link's rate to a network's throttling, additive-increase/multiplicative-
// decrease style: a throttle cuts the rate (once per epoch, however many submits were
// throttled at once); quiet time raises it again until it no longer binds.
type pace struct {
	rate      float64 // submits/s; 0 = unlimited
	lastCut   time.Time
	lastRaise time.Time
}

const (
	paceEpoch = 100 * time.Millisecond
	paceCut   = 0.7
	paceRaise = 1.05
)

// throttled lowers the pace; recent is the accepted rate just before the throttle.
func (p *pace) throttled(now time.Time, recent float64) bool {
	if now.Sub(p.lastCut) < paceEpoch {
		return false
	}
	p.lastCut = now
	if p.rate == 0 {
		p.rate = max(recent, 1)
	} else {
		p.rate = max(p.rate*paceCut, 1)
	}
	return true
}

// ok raises the pace after a quiet spell; ceiling is the rate beyond which it stops mattering.
func (p *pace) ok(now time.Time, ceiling float64) {
	if p.rate == 0 || now.Sub(p.lastCut) < 5*paceEpoch || now.Sub(p.lastRaise) < paceEpoch {
		return
	}
	p.lastRaise = now
	p.rate *= paceRaise
	if ceiling > 0 && p.rate >= ceiling {
		p.rate = 0
	}
}

// rateMeter counts events over the last second in ten 100 ms buckets.
type rateMeter struct {
	buckets [10]int
	at      [10]int64 // which 100 ms slot each bucket holds
}

func (r *rateMeter) add(now time.Time) {
	slot := now.UnixMilli() / 100
	i := slot % 10
	if r.at[i] != slot {
		r.at[i], r.buckets[i] = slot, 0
	}
	r.buckets[i]++
}

func (r *rateMeter) perSecond(now time.Time) float64 {
	slot := now.UnixMilli() / 100
	n := 0
	for i := range r.buckets {
		if slot-r.at[i] < 10 {
			n += r.buckets[i]
		}
	}
	return float64(n)
}

func (l *linkActor) wakeAt(ctx actor.Context, at time.Time) {
	st := l.st
	if !st.wakeAt.IsZero() && !at.Before(st.wakeAt) {
		return
	}
	st.wakeAt = at
	self, root := ctx.Self(), l.e.root
	time.AfterFunc(time.Until(at), func() { root.Send(self, &wake{}) })
}

func (l *linkActor) submit(req *submitReq, done func(error)) {
	out := Outgoing{
		MessageID: req.msg.id, Sender: req.variant.sender, Destination: persistence.Recipient{NSN: req.msg.nsn}.E164(),
		Text: req.variant.text, Parts: req.variant.parts, Encoding: req.variant.encoding,
	}
	if req.msg.body != nil {
		seg := carriers.Segment(*req.msg.body)
		out.Text, out.Parts, out.Encoding = *req.msg.body, seg.Parts, seg.Encoding
	}
	l.st.work <- submitJob{req: req, out: out, done: done}
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
					start := time.Now()
					id, err := st.carrier.Submit(e.life, j.out)
					e.root.Send(self, &submitDone{req: j.req, providerID: id, err: err, done: j.done, took: time.Since(start)})
				}
			}
		}()
	}
}

// done sorts a submit's outcome: accepted and permanently rejected messages go to receipts;
// throttled ones wait and go again; temporary failures retry up to MaxAttempts.
func (l *linkActor) done(ctx actor.Context, d *submitDone) {
	st, m := l.st, l.e.m
	req := d.req
	d.done(d.err)
	nm := &m.net[st.network]
	nm.submitLatency.Observe(d.took.Seconds())
	now := time.Now()
	switch {
	case d.err == nil:
		st.accepted.add(now)
		ceiling := st.opts.TPS
		if ceiling == 0 {
			ceiling = 100_000 // beyond this the pace no longer matters
		}
		st.pace.ok(now, ceiling)
		nm.submitted.Inc()
		ctx.Send(l.e.receiptsFor(st.network, d.providerID), &submittedEv{
			s:   persistence.Submitted{AccountID: req.account, MessageID: req.msg.id, ProviderID: d.providerID, Network: st.network, At: now},
			job: req.job,
		})
	case errors.Is(d.err, ErrThrottled):
		nm.throttled.Inc()
		if st.pace.throttled(now, st.accepted.perSecond(now)) {
			st.next = now // no catching up at the old pace
			st.pausedUntil = now.Add(throttlePause)
		}
		st.retry = append(st.retry, req)
	case errors.Is(d.err, ErrRejected):
		l.fail(ctx, req, "REJECTD", d.err.Error(), now)
	default:
		req.attempts++
		if req.attempts >= st.opts.MaxAttempts {
			l.fail(ctx, req, "SUBMIT_FAILED", d.err.Error(), now)
			return
		}
		nm.retries.Inc()
		st.retry = append(st.retry, req)
	}
}

func (l *linkActor) fail(ctx actor.Context, req *submitReq, status, reason string, at time.Time) {
	ctx.Send(l.e.receiptsForMessage(req.msg.id), &failedEv{
		f:       persistence.Failure{AccountID: req.account, MessageID: req.msg.id, ProviderStatus: status, Error: reason, At: at},
		network: l.st.network, job: req.job,
	})
}

// queryMany asks the network about messages whose receipts were lost (a restart) or never
// came, on one owned goroutine. Final answers go to receipts; messages still en route are
// asked again with growing pauses for up to retryFor; the reconciler covers the rest.
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
