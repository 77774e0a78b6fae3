package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

// recoveryActor brings back what earlier runs left unfinished, in the background, while the
// engine already takes new sends. It reads the submit marks earlier runs left (the messages
// that may have reached a network before the crash: jobs flag them so links ask before
// submitting again), then wakes the tenant of every account with unfinished jobs, a page of
// accounts at a time; each tenant resumes its own jobs a few at a time. Nothing it does
// grows with the backlog: marks are bounded by the windows, accounts are read in pages.
//
// After a supervisor restart (its tenants stopped with it) it walks the accounts again.
// Tenants it wakes before the supervisor is up again simply wait in the supervisor's mailbox.
type recoveryActor struct {
	e          *Engine
	st         *recoveryState
	timers     timers
	sweepTimer timers // the orphan sweep's (recovery_sweep.go)
}

type recoveryState struct {
	marksRead bool
	oldMarks  []uuid.UUID // earlier runs' marks, deleted once every message under them is marked again
	unsettled int         // messages under them not yet marked again
	walking   bool        // the accounts are being walked
	again     bool        // walk again when this walk ends
	after     uuid.UUID   // the walk's cursor
	reading   bool
	retry     time.Duration
	began     time.Time
	inbox     inbox
	sweep     sweepState
}

type (
	remarked  struct{ n int } // from a link: this many unsettled messages are marked again
	marksRead struct {
		marked persistence.Marked
		err    error
	}
	accountsRead struct {
		ids []uuid.UUID
		err error
	}
	recoveryNext struct{}
	// rewake: the supervisor restarted (its tenants are gone), or the cluster's membership
	// changed (placement: this node may own accounts it did not): wake them again.
	rewake struct{ placement bool }
)

// recoveryPage is how many accounts recovery wakes at a time.
const recoveryPage = 100

func (r *recoveryActor) Receive(ctx actor.Context) {
	st, e := r.st, r.e
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		st.sweep.armed = false // timers of an earlier incarnation are gone
		r.takeInbox(ctx)
		r.armSweep(ctx)
		if !st.walking {
			st.walking, st.after, st.began = true, uuid.Nil, time.Now()
			e.recoveryProgress.done.Store(false)
			e.recoveryProgress.accounts.Store(0)
			e.m.recovering.Set(1)
		}
		r.next(ctx)
	case *actor.Restarting, *actor.Stopping:
		r.timers.stop()
		r.sweepTimer.stop()
		st.reading = false // a read in flight still lands in the inbox; reading again is harmless
		st.walking = false // walk again: the tenants may have stopped with the supervisor
	case *inboxPoke:
		r.takeInbox(ctx)
	case *recoveryNext:
		r.next(ctx)
	case *orphanSweep:
		r.sweep(ctx)
	case *rewake:
		if st.walking && msg.placement {
			st.again = true // the accounts this node owns changed under the walk: walk once more
		}
		if !st.walking {
			st.walking, st.after, st.began = true, uuid.Nil, time.Now()
			e.recoveryProgress.done.Store(false)
			e.recoveryProgress.accounts.Store(0)
			e.m.recovering.Set(1)
		}
		r.next(ctx)
	case *remarked:
		st.unsettled -= msg.n
		e.recoveryProgress.unsettled.Store(int64(max(st.unsettled, 0)))
		r.deleteOldMarks()
	case *actor.PID, error:
		// tenants woken (or not: an account deleted meanwhile, logged by the supervisor)
	case *panicNow:
		panic("recovery: panic requested")
	}
}

func (r *recoveryActor) takeInbox(ctx actor.Context) {
	st, e := r.st, r.e
	for _, m := range st.inbox.take() {
		switch m := m.(type) {
		case *orphansRead:
			r.orphansRead(ctx, m)
			continue
		case *marksRead:
			st.reading = false
			if r.failed(ctx, "read submit marks", m.err) {
				continue
			}
			for _, k := range m.marked.Unsettled {
				e.unsettled.Store(k.ID, struct{}{})
			}
			st.oldMarks, st.unsettled, st.marksRead = m.marked.Marks, len(m.marked.Unsettled), true
			e.recoveryProgress.unsettled.Store(int64(st.unsettled))
			e.marksRead.Store(true)
			if st.unsettled > 0 {
				e.log.Info("messages marked for submission before the last stop may have reached their network; they are asked about before any resend",
					slog.Int("messages", st.unsettled))
			}
			r.deleteOldMarks()
		case *accountsRead:
			st.reading = false
			if r.failed(ctx, "read accounts with unfinished jobs", m.err) {
				continue
			}
			for _, id := range m.ids {
				ctx.Request(e.supervisor, &getTenant{id: id})
				st.after = id
			}
			e.recoveryProgress.accounts.Add(int64(len(m.ids)))
			if len(m.ids) < recoveryPage && st.again {
				st.again, st.after = false, uuid.Nil
			} else if len(m.ids) < recoveryPage {
				st.walking = false
				e.recoveryProgress.done.Store(true)
				took := time.Since(st.began)
				e.m.recoverySeconds.Set(took.Seconds())
				e.m.recovering.Set(0)
				e.log.Info("recovery: every account with unfinished jobs is resuming them",
					slog.Int64("accounts", e.recoveryProgress.accounts.Load()), slog.Duration("took", took))
			}
		}
	}
	r.next(ctx)
}

// failed logs a failed read and schedules another try.
func (r *recoveryActor) failed(ctx actor.Context, what string, err error) bool {
	if err == nil {
		r.st.retry = 0
		return false
	}
	r.st.retry = min(max(2*r.st.retry, 100*time.Millisecond), 10*time.Second)
	r.e.log.Error("recovery: "+what+"; will retry", slog.Any("error", err), slog.Duration("retry_in", r.st.retry))
	r.timers.after(r.e.root, ctx.Self(), r.st.retry, &recoveryNext{})
	return true
}

// next starts the next read: the marks first, then the accounts page by page.
func (r *recoveryActor) next(ctx actor.Context) {
	st, e := r.st, r.e
	if st.reading || st.retry > 0 && !r.timersIdle() {
		return
	}
	self, root := ctx.Self(), e.root
	switch {
	case !st.marksRead:
		st.reading = true
		before := e.startID
		e.goIO(time.Minute, func(c context.Context) {
			m, err := e.store.Marks(c, before, e.opts.NodeID)
			st.inbox.put(root, self, &marksRead{marked: m, err: err})
		})
	case st.walking:
		st.reading = true
		after := st.after
		e.goIO(time.Minute, func(c context.Context) {
			ids, err := e.store.AccountsWithOpenJobs(c, after, recoveryPage)
			st.inbox.put(root, self, &accountsRead{ids: ids, err: err})
		})
	}
}

// timersIdle reports that no retry is pending (a retry's timer calls next itself).
func (r *recoveryActor) timersIdle() bool { return r.timers.pending() == 0 }

// deleteOldMarks deletes the marks of earlier runs once every message under them that was
// still queued has been marked again (or there were none).
func (r *recoveryActor) deleteOldMarks() {
	st, e := r.st, r.e
	if st.unsettled > 0 || len(st.oldMarks) == 0 {
		return
	}
	ids := st.oldMarks
	st.oldMarks = nil
	e.goIO(time.Minute, func(c context.Context) {
		if err := e.store.Unmark(c, ids); err != nil {
			// They stay; the next start reads them again and finds nothing unsettled under them.
			e.log.Warn("delete earlier runs' submit marks", slog.Any("error", err))
		}
	})
}
