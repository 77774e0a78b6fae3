package actors

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"
	"github.com/sony/gobreaker/v2"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
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

	queue    fairQueue
	retry    []*submitReq           // throttled or temporarily failed: go before the queue
	known    map[uuid.UUID]struct{} // messages queued, being marked or submitted here
	recent   recentIDs              // messages whose submit finished lately
	inflight int                    // submitted, answer not yet handled: at most Window

	// lookedUp: messages a network said it had (after a crash or a lost answer); their receipt
	// may have been pushed while nobody listened, so they are asked about.
	lookedUp []string
	// Marking runs ahead of the window, so a mark's write overlaps the submits in flight
	// instead of holding window slots: toMark waits for the next mark, marking (markingN
	// submits) is being written, ready is marked and waits for a window slot. Together they
	// hold at most markAhead × Window.
	toMark   []*submitReq
	marking  bool
	markingN int
	ready    []*submitReq
	marks    map[uuid.UUID]int // mark → submits under it without a durable outcome
	unmark   []uuid.UUID       // marks with nothing left under them, to delete
	// unmarking: a delete is running; unmarkArmed: the timer for the next one is set.
	unmarking, unmarkArmed bool
	markRetry              time.Duration

	dry      bool      // nothing to submit while jobs wait for outcomes; the receipts shards were asked
	yield    yielding  // holding off while a bulk send is accepted
	wakeAt   time.Time // when the armed wake-up fires (zero: none)
	draining bool
	waiters  []*actor.PID

	inbox   inbox
	work    chan submitJob // to the link's submit workers; never full (at most Window in flight)
	workers sync.Once
}

// submitJob is one submit handed to a worker.
type submitJob struct {
	req *submitReq
	out Outgoing
}

const (
	// markAhead: how many windows' worth of submits may be taken and marked ahead of the
	// window. A mark's write takes a few ms under load: one window ahead keeps the window full
	// while it runs, and a crash leaves at most this many more submits to ask about.
	markAhead         = 1
	breakerProbeEvery = 100 * time.Millisecond
	unmarkEvery       = 250 * time.Millisecond
)

// errAbandoned tells the breaker a request it allowed never went out (excluded from counts);
// errLookupFailed is a network that could not say whether it took a message.
var (
	errAbandoned    = errors.New("submit abandoned")
	errLookupFailed = errors.New("asking the network about a message failed")
)

func newLinkState(e *Engine, n carriers.Network) *linkState {
	opts := e.opts.Links[n]
	st := &linkState{network: n, label: n.String(), opts: opts, carrier: e.carriers[n], pacer: newPacer(opts.TPS),
		known: map[uuid.UUID]struct{}{}, marks: map[uuid.UUID]int{}, work: make(chan submitJob, opts.Window)}
	st.looker, _ = st.carrier.(Looker)
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
		IsExcluded: func(err error) bool {
			return errors.Is(err, ErrThrottled) || errors.Is(err, context.Canceled) || errors.Is(err, errAbandoned)
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
	backlog := st.queue.len() + len(st.retry) + len(st.toMark) + st.markingN + len(st.ready)
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

type unmarkTick struct{}

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
		}
	}
	if len(l.st.lookedUp) > 0 {
		l.queryMany(l.st.lookedUp, l.e.opts.ReceiptTimeout)
		l.st.lookedUp = nil
	}
	l.pump(ctx)
}

// enqueue queues a submit, unless the message is already in hand here or was just submitted:
// a job resumed after a restart asks again for messages its predecessor had sent this way,
// and whose outcome still reports to the same job.
func (l *linkActor) enqueue(ctx actor.Context, r *submitReq) {
	st := l.st
	if _, dup := st.known[r.msg.id]; dup {
		l.e.m.net[st.network].duplicates.Inc()
		return
	}
	if st.recent.has(r.msg.id) {
		l.e.m.net[st.network].duplicates.Inc()
		var n [carriers.NetworkSlots]int
		n[st.network] = 1
		ctx.Send(r.job, &outcomesDurable{n: n}) // its outcome is recorded, or on its way
		return
	}
	st.known[r.msg.id] = struct{}{}
	st.queue.push(r)
}

// pump takes submits while every limit allows, marks them, and arms one wake-up for when a
// limit will allow more.
func (l *linkActor) pump(ctx actor.Context) {
	st := l.st
	if st.draining {
		// Taken but not yet submitted: they wait (queued) for the next start, and the marks of
		// the marked ones settle, so the next start does not ask the network about them.
		for _, req := range st.ready {
			l.settle(req.mark, 1)
			req.mark = uuid.Nil
		}
		st.retry = append(append(st.ready, st.toMark...), st.retry...)
		st.ready, st.toMark = nil, nil
		if st.inflight == 0 && !st.marking {
			for _, w := range st.waiters {
				ctx.Send(w, &drained{})
			}
			st.waiters = nil
		}
		return
	}
	now := time.Now()
	if st.yield.hold(now, l.e.bulkAccepts.Load(), l.e.opts.BulkYield) {
		l.wakeAt(ctx, now.Add(time.Millisecond))
		return
	}
	l.submitReady(ctx)
	for len(st.retry)+st.queue.len() > 0 && len(st.toMark)+st.markingN+len(st.ready) < markAhead*st.opts.Window {
		if st.breaker.State() == gobreaker.StateOpen {
			l.wakeAt(ctx, now.Add(breakerProbeEvery))
			break
		}
		if at, ok := st.pacer.ready(now); !ok {
			l.wakeAt(ctx, at)
			break
		}
		st.pacer.took(now)
		var req *submitReq
		if len(st.retry) > 0 {
			req, st.retry = st.retry[0], st.retry[1:]
		} else {
			req = st.queue.pop()
		}
		st.toMark = append(st.toMark, req)
	}
	l.mark(ctx)
}

// mark writes one mark for every submit taken since the last one, one write at a time: under
// load a mark covers many submits (group commit), idle it covers one without waiting.
func (l *linkActor) mark(ctx actor.Context) {
	st := l.st
	if st.marking || len(st.toMark) == 0 {
		return
	}
	batch := st.toMark
	st.toMark = nil
	st.marking, st.markingN = true, len(batch)
	id := persistence.NewID()
	keys := make([]persistence.MessageKey, len(batch))
	for i, r := range batch {
		keys[i] = persistence.MessageKey{AccountID: r.account, ID: r.msg.id}
	}
	self, root, m, net := ctx.Self(), l.e.root, l.e.m, st.network
	l.e.goIO(time.Minute, func(c context.Context) {
		start := time.Now()
		err := l.e.store.Mark(c, id, net, keys)
		m.batchLatency.WithLabelValues("mark").Observe(time.Since(start).Seconds())
		m.batchSize.WithLabelValues("mark").Observe(float64(len(keys)))
		st.inbox.put(root, self, &markDone{id: id, batch: batch, err: err})
	})
}

// marked readies a batch whose mark is durable for submitting. If the mark could not be
// written, nothing of the batch goes out: it waits first in line and the mark is tried again.
func (l *linkActor) marked(ctx actor.Context, d *markDone) {
	st, e := l.st, l.e
	st.marking, st.markingN = false, 0
	if d.err != nil {
		e.m.batchErrors.WithLabelValues("mark").Inc()
		st.markRetry = min(max(2*st.markRetry, 50*time.Millisecond), 5*time.Second)
		e.log.Error("mark submits; will retry", slog.String("network", st.label), slog.Any("error", d.err),
			slog.Duration("retry_in", st.markRetry))
		st.retry = append(d.batch, st.retry...)
		st.pacer.pausedUntil = time.Now().Add(st.markRetry)
		return
	}
	st.markRetry = 0
	st.marks[d.id] = len(d.batch)
	again := 0
	for _, req := range d.batch {
		req.mark = d.id
		if req.msg.unsettled {
			if _, ok := e.unsettled.LoadAndDelete(req.msg.id); ok {
				again++
			}
		}
	}
	st.ready = append(st.ready, d.batch...)
	if again > 0 {
		ctx.Send(e.recovery, &remarked{n: again})
	}
	l.flushUnmarks(ctx, false)
}

// submitReady hands marked submits to the workers while the window and the breaker allow.
func (l *linkActor) submitReady(ctx actor.Context) {
	st, e := l.st, l.e
	refused := false
	for len(st.ready) > 0 && st.inflight < st.opts.Window {
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

// settle notes that n submits under a mark need it no more; a mark with nothing left under it
// is deleted (in batches).
func (l *linkActor) settle(id uuid.UUID, n int) {
	st := l.st
	left, ok := st.marks[id]
	if !ok {
		return
	}
	if left -= n; left > 0 {
		st.marks[id] = left
		return
	}
	delete(st.marks, id)
	st.unmark = append(st.unmark, id)
}

// flushUnmarks deletes settled marks in batches, one delete at a time: at once when many
// are waiting, else when the unmark timer fires (due).
func (l *linkActor) flushUnmarks(ctx actor.Context, due bool) {
	st := l.st
	if st.unmarking || len(st.unmark) == 0 {
		return
	}
	if !due && len(st.unmark) < 256 {
		if !st.unmarkArmed {
			st.unmarkArmed = true
			l.timers.after(l.e.root, ctx.Self(), unmarkEvery, &unmarkTick{})
		}
		return
	}
	ids := st.unmark
	st.unmark = nil
	st.unmarking = true
	self, root := ctx.Self(), l.e.root
	l.e.goIO(time.Minute, func(c context.Context) {
		st.inbox.put(root, self, &unmarkDone{ids: ids, err: l.e.store.Unmark(c, ids)})
	})
}

func (l *linkActor) unmarked(ctx actor.Context, d *unmarkDone) {
	st := l.st
	st.unmarking = false
	if d.err != nil {
		// Left in place, a mark only makes recovery ask about messages already settled.
		l.e.log.Warn("delete settled submit marks; will retry", slog.String("network", st.label), slog.Any("error", d.err))
		st.unmark = append(st.unmark, d.ids...)
	}
	l.flushUnmarks(ctx, false)
}

func (l *linkActor) wakeAt(ctx actor.Context, at time.Time) {
	st := l.st
	if !st.wakeAt.IsZero() && !at.Before(st.wakeAt) {
		return
	}
	st.wakeAt = at
	l.timers.after(l.e.root, ctx.Self(), time.Until(at), &wake{})
}
