// A receipts shard's buffer: its events by kind in arrival order, with whom to tell once they
// are durable, taken a bounded flush at a time.

package actors

import (
	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// receiptBatch holds events in arrival order, by kind, with whom to tell once durable.
type receiptBatch struct {
	persistence.ReceiptBatch
	subJobs   []*actor.PID
	subMarks  []uuid.UUID
	failJobs  []*actor.PID
	failMarks []uuid.UUID
	failNets  []carriers.Network
	syncs     []*actor.PID
}

func (b *receiptBatch) size() int { return len(b.Submitted) + len(b.Failed) + len(b.Receipts) }

// outcomes counts the submit outcomes (what jobs wait for before sending more).
func (b *receiptBatch) outcomes() int { return len(b.Submitted) + len(b.Failed) }

// take removes up to max events for one flush. Flushes stay short (they hold row locks on
// counters and push WAL ahead of accepts' commits), and receipts are only taken once every
// buffered submission is, so a receipt never goes ahead of its own submission. Sync waiters
// go with the batch that carries every buffered receipt.
func (b *receiptBatch) take(max int) *receiptBatch {
	if b.size() <= max {
		out := *b
		*b = receiptBatch{}
		return &out
	}
	out := &receiptBatch{}
	n := min(len(b.Submitted), max)
	out.Submitted, b.Submitted = b.Submitted[:n:n], b.Submitted[n:]
	out.subJobs, b.subJobs = b.subJobs[:n:n], b.subJobs[n:]
	out.subMarks, b.subMarks = b.subMarks[:n:n], b.subMarks[n:]
	room := max - n
	f := min(len(b.Failed), room)
	out.Failed, b.Failed = b.Failed[:f:f], b.Failed[f:]
	out.failJobs, b.failJobs = b.failJobs[:f:f], b.failJobs[f:]
	out.failMarks, b.failMarks = b.failMarks[:f:f], b.failMarks[f:]
	out.failNets, b.failNets = b.failNets[:f:f], b.failNets[f:]
	room -= f
	if len(b.Submitted) == 0 && len(b.Failed) == 0 {
		k := min(len(b.Receipts), room)
		out.Receipts, b.Receipts = b.Receipts[:k:k], b.Receipts[k:]
		if len(b.Receipts) == 0 {
			out.syncs, b.syncs = b.syncs, nil
		}
	}
	return out
}

// recycle empties a written batch to buffer the next events in its arrays: a shard at full
// speed otherwise grows a new set of arrays every flush, a third of the node's allocations.
// The references it held are dropped so the collector does not keep them.
func (b *receiptBatch) recycle() {
	clear(b.Submitted)
	clear(b.subJobs)
	clear(b.Failed)
	clear(b.failJobs)
	clear(b.Receipts)
	clear(b.syncs)
	b.Submitted, b.subJobs, b.subMarks = b.Submitted[:0], b.subJobs[:0], b.subMarks[:0]
	b.Failed, b.failJobs, b.failMarks, b.failNets = b.Failed[:0], b.failJobs[:0], b.failMarks[:0], b.failNets[:0]
	b.Receipts, b.syncs = b.Receipts[:0], b.syncs[:0]
}

// prepend puts an unwritten batch back in front of what arrived since.
func (b *receiptBatch) prepend(old *receiptBatch) {
	b.Submitted = append(old.Submitted, b.Submitted...)
	b.subJobs = append(old.subJobs, b.subJobs...)
	b.subMarks = append(old.subMarks, b.subMarks...)
	b.Failed = append(old.Failed, b.Failed...)
	b.failJobs = append(old.failJobs, b.failJobs...)
	b.failMarks = append(old.failMarks, b.failMarks...)
	b.failNets = append(old.failNets, b.failNets...)
	b.Receipts = append(old.Receipts, b.Receipts...)
	b.syncs = append(old.syncs, b.syncs...)
}
