package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// progressActor folds the progress log into job counters, job completion and account counts
// about once a second (persistence.FoldProgress), and reads the backlog the open jobs hold for
// the metrics. At start it folds what a crash left in the log: counters are exact again
// without a recount of any message.
type progressActor struct {
	e      *Engine
	st     *progressState
	timers timers
}

type progressState struct {
	folding     bool
	waiters     []*actor.PID // drain callers, answered once the log is empty
	lastBacklog time.Time
	errDelay    time.Duration
	inbox       inbox
}

type (
	progressTick struct{}
	folded       struct {
		entries, completed int
		empty              bool
		backlog            *persistence.Backlog
		err                error
	}
)

const (
	foldBatch    = 1000            // log entries per fold transaction
	foldRounds   = 20              // fold transactions per tick at most
	backlogEvery = 5 * time.Second // how often the backlog gauge is read
)

func (p *progressActor) Receive(ctx actor.Context) {
	st := p.st
	switch ctx.Message().(type) {
	case *actor.Started:
		p.takeInbox(ctx)
		p.fold(ctx)
	case *actor.Restarting, *actor.Stopping:
		p.timers.stop()
	case *inboxPoke:
		p.takeInbox(ctx)
	case *progressTick:
		p.fold(ctx)
	case *drain:
		st.waiters = append(st.waiters, ctx.Sender())
		p.fold(ctx)
	case *panicNow:
		panic("progress: panic requested")
	}
}

func (p *progressActor) takeInbox(ctx actor.Context) {
	st, e := p.st, p.e
	for _, m := range st.inbox.take() {
		f := m.(*folded)
		st.folding = false
		e.m.foldedEntries.Add(float64(f.entries))
		e.m.jobsCompleted.Add(float64(f.completed))
		if f.backlog != nil {
			for _, n := range carriers.Networks() {
				e.m.net[n].backlog.Set(float64(f.backlog[n]))
			}
		}
		if f.err != nil {
			e.m.batchErrors.WithLabelValues("progress").Inc()
			st.errDelay = min(max(2*st.errDelay, 100*time.Millisecond), 10*time.Second)
			e.log.Error("fold job progress; will retry", slog.Any("error", f.err), slog.Duration("retry_in", st.errDelay))
			p.timers.after(e.root, ctx.Self(), st.errDelay, &progressTick{})
			continue
		}
		st.errDelay = 0
		if f.empty {
			for _, w := range st.waiters {
				ctx.Send(w, &drained{})
			}
			st.waiters = nil
		}
		delay := e.opts.ProgressInterval
		if !f.empty || len(st.waiters) > 0 {
			delay = 0 // more to fold
		}
		p.timers.after(e.root, ctx.Self(), delay, &progressTick{})
	}
}

// fold applies the log, a bounded number of batches per round.
func (p *progressActor) fold(ctx actor.Context) {
	st, e := p.st, p.e
	if st.folding {
		return
	}
	st.folding = true
	readBacklog := time.Since(st.lastBacklog) >= backlogEvery
	if readBacklog {
		st.lastBacklog = time.Now()
	}
	self, root, m := ctx.Self(), e.root, e.m
	e.goIO(time.Minute, func(c context.Context) {
		f := &folded{}
		for range foldRounds {
			start := time.Now()
			res, err := e.store.FoldProgress(c, foldBatch)
			m.batchLatency.WithLabelValues("progress").Observe(time.Since(start).Seconds())
			if err != nil {
				f.err = err
				break
			}
			m.batchSize.WithLabelValues("progress").Observe(float64(res.Entries))
			f.entries += res.Entries
			f.completed += len(res.Completed)
			if f.empty = res.Entries < foldBatch; f.empty {
				break
			}
		}
		if readBacklog && f.err == nil {
			if b, err := e.store.Backlog(c); err == nil {
				f.backlog = &b
			} else {
				e.log.Warn("read backlog", slog.Any("error", err))
			}
		}
		st.inbox.put(root, self, f)
	})
}
