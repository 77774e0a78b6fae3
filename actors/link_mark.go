// Link marks: before it submits, a link durably marks what it is about to submit, so that
// after a crash a message marked but still queued is asked about, not sent again blindly.
// A mark is deleted once every submit under it has a durable outcome.

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
	// markDone: a batch of submits is marked (durably, or not: err).
	markDone struct {
		id     uuid.UUID
		batch  []*submitReq
		fenced map[persistence.FenceKey]bool // incarnations whose submits were left out: not to be sent
		err    error
	}
	// marksSettled: this many submits of each mark have a durable outcome now.
	marksSettled struct{ n map[uuid.UUID]int }
	unmarkDone   struct {
		ids []uuid.UUID
		err error
	}
	unmarkTick struct{}
)

// mark asks the marker for one mark for every submit taken since the last one, one at a time:
// under load a mark covers many submits and shares its transaction with the other links'
// (group commit, marker.go); idle it covers one without waiting.
func (l *linkActor) mark(ctx actor.Context) {
	st := l.st
	if st.marking || len(st.toMark) == 0 {
		return
	}
	batch := st.toMark
	st.toMark = nil
	st.marking, st.markingN = true, len(batch)
	id := persistence.NewID()
	keys := make([]persistence.SubmitKey, len(batch))
	for i, r := range batch {
		r.markFence = r.fence
		keys[i] = persistence.SubmitKey{AccountID: r.account, ID: r.msg.id, Fence: r.fence}
	}
	ctx.Send(l.e.marker, &markReq{network: st.network, id: id, keys: keys, batch: batch})
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
		st.markPausedUntil = time.Now().Add(st.markRetry)
		return
	}
	st.markRetry = 0
	if len(d.fenced) > 0 {
		d.batch = l.dropFenced(ctx, d.batch, d.fenced)
		if len(d.batch) == 0 {
			return // nothing was marked
		}
	}
	st.marks[d.id] = len(d.batch)
	again := 0
	for _, req := range d.batch {
		req.mark = d.id
		if req.msg.unsettled {
			if v, ok := e.unsettled.LoadAndDelete(req.msg.id); ok {
				if f, foreign := v.(foreignMark); foreign {
					req.askAfter = f.askAfter
				} else {
					again++ // recovery counts only its own
				}
			}
		}
	}
	if len(st.ready) == 0 {
		st.pacer.resume(time.Now()) // nothing was waiting for a slot: no catching up on the wait
	}
	st.ready = append(st.ready, d.batch...)
	if again > 0 {
		ctx.Send(e.recovery, &remarked{n: again})
	}
	l.flushUnmarks(ctx, false)
}

// dropFenced takes out of a marked batch the submits of tenants that were replaced: they
// are not sent (their messages stay queued for the new incarnation), and each job is told,
// once, so its tenant stops. A submit the new incarnation took over while the mark was
// written (enqueue) waits to be marked again, under its fence.
func (l *linkActor) dropFenced(ctx actor.Context, batch []*submitReq, out map[persistence.FenceKey]bool) []*submitReq {
	told := map[string]bool{}
	keep := batch[:0]
	for _, req := range batch {
		if !out[persistence.FenceKey{AccountID: req.account, Epoch: req.markFence}] {
			keep = append(keep, req)
			continue
		}
		if req.fence != req.markFence {
			l.st.retry = append(l.st.retry, req)
			continue
		}
		l.e.fencedWrite("mark")
		delete(l.st.known, req.msg.id) // the new incarnation's job may hand it here again
		if !told[req.job.Id] {
			told[req.job.Id] = true
			ctx.Send(req.job, &fenced{})
		}
	}
	clear(batch[len(keep):])
	return keep
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
