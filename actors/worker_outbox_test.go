package actors_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tuma-sms/tuma/actors"
)

// fakeBox is an outbox's store and outside system in memory.
type fakeBox struct {
	due                   []int
	failFor               map[int]bool
	delivered, failed     []int
	bookkeepingCancelled  bool
	claims, afterRoundRan int
}

func (b *fakeBox) outbox(batch int) actors.Outbox[int] {
	return actors.Outbox[int]{
		Batch: batch,
		Claim: func(_ context.Context, limit int) ([]int, error) {
			b.claims++
			n := min(limit, len(b.due))
			out := b.due[:n]
			b.due = b.due[n:]
			return out, nil
		},
		Deliver: func(_ context.Context, it int) error {
			if b.failFor[it] {
				return errors.New("refused")
			}
			return nil
		},
		Delivered: func(ctx context.Context, it int) error {
			b.bookkeepingCancelled = b.bookkeepingCancelled || ctx.Err() != nil
			b.delivered = append(b.delivered, it)
			return nil
		},
		Failed: func(_ context.Context, it int, _ error) error {
			b.failed = append(b.failed, it)
			return nil
		},
		AfterRound: func(context.Context) { b.afterRoundRan++ },
	}
}

func TestOutboxRoundDeliversAndRecords(t *testing.T) {
	b := &fakeBox{due: []int{1, 2, 3, 4, 5}, failFor: map[int]bool{2: true}}
	o := b.outbox(3)
	more, err := o.Round(context.Background())
	if err != nil || !more {
		t.Fatalf("first round: more %v, err %v; want more after a full batch", more, err)
	}
	more, err = o.Round(context.Background())
	if err != nil || more {
		t.Fatalf("second round: more %v, err %v; want no more after a short batch", more, err)
	}
	if !slices.Equal(b.delivered, []int{1, 3, 4, 5}) || !slices.Equal(b.failed, []int{2}) {
		t.Errorf("delivered %v, failed %v; want [1 3 4 5] and [2]", b.delivered, b.failed)
	}
	if b.afterRoundRan != 2 {
		t.Errorf("AfterRound ran %d times; want once a round", b.afterRoundRan)
	}
}

// A delivery under way when the round's context ends (a shutdown) is still recorded.
func TestOutboxRecordsOutcomesAfterCancellation(t *testing.T) {
	b := &fakeBox{due: []int{1}}
	ctx, cancel := context.WithCancel(context.Background())
	o := b.outbox(10)
	deliver := o.Deliver
	o.Deliver = func(c context.Context, it int) error { cancel(); return deliver(c, it) }
	if _, err := o.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.delivered, []int{1}) || b.bookkeepingCancelled {
		t.Errorf("delivered %v (bookkeeping context cancelled: %v); want [1] recorded with a live context", b.delivered, b.bookkeepingCancelled)
	}
}
