// A job's messages whose numbers were suppressed after they were screened: held back from
// the links (or handed back by one) and looked up in the store before they go, so that a
// number suppressed after acceptance but before its submit fails OPTED_OUT, refunded
// (CONTRACT §15), however long its message waited in a queue.

package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

type (
	// suspectMsg: a link hands back a message it had not taken, whose number was suppressed
	// since it was screened (linkActor.pump).
	suspectMsg struct{ msg dispatchMsg }
	// suspectsScreened: the look-up's answer, the suspects that may go (the others are failed
	// and refunded).
	suspectsScreened struct {
		from     *jobState
		msgs     []dispatchMsg
		screened int64
		err      error
	}
	screenRetry struct{}
)

// suspect takes back a message a link handed back: no longer outstanding, looked up first.
// A cancelled or held job leaves it queued in the store, as it does a withdrawn one.
func (j *jobActor) suspect(ctx actor.Context, m *suspectMsg) {
	st := j.st
	n := m.msg.network
	st.outstanding[n] = max(st.outstanding[n]-1, 0)
	if !st.cancelled && !st.holding {
		st.suspects = append(st.suspects, m.msg)
	}
	j.pump(ctx)
}

// screenSuspects looks the suspects up, one batch at a time.
func (j *jobActor) screenSuspects(ctx actor.Context) {
	st := j.st
	if st.screening || len(st.suspects) == 0 {
		return
	}
	if wait := time.Until(st.screenAfter); wait > 0 { // the last look-up failed
		if !st.screenArmed {
			st.screenArmed = true
			j.timers.after(j.e.root, ctx.Self(), wait, &screenRetry{})
		}
		return
	}
	st.screening = true
	msgs := st.suspects
	st.suspects = nil
	self, root, acct, id := ctx.Self(), j.e.root, st.job.AccountID, st.start.id
	j.e.goIO(time.Minute, func(c context.Context) {
		at := time.Now().UnixMilli() // before the read: what is suppressed after it is caught later
		kept, err := j.skipSuppressed(c, acct, id, msgs)
		if err != nil {
			kept = msgs
		}
		root.Send(self, &suspectsScreened{from: st, msgs: kept, screened: at, err: err})
	})
}

// screened puts back in line the suspects that may go, or after a failed look-up all of
// them, to be looked up again a second later.
func (j *jobActor) screened(ctx actor.Context, r *suspectsScreened) {
	st := j.st
	if r.from != st {
		return // a predecessor's look-up (before a tenant restart)
	}
	st.screening = false
	switch {
	case st.cancelled || st.holding: // what is left stays queued in the store
	case r.err != nil:
		j.e.log.Error("look up suppressed numbers", slog.String("job_id", st.start.id.String()), slog.Any("error", r.err))
		st.suspects = append(r.msgs, st.suspects...)
		st.screenAfter = time.Now().Add(time.Second)
	default:
		j.requeue(r)
	}
	j.pump(ctx)
}

// requeue puts the suspects that may go back in line, ahead of what was queued behind them.
func (j *jobActor) requeue(r *suspectsScreened) {
	st := j.st
	for n := range st.queues {
		var front []dispatchMsg
		for _, m := range r.msgs {
			if int(m.network) == n {
				m.screened = r.screened
				front = append(front, m)
			}
		}
		if len(front) > 0 {
			st.queues[n] = append(front, st.queues[n]...)
		}
	}
}
