// A cancelled campaign's job: it stops handing messages to the links, takes back what they
// have not taken, and fails and refunds what it never handed over once the messages in
// flight have their outcomes.

package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/tuma-sms/tuma/carriers"
)

type (
	// cancelJob tells a running job its campaign is cancelled.
	cancelJob   struct{}
	settleRetry struct{}
)

// cancelJob stops a job's dispatch: what no link holds yet is dropped from memory and
// settled once the links' outcomes are durable (pump). A message that may have reached a
// network before a crash (unsettled) still goes, so that it is asked about, not refunded.
func (j *jobActor) cancel(ctx actor.Context) {
	st := j.st
	first := !st.cancelled
	st.cancelled, st.more = true, false
	for n, q := range st.queues {
		st.queues[n] = keepUnsettled(q)
	}
	// Suspects are never unsettled: they stay queued in the store too.
	st.suspects = nil
	if first { // and what the links hold but have not taken comes back (outcomesDurable)
		for _, n := range carriers.Networks() {
			ctx.Send(j.e.links[n], &withdrawJob{account: st.job.AccountID, job: ctx.Self()})
		}
	}
}

func keepUnsettled(q []dispatchMsg) []dispatchMsg {
	out := q[:0]
	for _, m := range q {
		if m.unsettled {
			out = append(out, m)
		}
	}
	clear(q[len(out):])
	return out
}

// settleCancelled fails and refunds what a cancelled job never handed over, then lets it end.
func (j *jobActor) settleCancelled(ctx actor.Context) {
	st := j.st
	if st.settling {
		return
	}
	st.settling = true
	self, root, id := ctx.Self(), j.e.root, st.start.id
	j.e.goIO(5*time.Minute, func(c context.Context) {
		snaps, err := j.e.store.CancelRemainder(c, id)
		root.Send(self, &remainderCancelled{snaps: snaps, err: err})
	})
}

func (j *jobActor) remainderSettled(ctx actor.Context, msg *remainderCancelled) {
	st := j.st
	st.settling = false
	if msg.err != nil {
		j.e.log.Error("cancel job remainder", slog.String("job_id", st.start.id.String()), slog.Any("error", msg.err))
		j.timers.after(j.e.root, ctx.Self(), time.Second, &settleRetry{})
		return
	}
	for _, w := range msg.snaps {
		j.e.WalletChanged(w)
	}
	st.settled = true
	j.pump(ctx)
}
