package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// receiptsActor turns per-message events into batched transactions: submissions, failures
// and receipts, refunds, and the counter deltas they imply (to the progress log). One flush
// runs at a time, so status writes are ordered; events arriving meanwhile make the next flush
// bigger.
type receiptsActor struct {
	e      *Engine
	st     *receiptsState
	timers timers
}

// receiptsState survives a restart: the events it holds are not yet durable anywhere else.
type receiptsState struct {
	buf        *receiptBatch
	flushing   bool
	armed      bool
	retryDelay time.Duration
	holdUntil  time.Time             // after a failed write, no flush before this
	late       map[lateKey]time.Time // receipts that matched nothing yet, by first sight
	draining   []*actor.PID
	queued     int // events buffered, as last added to the queue-depth gauge
	// eager: a job waits for its outcomes, so the next submit outcomes are written without
	// waiting for the buffer to fill; the flush that takes them ends it.
	eager bool

	// sent remembers which message each provider id of this shard belongs to (sentIDs).
	sent *sentIDs

	inbox inbox // flush results, kept across a respawn
	// spare is the last written batch, emptied: the buffer's arrays once a flush takes all.
	spare *receiptBatch
}

func newReceiptsState() *receiptsState {
	return &receiptsState{buf: &receiptBatch{}, late: map[lateKey]time.Time{}}
}

// To receipts.
type (
	submittedEv struct {
		s    persistence.Submitted
		job  *actor.PID
		mark uuid.UUID
	}
	failedEv struct {
		f       persistence.Failure
		network carriers.Network
		job     *actor.PID // nil when no job is waiting (the sweep's deadline)
		mark    uuid.UUID
	}
	receiptEv struct{ r persistence.Receipt }
	syncCmd   struct{ receipt persistence.Receipt }
	// outcomesWanted: a link has run dry while jobs wait for outcomes to send more; the
	// receipts shards write submit outcomes without waiting for a flush to fill.
	outcomesWanted struct{}
	flushDone      struct {
		res   persistence.FlushResult
		err   error
		batch *receiptBatch
		took  time.Duration
	}
	flushTimer struct{}
)

type lateKey struct {
	providerID string
	network    carriers.Network
}

type msgKey struct{ account, id uuid.UUID }

// remember notes a submission's provider id (sentIDs.remember).
func (st *receiptsState) remember(s persistence.Submitted) {
	if st.sent == nil {
		st.sent = newSentIDs(sentMemory)
	}
	st.sent.remember(s)
}

// keyed fills in the message a receipt is for, when this shard saw its submission.
func (st *receiptsState) keyed(r persistence.Receipt) persistence.Receipt {
	if st.sent == nil {
		return r
	}
	if m, ok := st.sent.take(lateKey{r.ProviderID, r.Network}); ok {
		r.AccountID, r.MessageID = m.account, m.id
	}
	return r
}

// lateReceiptGrace is how long a receipt that matches no sent message is retried: it may
// have overtaken its own submission's write.
const lateReceiptGrace = 30 * time.Second

func (r *receiptsActor) Receive(ctx actor.Context) {
	st := r.st
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		// A flush still running reports to the inbox; timers of an earlier incarnation are gone.
		st.armed = false
		r.takeInbox(ctx)
		r.flush(ctx)
	case *actor.Restarting, *actor.Stopping:
		r.timers.stop()
	case *inboxPoke:
		r.takeInbox(ctx)
	case *submittedEv:
		st.remember(msg.s)
		st.buf.Submitted = append(st.buf.Submitted, msg.s)
		st.buf.subJobs = append(st.buf.subJobs, msg.job)
		st.buf.subMarks = append(st.buf.subMarks, msg.mark)
		r.maybeFlush(ctx)
	case *failedEv:
		st.buf.Failed = append(st.buf.Failed, msg.f)
		st.buf.failJobs = append(st.buf.failJobs, msg.job)
		st.buf.failMarks = append(st.buf.failMarks, msg.mark)
		st.buf.failNets = append(st.buf.failNets, msg.network)
		r.maybeFlush(ctx)
	case *receiptEv:
		st.buf.Receipts = append(st.buf.Receipts, st.keyed(msg.r))
		r.maybeFlush(ctx)
	case *syncCmd:
		st.buf.Receipts = append(st.buf.Receipts, st.keyed(msg.receipt))
		st.buf.syncs = append(st.buf.syncs, ctx.Sender())
		r.flush(ctx)
	case *flushTimer:
		st.armed = false
		r.flush(ctx)
	case *outcomesWanted:
		st.eager = true
		if st.buf.outcomes() > 0 {
			r.flush(ctx)
		}
	case *drain:
		st.draining = append(st.draining, ctx.Sender())
		r.flush(ctx)
	case *panicNow:
		panic("receipts: panic requested")
	}
	if size := st.buf.size(); size != st.queued { // the gauge sums the shards
		r.e.m.receiptsQueue.Add(float64(size - st.queued))
		st.queued = size
	}
	if len(st.draining) > 0 && !st.flushing && st.buf.size() == 0 {
		for _, p := range st.draining {
			ctx.Send(p, &drained{})
		}
		st.draining = nil
	}
}

func (r *receiptsActor) takeInbox(ctx actor.Context) {
	for _, m := range r.st.inbox.take() {
		if d, ok := m.(*flushDone); ok {
			r.st.flushing = false
			r.flushed(ctx, d)
		}
	}
	r.flush(ctx)
}

func (r *receiptsActor) maybeFlush(ctx actor.Context) {
	st := r.st
	if st.buf.size() >= r.e.opts.ReceiptsBatch || (st.eager && st.buf.outcomes() > 0) {
		r.flush(ctx)
		return
	}
	if !st.armed && !st.flushing {
		st.armed = true
		r.timers.after(r.e.root, ctx.Self(), r.e.opts.ReceiptsInterval, &flushTimer{})
	}
}

func (r *receiptsActor) flush(ctx actor.Context) {
	st := r.st
	if st.flushing || st.buf.size() == 0 || time.Now().Before(st.holdUntil) {
		return
	}
	batch := st.buf.take(5 * r.e.opts.ReceiptsBatch)
	if st.buf.size() == 0 && st.spare != nil {
		st.buf, st.spare = st.spare, nil
	}
	st.flushing = true
	if batch.outcomes() > 0 {
		st.eager = false
	}
	self, root, m := ctx.Self(), r.e.root, r.e.m
	r.e.goIO(time.Minute, func(c context.Context) {
		start := time.Now()
		res, err := r.e.store.FlushReceipts(c, batch.ReceiptBatch)
		took := time.Since(start)
		m.batchLatency.WithLabelValues("receipts").Observe(took.Seconds())
		m.batchSize.WithLabelValues("receipts").Observe(float64(batch.size()))
		st.inbox.put(root, self, &flushDone{res: res, err: err, batch: batch, took: took})
	})
}

// flushed tells everyone what became durable, or puts the batch back to try again.
func (r *receiptsActor) flushed(ctx actor.Context, d *flushDone) {
	st, e, m := r.st, r.e, r.e.m
	if d.err != nil {
		m.batchErrors.WithLabelValues("receipts").Inc()
		st.retryDelay = min(max(2*st.retryDelay, 50*time.Millisecond), 5*time.Second)
		e.log.Error("write receipts; will retry", slog.Any("error", d.err), slog.Int("events", d.batch.size()),
			slog.Duration("retry_in", st.retryDelay))
		st.buf.prepend(d.batch)
		st.holdUntil = time.Now().Add(st.retryDelay)
		st.armed = true
		r.timers.after(e.root, ctx.Self(), st.retryDelay, &flushTimer{})
		return
	}
	st.retryDelay = 0
	b, res := d.batch, d.res

	// Credit back the jobs whose messages now have durable submit outcomes.
	credits := map[*actor.PID]*[carriers.NetworkSlots]int{}
	credit := func(job *actor.PID, n carriers.Network) {
		if job == nil {
			return
		}
		c := credits[job]
		if c == nil {
			c = new([carriers.NetworkSlots]int)
			credits[job] = c
		}
		c[n]++
	}
	for i, s := range b.Submitted {
		credit(b.subJobs[i], s.Network)
	}
	for i := range b.Failed {
		credit(b.failJobs[i], b.failNets[i])
	}
	for job, c := range credits {
		ctx.Send(job, &outcomesDurable{n: *c})
	}
	r.settleMarks(ctx, b)
	for _, w := range res.Refunds {
		e.WalletChanged(w)
	}
	var refunded int64
	for _, j := range res.Jobs {
		refunded += j.RefundedCents
	}
	m.refunded.Add(float64(refunded))
	for _, id := range res.Reused {
		m.net[id.Network].reused.Inc()
		e.log.Warn("the carrier gave a message id it had given another message; both are kept",
			slog.String("provider_id", id.ProviderID), slog.String("network", id.Network.String()))
	}
	for _, f := range res.Final {
		nm := &m.net[f.Network]
		if f.Delivered {
			nm.delivered.Inc()
			nm.deliveredE2E.Observe(f.DoneAt.Sub(f.CreatedAt).Seconds())
		} else {
			nm.failed(f.Stage).Inc()
			nm.failedE2E.Observe(f.DoneAt.Sub(f.CreatedAt).Seconds())
		}
	}
	// Receipts that overtook their submission's write get another chance, for a while. While
	// the engine drains, the links have stopped and every submission outcome of this shard is
	// in its buffer: once none is left to write, a receipt still unmatched never will be (the
	// carrier's id for a submission whose answer was lost with its connection), and waiting
	// out the grace would only hold up the stop.
	now := time.Now()
	settled := len(st.draining) > 0 && st.buf.outcomes() == 0
	for _, rc := range res.LateReceipts {
		k := lateKey{rc.ProviderID, rc.Network}
		first, seen := st.late[k]
		if !seen {
			st.late[k], first = now, now
		}
		if now.Sub(first) < lateReceiptGrace && !settled {
			st.buf.Receipts = append(st.buf.Receipts, rc)
		} else {
			delete(st.late, k)
			m.unmatched.Inc()
			e.log.Warn("receipt matches no sent message; dropped", slog.String("provider_id", rc.ProviderID),
				slog.String("network", rc.Network.String()))
		}
	}
	for _, rc := range b.Receipts {
		if _, ok := st.late[lateKey{rc.ProviderID, rc.Network}]; ok && !containsReceipt(res.LateReceipts, rc) {
			delete(st.late, lateKey{rc.ProviderID, rc.Network})
		}
	}
	for _, p := range b.syncs {
		ctx.Send(p, &struct{}{})
	}
	b.recycle()
	st.spare = b
	if len(st.buf.Receipts) > 0 && st.buf.size() == len(st.buf.Receipts) && !st.armed {
		// Only late receipts are waiting: give their submissions a moment.
		st.armed = true
		r.timers.after(e.root, ctx.Self(), 50*time.Millisecond, &flushTimer{})
	}
}

// settleMarks tells the links that the submits under their marks in this batch have durable
// outcomes now, so the marks can go.
func (r *receiptsActor) settleMarks(ctx actor.Context, b *receiptBatch) {
	var byNet [carriers.NetworkSlots]map[uuid.UUID]int
	add := func(n carriers.Network, id uuid.UUID) {
		if id == uuid.Nil {
			return
		}
		if byNet[n] == nil {
			byNet[n] = map[uuid.UUID]int{}
		}
		byNet[n][id]++
	}
	for i, sub := range b.Submitted {
		add(sub.Network, b.subMarks[i])
	}
	for i, n := range b.failNets {
		add(n, b.failMarks[i])
	}
	for n, marks := range byNet {
		if marks != nil {
			ctx.Send(r.e.links[n], &marksSettled{n: marks})
		}
	}
}

func containsReceipt(rs []persistence.Receipt, r persistence.Receipt) bool {
	for _, x := range rs {
		if x.ProviderID == r.ProviderID && x.Network == r.Network {
			return true
		}
	}
	return false
}
