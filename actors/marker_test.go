package actors_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// groupedMarks is a store whose mark writes take a while and are recorded: the networks of
// the batches each write carried.
type groupedMarks struct {
	*persistence.Store
	mu     sync.Mutex
	writes [][]carriers.Network
}

func (s *groupedMarks) MarkBatches(ctx context.Context, node string, batches []persistence.MarkBatch) ([]map[persistence.FenceKey]bool, error) {
	nets := make([]carriers.Network, len(batches))
	for i, b := range batches {
		nets[i] = b.Network
	}
	s.mu.Lock()
	s.writes = append(s.writes, nets)
	s.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	return s.Store.MarkBatches(ctx, node, batches)
}

// The links' marks are written together: while one write runs, the batches of every network
// wait and go in the next one, each still its own batch, and every message is delivered.
func TestMarksOfTheLinksShareAWrite(t *testing.T) {
	marks := &groupedMarks{}
	w := newWorldWith(t, actors.Options{}, nil, func(w *world) {
		marks.Store = w.st
		w.store = marks
	})
	acct := w.account(1000_00)
	for i := range 3 {
		if _, err := w.send(acct, recipients(300, carriers.NetworkUnknown, uint64(60+i)), "marks"); err != nil {
			t.Fatal(err)
		}
	}
	w.waitFinal(acct, 900, time.Minute)
	marks.mu.Lock()
	defer marks.mu.Unlock()
	shared := 0
	for _, nets := range marks.writes {
		seen := map[carriers.Network]int{}
		for _, n := range nets {
			seen[n]++
		}
		for n, k := range seen {
			if k > 1 {
				t.Fatalf("a write carried %d batches of %s; want at most one a link (a link marks one batch at a time)", k, n)
			}
		}
		if len(seen) > 1 {
			shared++
		}
	}
	if shared == 0 {
		t.Fatalf("none of %d mark writes carried batches of two networks: %s", len(marks.writes), fmt.Sprint(marks.writes))
	}
	if n := w.sqlInt(`SELECT count(*) FROM messages WHERE status = 'delivered'`) + w.sqlInt(`SELECT count(*) FROM messages WHERE status = 'failed'`); n != 900 {
		t.Errorf("%d messages final; want 900", n)
	}
}
