package actors

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

func TestReceiptBatchTakeKeepsReceiptsBehindSubmissions(t *testing.T) {
	b := &receiptBatch{}
	for range 5 {
		b.Submitted = append(b.Submitted, persistence.Submitted{})
		b.subJobs = append(b.subJobs, nil)
		b.subMarks = append(b.subMarks, uuid.Nil)
	}
	for range 4 {
		b.Receipts = append(b.Receipts, persistence.Receipt{})
	}
	b.syncs = []*actor.PID{{Id: "waiter"}}

	first := b.take(3)
	if len(first.Submitted) != 3 || len(first.Receipts) != 0 || first.syncs != nil {
		t.Fatalf("first take: %d submitted, %d receipts, syncs %v; want 3, 0, none", len(first.Submitted), len(first.Receipts), first.syncs)
	}
	second := b.take(3)
	if len(second.Submitted) != 2 || len(second.Receipts) != 1 || second.syncs != nil {
		t.Fatalf("second take: %d submitted, %d receipts; want 2 and 1 (receipts only after every submission)", len(second.Submitted), len(second.Receipts))
	}
	third := b.take(3)
	if len(third.Receipts) != 3 || len(third.syncs) != 1 || b.size() != 0 {
		t.Fatalf("third take: %d receipts, %d syncs, %d left; want 3, 1, 0", len(third.Receipts), len(third.syncs), b.size())
	}
}
