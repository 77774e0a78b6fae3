package actors

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// markerActor writes the links' submit marks: the batches that wait while a write runs are
// taken together by the next, one mark row each in one transaction. Each link wrote its own
// marks, one transaction per batch of a few submits; with three links that was a commit (and
// a WAL flush) for every four 1-recipient sends, a third of PostgreSQL's CPU a send. At low
// load a batch is written alone without waiting, as before.
//
// Its state lives outside the actor instance, so a restart after a panic keeps the batches it
// holds (their links wait for them) instead of dropping them.
type markerActor struct {
	e  *Engine
	st *markerState
}

type markerState struct {
	queue    []*markReq
	inflight bool
	inbox    inbox // write results, kept across a respawn
}

// Between a link and the marker.
type (
	// markReq: a link's batch of submits to mark; the link hears back with a markDone.
	markReq struct {
		network carriers.Network
		id      uuid.UUID
		keys    []persistence.SubmitKey
		batch   []*submitReq
	}
	marksWritten struct {
		reqs   []*markReq
		fenced []map[persistence.FenceKey]bool
		err    error
	}
)

func (m *markerActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started, *inboxPoke:
		for _, w := range m.st.inbox.take() {
			m.written(w.(*marksWritten))
		}
		m.flush(ctx)
	case *markReq:
		m.st.queue = append(m.st.queue, msg)
		m.flush(ctx)
	case *panicNow:
		panic("marker: panic requested")
	}
}

// written hands each batch's outcome to its link's inbox, as the link's own write did.
func (m *markerActor) written(w *marksWritten) {
	e := m.e
	m.st.inflight = false
	for i, r := range w.reqs {
		d := &markDone{id: r.id, batch: r.batch, err: w.err}
		if w.err == nil {
			d.fenced = w.fenced[i]
		}
		e.fixed.links[r.network].inbox.put(e.root, e.links[r.network], d)
	}
}

// flush writes every batch waiting, unless a write is running (its end flushes again).
func (m *markerActor) flush(ctx actor.Context) {
	st, e := m.st, m.e
	if st.inflight || len(st.queue) == 0 {
		return
	}
	reqs := st.queue
	st.queue = nil
	st.inflight = true
	batches := make([]persistence.MarkBatch, len(reqs))
	n := 0
	for i, r := range reqs {
		batches[i] = persistence.MarkBatch{ID: r.id, Network: r.network, Msgs: r.keys}
		n += len(r.keys)
	}
	self, root, met := ctx.Self(), e.root, e.m
	e.goIO(time.Minute, func(c context.Context) {
		start := time.Now()
		fenced, err := e.store.MarkBatches(c, e.opts.NodeID, batches)
		met.batchLatency.WithLabelValues("mark").Observe(time.Since(start).Seconds())
		met.batchSize.WithLabelValues("mark").Observe(float64(n))
		st.inbox.put(root, self, &marksWritten{reqs: reqs, fenced: fenced, err: err})
	})
}
