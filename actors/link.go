package actors

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"github.com/sony/gobreaker/v2"

	"github.com/tuma-sms/tuma/carriers"
)

// linkActor owns one network's connection: it submits only when its pacing (the network's
// TPS), its window (submits in flight) and its circuit breaker allow, serving tenants in turn.
//
// Before it submits, it marks what it is about to submit (one durable row per batch, see
// persistence.Mark): after a crash, a message marked but still queued may have reached the
// network, and it is asked about instead of being sent again blindly. Submits run on worker
// goroutines and report back through the inbox. A throttle answer slows the link and puts the
// message back first in line; it never fails the message.
type linkActor struct {
	e      *Engine
	st     *linkState
	timers timers
}

// linkState survives restarts: the queue and what is in flight are the link's work, and the
// goroutines of in-flight submits report to its inbox.
type linkState struct {
	network carriers.Network
	label   string
	opts    LinkOptions
	carrier Carrier
	looker  Looker // nil when the network cannot say whether it took a message
	breaker *gobreaker.TwoStepCircuitBreaker[struct{}]
	pacer   pacer
	// shared: the network's schedule across nodes (link_shared.go); nil on a single node or
	// without a cap. sharedDown: pacing on this node's share while Redis does not answer.
	shared     *sharedPace
	sharedDown bool

	queue    fairQueue
	retry    []*submitReq             // throttled or temporarily failed: go before the queue
	later    []*submitReq             // absent while another node's submit may still arrive: asked again after askAfter
	known    map[uuid.UUID]*submitReq // messages queued, being marked or submitted here
	recent   recentIDs                // messages whose submit finished lately
	inflight int                      // submitted, answer not yet handled: at most Window

	// lookedUp: messages a network said it had (after a crash or a lost answer); their receipt
	// may have been pushed while nobody listened, so they are asked about.
	lookedUp []string
	// Marking runs ahead of the window, so a mark's write overlaps the submits in flight
	// instead of holding window slots: toMark waits for the next mark, marking (markingN
	// submits) is being written, ready is marked and waits for a window slot and, on a link
	// with a rate, its slot. Together they hold at most markLimit.
	toMark   []*submitReq
	marking  bool
	markingN int
	ready    []*submitReq
	marks    map[uuid.UUID]int // mark → submits under it without a durable outcome
	unmark   []uuid.UUID       // marks with nothing left under them, to delete
	// unmarking: a delete is running; unmarkArmed: the timer for the next one is set.
	unmarking, unmarkArmed bool
	markRetry              time.Duration
	markPausedUntil        time.Time // a mark failed: the next is not tried before this

	dry      bool      // nothing to submit while jobs wait for outcomes; the receipts shards were asked
	yield    yielding  // holding off while a bulk send is accepted
	wakeAt   time.Time // when the armed wake-up fires (zero: none)
	draining bool
	waiters  []*actor.PID

	inbox   inbox
	work    chan submitJob // to the link's submit workers; never full (at most Window in flight)
	workers sync.Once
}

const (
	// markAhead: how many windows' worth of submits may be taken and marked ahead of the
	// window. A mark's write takes a few ms under load: one window ahead keeps the window full
	// while it runs, and a crash leaves at most this many more submits to ask about.
	markAhead = 1
	// markAheadFor: on a link with a rate, how much of its sending may be marked ahead. A
	// marked submit waits for its rate slot, so this bounds how long after its mark it can
	// reach the network (TUMA_TAKEOVER_SETTLE must exceed it), and marks slower than this
	// leave the rate undershot while they run.
	markAheadFor      = 500 * time.Millisecond
	markAheadAtLeast  = 4
	breakerProbeEvery = 100 * time.Millisecond
	unmarkEvery       = 250 * time.Millisecond
)

// errAbandoned tells the breaker a request it allowed never went out (excluded from counts);
// errLookupFailed is a network that could not say whether it took a message.
var (
	errAbandoned    = errors.New("submit abandoned")
	errLookupFailed = errors.New("asking the network about a message failed")
	// errAskLater: the network does not have it yet, and another node's submit of it may
	// still arrive (submitReq.askAfter).
	errAskLater = errors.New("another node's submit may still arrive")
	// errRecorded: the other node recorded the submit's outcome meanwhile.
	errRecorded = errors.New("another node recorded the submit's outcome")
)

// To a link.
type (
	submitReq struct {
		account   uuid.UUID
		fence     int64 // the epoch of the tenant whose job sent it (persistence.SubmitKey)
		markFence int64 // the fence its mark, while written, carries (the fence may grow meanwhile: enqueue)
		msg       dispatchMsg
		variant   *variant
		job       *actor.PID
		attempts  int
		mark      uuid.UUID // the mark that covers the current submit
		breakerOK func(error)
		// askAfter (unix ns): another node's submit of it may reach the network until then;
		// found absent before, it waits (linkState.later) and is asked about again.
		askAfter int64
	}
	wake     struct{}
	queryCmd struct{ providerID string }
	// queryMany asks about many messages; final answers go to receipts. Messages still en
	// route are asked again, with growing pauses, for up to retryFor.
	queryMany struct {
		ids      []string
		retryFor time.Duration
	}
	// withdrawJob asks a link to give back a cancelled job's submits it has not taken yet.
	withdrawJob struct {
		account uuid.UUID
		job     *actor.PID
	}
)

func newLinkState(e *Engine, n carriers.Network) *linkState {
	opts := e.opts.Links[n]
	st := &linkState{network: n, label: n.String(), opts: opts, carrier: e.carriers[n], pacer: newPacer(opts.TPS),
		known: map[uuid.UUID]*submitReq{}, marks: map[uuid.UUID]int{}, work: make(chan submitJob, opts.Window)}
	st.looker, _ = st.carrier.(Looker)
	if e.slots != nil && e.cl != nil && opts.TPS > 0 && !e.opts.Faults.localTPS() {
		st.shared = newSharedPace(st.label, opts.TPS)
	}
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
		// Nor do submits not made: abandoned, lapsed, or waiting on another node's.
		IsExcluded: func(err error) bool {
			return errors.Is(err, ErrThrottled) || errors.Is(err, context.Canceled) || errors.Is(err, errAbandoned) ||
				errors.Is(err, ErrLapsed) || errors.Is(err, errAskLater) || errors.Is(err, errRecorded)
		},
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
		st.wakeAt, st.unmarkArmed = time.Time{}, false // timers of an earlier incarnation are gone
		l.takeInbox(ctx)
		l.pump(ctx)
		l.flushUnmarks(ctx, false)
	case *actor.Restarting, *actor.Stopping:
		l.timers.stop()
	case *inboxPoke:
		l.takeInbox(ctx)
	case *submitReq:
		l.enqueue(ctx, msg)
		l.pump(ctx)
	case *marksSettled:
		for id, n := range msg.n {
			l.settle(id, n)
		}
		l.flushUnmarks(ctx, false)
	case *wake:
		st.wakeAt = time.Time{}
		l.pump(ctx)
	case *unmarkTick:
		st.unmarkArmed = false
		l.flushUnmarks(ctx, true)
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
	case *withdrawJob:
		l.withdraw(ctx, msg)
	case *drain:
		st.draining = true
		st.waiters = append(st.waiters, ctx.Sender())
		l.pump(ctx)
	case *panicNow:
		panic("link: panic requested")
	}
	nm := &l.e.m.net[st.network]
	backlog := st.queue.len() + len(st.retry) + len(st.later) + len(st.toMark) + st.markingN + len(st.ready)
	nm.linkQueue.Set(float64(backlog))
	// Run dry while jobs wait for outcomes to send more: those outcomes are this link's next
	// work, so they should not sit in a receipts buffer waiting for it to fill (each round of
	// a job's window waited ReceiptsInterval, holding one 10,000-recipient send near 10k
	// msgs/s). With work queued here, the usual batching costs no speed and saves writes.
	dry := backlog == 0 && l.e.jobsBlocked[st.network].Load() > 0
	if dry && !st.dry {
		for _, r := range l.e.receipts {
			ctx.Send(r, &outcomesWanted{})
		}
	}
	st.dry = dry
	nm.windowInUse.Set(float64(st.inflight))
}

// takeInbox handles what the link's I/O reported.
func (l *linkActor) takeInbox(ctx actor.Context) {
	for _, m := range l.st.inbox.take() {
		switch m := m.(type) {
		case *markDone:
			l.marked(ctx, m)
		case *submitDone:
			l.done(ctx, m)
		case *unmarkDone:
			l.unmarked(ctx, m)
		case *slotsGranted:
			l.granted(m)
		}
	}
	if len(l.st.lookedUp) > 0 {
		l.queryMany(l.st.lookedUp, l.e.opts.ReceiptTimeout)
		l.st.lookedUp = nil
	}
	l.pump(ctx)
}

// enqueue queues a submit, unless the message is already in hand here or was just submitted:
// a job resumed after a restart asks again for messages its predecessor had sent this way.
// The submit in hand then reports to the job that asked last: a tenant incarnation replacing
// one of this node's (the account came back, or another node's took it and let it go) runs
// its jobs as actors of its own, and takes over the submits the old one left here under its
// own fence, which a mark then accepts (under the old one, nothing of them would ever go).
func (l *linkActor) enqueue(ctx actor.Context, r *submitReq) {
	st := l.st
	if held, dup := st.known[r.msg.id]; dup {
		l.e.m.net[st.network].duplicates.Inc()
		if r.fence >= held.fence { // never back to an incarnation the submit has moved on from
			held.job, held.fence = r.job, r.fence
		}
		return
	}
	if st.recent.has(r.msg.id) {
		l.e.m.net[st.network].duplicates.Inc()
		var n [carriers.NetworkSlots]int
		n[st.network] = 1
		ctx.Send(r.job, &outcomesDurable{n: n}) // its outcome is recorded, or on its way
		return
	}
	st.known[r.msg.id] = r
	st.queue.push(r)
}

// withdraw gives a cancelled job back its submits this link has not taken (never marked, so
// certainly not sent), except those that may have reached the network before a crash: they
// stay, to be asked about. The job counts them as settled; they stay queued in the store for
// its cancellation to fail and refund.
func (l *linkActor) withdraw(ctx actor.Context, w *withdrawJob) {
	st := l.st
	out := st.queue.withdraw(w.account, func(r *submitReq) bool { return r.job.Equal(w.job) && !r.msg.unsettled })
	if len(out) == 0 {
		return
	}
	for _, r := range out {
		delete(st.known, r.msg.id)
	}
	var n [carriers.NetworkSlots]int
	n[st.network] = len(out)
	ctx.Send(w.job, &outcomesDurable{n: n})
}

// pump takes submits while every limit allows, marks them, and arms one wake-up for when a
// limit will allow more.
func (l *linkActor) pump(ctx actor.Context) {
	st := l.st
	if st.draining {
		// Taken but not yet submitted: they wait (queued) for the next start, and the marks of
		// the marked ones settle, so the next start does not ask the network about them. Those
		// waiting to be asked about again (later) keep theirs: the next start asks.
		for _, req := range st.ready {
			l.settle(req.mark, 1)
			req.mark = uuid.Nil
		}
		st.retry = append(append(append(st.ready, st.toMark...), st.retry...), st.later...)
		st.ready, st.toMark, st.later = nil, nil, nil
		if st.inflight == 0 && !st.marking {
			for _, w := range st.waiters {
				ctx.Send(w, &drained{})
			}
			st.waiters = nil
		}
		return
	}
	if l.e.lapsed() { // nothing more is taken: the account's new owner sends what is queued
		return
	}
	now := time.Now()
	if len(st.later) > 0 {
		l.askAgain(ctx, now)
	}
	if st.yield.hold(now, l.e.bulkAccepts.Load(), l.e.opts.BulkYield) {
		l.wakeAt(ctx, now.Add(time.Millisecond))
		return
	}
	l.submitReady(ctx, now)
	if now.Before(st.markPausedUntil) {
		l.wakeAt(ctx, st.markPausedUntil)
		return
	}
	for limit := l.markLimit(); len(st.retry)+st.queue.len() > 0 && len(st.toMark)+st.markingN+len(st.ready) < limit; {
		if st.breaker.State() == gobreaker.StateOpen {
			l.wakeAt(ctx, now.Add(breakerProbeEvery))
			break
		}
		var req *submitReq
		if len(st.retry) > 0 {
			req, st.retry = st.retry[0], st.retry[1:]
		} else {
			req = st.queue.pop()
		}
		if !req.msg.unsettled && req.askAfter == 0 && l.e.suppressedSince(req.account, req.msg.nsn, req.msg.screened) {
			// Its number was suppressed while it waited here: never marked, so certainly not
			// sent; its job looks it up (job_screen.go).
			delete(st.known, req.msg.id)
			ctx.Send(req.job, &suspectMsg{msg: req.msg})
			continue
		}
		st.toMark = append(st.toMark, req)
	}
	l.mark(ctx)
}

// markLimit is how many submits may be taken ahead of the window: a window's worth, or on a
// link with a rate, markAheadFor of its sending (its slots are taken as they go, so a slow
// mark never releases a burst over the rate).
func (l *linkActor) markLimit() int {
	limit := markAhead * l.st.opts.Window
	if rate := l.st.pacer.rate(); rate > 0 {
		limit = min(limit, max(markAheadAtLeast, int(math.Ceil(rate*markAheadFor.Seconds()))))
	}
	return limit
}

// askAgain puts the submits whose askAfter has come back in line (to be marked again), and
// wakes at the next.
func (l *linkActor) askAgain(ctx actor.Context, now time.Time) {
	st := l.st
	var next int64
	keep := st.later[:0]
	for _, req := range st.later {
		switch {
		case req.askAfter <= now.UnixNano():
			l.settle(req.mark, 1)
			req.mark = uuid.Nil
			st.retry = append(st.retry, req)
		default:
			keep = append(keep, req)
			if next == 0 || req.askAfter < next {
				next = req.askAfter
			}
		}
	}
	clear(st.later[len(keep):])
	st.later = keep
	if next != 0 {
		l.wakeAt(ctx, time.Unix(0, next))
	}
}

func (l *linkActor) wakeAt(ctx actor.Context, at time.Time) {
	st := l.st
	if !st.wakeAt.IsZero() && !at.Before(st.wakeAt) {
		return
	}
	st.wakeAt = at
	l.timers.after(l.e.root, ctx.Self(), time.Until(at), &wake{})
}
