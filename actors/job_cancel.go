// Cancelling a campaign: its tenant marks it, its job stops handing messages to the links, and
// what no link holds is failed and refunded once the messages in flight have their outcomes.

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

// CancelCampaign stops a queued, scheduled or sending campaign. It answers once the campaign
// is cancelled durably; what was not sent is refunded as soon as no link holds any of it
// (at once for a campaign that had not started).
func (e *Engine) CancelCampaign(ctx context.Context, accountID, campaignID uuid.UUID) error {
	if !e.accepting.Load() {
		return ErrStopping
	}
	_, err := e.tenantRequest(ctx, accountID, &cancelCmd{campaign: campaignID})
	return err
}

type (
	cancelCmd    struct{ campaign uuid.UUID }
	cancelMarked struct {
		job   uuid.UUID
		err   error
		reply *actor.PID
	}
	// cancelJob tells a running job its campaign is cancelled.
	cancelJob   struct{}
	settleRetry struct{}
	// withdrawJob asks a link to give back a cancelled job's submits it has not taken yet.
	withdrawJob struct {
		account uuid.UUID
		job     *actor.PID
	}
	// remainderCancelled: what a cancelled job still held is failed and refunded (or not: err).
	remainderCancelled struct {
		snaps []persistence.WalletSnapshot
		err   error
		reply *actor.PID // the caller to answer, when it waits
	}
)

// cancel marks the campaign cancelled in the store, then stops its job.
func (t *tenantActor) cancel(ctx actor.Context, cmd *cancelCmd, reply *actor.PID) {
	self, root := ctx.Self(), t.e.root
	t.e.goIO(10*time.Second, func(c context.Context) {
		job, err := t.e.store.CancelCampaign(c, t.id, cmd.campaign, time.Now())
		root.Send(self, &cancelMarked{job: job, err: err, reply: reply})
	})
}

func (t *tenantActor) cancelMarked(ctx actor.Context, msg *cancelMarked) {
	if msg.err != nil {
		ctx.Send(msg.reply, msg.err)
		return
	}
	// Whoever starts this job from now on starts it cancelled (see startJobs).
	t.cancelled[msg.job] = true
	// A job actor this tenant spawned gets the word even before it has started (its mailbox
	// keeps it); none other can hold the job's messages.
	if pid, ok := t.live[msg.job]; ok {
		ctx.Send(pid, &cancelJob{})
		ctx.Send(msg.reply, &struct{}{})
		return
	}
	// No job actor holds any of its messages: drop it from the queue and settle it now.
	for i, js := range t.waiting {
		if js.id == msg.job {
			t.waiting = append(t.waiting[:i], t.waiting[i+1:]...)
			t.leftQueue(js)
			break
		}
	}
	self, root, job := ctx.Self(), t.e.root, msg.job
	t.e.goIO(5*time.Minute, func(c context.Context) {
		snaps, err := t.e.store.CancelRemainder(c, job)
		root.Send(self, &remainderCancelled{snaps: snaps, err: err, reply: msg.reply})
	})
}

func (t *tenantActor) remainderCancelled(ctx actor.Context, msg *remainderCancelled) {
	for _, w := range msg.snaps {
		t.adopt(w)
	}
	if msg.err != nil {
		// The campaign is cancelled durably; its job, resumed later, settles the rest.
		t.e.log.Error("cancel campaign remainder", slog.String("account_id", t.id.String()), slog.Any("error", msg.err))
	}
	ctx.Send(msg.reply, &struct{}{})
}

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
	if first { // and what the links hold but have not taken comes back (outcomesDurable)
		for _, n := range carriers.Networks() {
			ctx.Send(j.e.links[n], &withdrawJob{account: st.job.AccountID, job: ctx.Self()})
		}
	}
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
