// The orphan sweep: recovery's periodic look for unfinished jobs nobody runs.
//
// A tenant runs its account's jobs; recovery wakes the accounts with unfinished jobs when the
// node starts and whenever the cluster's membership changes. One case escapes both: a handoff
// that meets a tenant still retiring. The walk after a membership change finds this node's
// old tenant of an account still there (fenced by another node's, not yet stopped) and starts
// none; then the other node's tenant retires as its own view catches up, and the account's
// jobs wait for the next command, which a finished campaign never gets. The fence says
// whose tenant last held an account, so every OrphanSweep recovery visits the accounts with
// unfinished jobs whose fence another node holds (or none does) and wakes those this node
// owns; taking the fence, the new tenant resumes them. Each node wakes only its own accounts,
// so any number of nodes sweep at once; a tenant already here is only looked up.

package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

type (
	orphanSweep struct{} // the sweep's timer
	orphansRead struct {
		page persistence.HeldElsewhere
		err  error
	}
)

// sweepState is the sweep's walk over the accounts with unfinished jobs.
type sweepState struct {
	after   uuid.UUID // the walk's cursor
	reading bool
	armed   bool
}

// orphanPage is how many accounts with unfinished jobs the sweep visits a read.
const orphanPage = 1000

// armSweep schedules the next sweep (Options.OrphanSweep 0: never).
func (r *recoveryActor) armSweep(ctx actor.Context) {
	st, e := r.st, r.e
	if e.opts.OrphanSweep <= 0 || st.sweep.armed || st.sweep.reading {
		return
	}
	st.sweep.armed = true
	r.sweepTimer.after(e.root, ctx.Self(), e.opts.OrphanSweep, &orphanSweep{})
}

// sweep reads the walk's next page.
func (r *recoveryActor) sweep(ctx actor.Context) {
	st, e := r.st, r.e
	st.sweep.armed = false
	if st.sweep.reading {
		return
	}
	st.sweep.reading = true
	self, root, after, node := ctx.Self(), e.root, st.sweep.after, e.opts.NodeID
	e.goIO(time.Minute, func(c context.Context) {
		page, err := e.store.AccountsHeldElsewhere(c, node, after, orphanPage)
		st.inbox.put(root, self, &orphansRead{page: page, err: err})
	})
}

// orphansRead wakes the page's accounts this node owns and goes on, or waits for the next sweep.
func (r *recoveryActor) orphansRead(ctx actor.Context, m *orphansRead) {
	st, e := r.st, r.e
	st.sweep.reading = false
	if m.err != nil {
		e.log.Warn("recovery sweep: read the accounts with unfinished jobs; will try at the next sweep", slog.Any("error", m.err))
		st.sweep.after = uuid.Nil
		r.armSweep(ctx)
		return
	}
	for _, id := range m.page.Accounts {
		if e.owns(id) {
			ctx.Request(e.supervisor, &getTenant{id: id, orphan: true})
		}
	}
	if m.page.Visited == orphanPage {
		st.sweep.after = m.page.Last
		r.sweep(ctx)
		return
	}
	st.sweep.after = uuid.Nil
	r.armSweep(ctx)
}
