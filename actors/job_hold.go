// A promotional job in its account's quiet hours: it submits nothing more, gives back what the
// links have not taken, and once the messages in flight have their outcomes it stops. What it
// did not send stays queued in the store, where the tenant finds it when the hours end.

package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/tuma-sms/tuma/carriers"
)

// quietNow reports whether this job must wait: promotional, inside the quiet hours its tenant
// gave it (the tenant tells it when they change).
func (j *jobActor) quietNow() bool {
	st := j.st
	return st.known && st.job.Promotional && st.quiet != nil && st.quiet.Contains(j.e.opts.Now())
}

// hold stops a promotional job's dispatch for the quiet hours. A message that may have reached
// a network before a crash (unsettled) still goes, to be asked about rather than sent anew.
func (j *jobActor) hold(ctx actor.Context) {
	st := j.st
	if !st.known || !st.job.Promotional || st.cancelled {
		return
	}
	first := !st.holding
	st.holding, st.more = true, false
	for n, q := range st.queues {
		st.queues[n] = keepUnsettled(q)
	}
	// Suspects are never unsettled: they stay queued in the store too.
	st.suspects = nil
	if first { // what the links hold but have not taken comes back (outcomesDurable)
		for _, n := range carriers.Networks() {
			ctx.Send(j.e.links[n], &withdrawJob{account: st.job.AccountID, job: ctx.Self()})
		}
	}
}

// held reports a held job done with its messages in flight, and ends it.
func (j *jobActor) held(ctx actor.Context) {
	ctx.Send(j.st.tenant, &jobHeld{id: j.st.start.id})
	ctx.Stop(ctx.Self())
}
