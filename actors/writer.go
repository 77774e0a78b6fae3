package actors

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// writerActor group-commits the accepted sends of its share of accounts. Requests that arrive
// while a commit is running are taken together by the next one, so under load one transaction
// (one fsync) carries many sends, and at low load a send commits alone without waiting. Each
// shard commits one batch at a time; shards own disjoint accounts, so they never wait on
// each other's row locks.
//
// Its state lives outside the actor instance, so a restart after a panic keeps the sends it
// holds (their callers are waiting) instead of dropping them.
type writerActor struct {
	e *Engine
	*writerState
}

type writerState struct {
	queue    []*acceptReq
	inflight int
	waiters  []*actor.PID // drain callers
	inbox    inbox        // commit results, kept across a respawn
}

// Between a tenant and its writer.
type (
	acceptReq struct {
		job     persistence.NewJob
		reply   *actor.PID // the caller waiting for the 202
		tenant  *actor.PID
		epoch   int64 // the tenant incarnation that sent it
		start   time.Time
		inline  []dispatchMsg // the inline messages, ready to dispatch
		variant [carriers.NetworkSlots]variant
	}
	acceptBatchDone struct {
		reqs    []*acceptReq
		results []persistence.AcceptResult
		err     error
	}
)

func (w *writerActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started, *inboxPoke:
		for _, m := range w.inbox.take() {
			w.committed(ctx, m.(*acceptBatchDone))
		}
		w.flush(ctx)
	case *acceptReq:
		w.queue = append(w.queue, msg)
		w.flush(ctx)
	case *drain:
		w.waiters = append(w.waiters, ctx.Sender())
	case *panicNow:
		panic("writer: panic requested")
	}
	if len(w.waiters) > 0 && w.inflight == 0 && len(w.queue) == 0 {
		for _, p := range w.waiters {
			ctx.Send(p, &drained{})
		}
		w.waiters = nil
	}
}

// committed answers each send of a batch through its tenant.
func (w *writerActor) committed(ctx actor.Context, b *acceptBatchDone) {
	w.inflight--
	for i, r := range b.reqs {
		d := &acceptDone{req: r, err: b.err}
		if b.err == nil {
			d.result = b.results[i]
		}
		// Through the supervisor: the tenant that sent it may have been replaced meanwhile.
		ctx.Send(w.e.supervisor, &toTenant{account: r.job.AccountID, msg: d})
	}
}

func (w *writerActor) flush(ctx actor.Context) {
	for w.inflight == 0 && len(w.queue) > 0 {
		n := min(len(w.queue), w.e.opts.AcceptBatch)
		reqs := make([]*acceptReq, n)
		copy(reqs, w.queue)
		clear(w.queue[:n])
		w.queue = w.queue[n:]
		w.inflight++
		self, root, m := ctx.Self(), w.e.root, w.e.m
		w.e.goIO(30*time.Second, func(c context.Context) {
			jobs := make([]persistence.NewJob, len(reqs))
			for i, r := range reqs {
				jobs[i] = r.job
			}
			start := time.Now()
			results, err := w.e.store.AcceptJobs(c, jobs)
			m.batchLatency.WithLabelValues("accept").Observe(time.Since(start).Seconds())
			m.batchSize.WithLabelValues("accept").Observe(float64(len(jobs)))
			if err != nil {
				m.batchErrors.WithLabelValues("accept").Inc()
			}
			w.inbox.put(root, self, &acceptBatchDone{reqs: reqs, results: results, err: err})
		})
	}
}
