package sim

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

func TestStateString(t *testing.T) {
	tests := []struct {
		s    State
		want string
	}{
		{Enroute, "enroute"},
		{Delivered, "delivered"},
		{Failed, "failed"},
		{0, "unknown"},
		{State(42), "unknown"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("State(%d).String() = %q; want %q", tt.s, got, tt.want)
		}
	}
}

func TestReceiptsOnceInOrder(t *testing.T) {
	tests := []struct {
		name          string
		delay, jitter time.Duration
	}{
		{"at once", 0, 0},
		{"at once with jitter", 0, 20 * time.Millisecond},
		{"fixed delay", 5 * time.Millisecond, 0},
		{"delay with jitter", time.Millisecond, 30 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &collector{}
			var n *Network
			var early atomic.Uint64 // receipts seen before their submit was counted
			n = newNetwork(t, Options{
				Network: carriers.Safaricom, ReceiptDelay: tt.delay, ReceiptJitter: tt.jitter,
				Delivered: 1, Undeliverable: 1,
				OnReceipt: func(r Receipt) {
					if n.Stats().Accepted < uint64(c.len()+1) {
						early.Add(1)
					}
					c.onReceipt(r)
				},
			})
			const workers, each = 8, 250
			ids := make([][]string, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for range each {
						id, err := n.Submit(context.Background(), submission())
						if err != nil {
							t.Errorf("Submit = %v", err)
							return
						}
						ids[w] = append(ids[w], id)
					}
				})
			}
			wg.Wait()
			waitFor(t, 10*time.Second, "all receipts", func() bool { return c.len() >= workers*each })
			rs, arrived := c.snapshot()
			if len(rs) != workers*each {
				t.Fatalf("%d receipts; want %d", len(rs), workers*each)
			}
			submitted := map[string]bool{}
			for _, w := range ids {
				for _, id := range w {
					submitted[id] = true
				}
			}
			seen := map[string]bool{}
			for i, r := range rs {
				if !submitted[r.ProviderID] || seen[r.ProviderID] {
					t.Fatalf("receipt %d for %q: submitted %t, seen before %t", i, r.ProviderID, submitted[r.ProviderID], seen[r.ProviderID])
				}
				seen[r.ProviderID] = true
				if i > 0 && r.DoneAt.Before(rs[i-1].DoneAt) {
					t.Errorf("receipt %d done at %v, before receipt %d at %v", i, r.DoneAt, i-1, rs[i-1].DoneAt)
				}
				if d := r.DoneAt.Sub(r.SubmittedAt); d < tt.delay || d > tt.delay+tt.jitter+time.Millisecond {
					t.Errorf("receipt %d delay %v; want in [%v, %v]", i, d, tt.delay, tt.delay+tt.jitter)
				}
				if arrived[i].Before(r.DoneAt) {
					t.Errorf("receipt %d arrived at %v, before its DoneAt %v", i, arrived[i], r.DoneAt)
				}
			}
			if e := early.Load(); e > 0 {
				t.Errorf("%d receipts arrived before their submit was accepted", e)
			}
			if st := n.Stats(); st.Receipts != workers*each || st.Accepted != workers*each {
				t.Errorf("Stats() = %+v; want %d accepted and receipts", st, workers*each)
			}
		})
	}
}

func TestReceiptAfterSubmitReturns(t *testing.T) {
	// With a delay the caller has long recorded the id when the receipt
	// comes; with none, only the weaker guarantee of TestReceiptsOnceInOrder
	// holds (see the package documentation). The delay is far above what a
	// goroutine can be held off the CPU under -race on a loaded 2-core box
	// (100 ms was not: a submitter was once descheduled that long).
	var returned sync.Map
	var unknown atomic.Uint64
	c := &collector{}
	n := newNetwork(t, Options{
		Network: carriers.Airtel, ReceiptDelay: time.Second,
		OnReceipt: func(r Receipt) {
			if _, ok := returned.Load(r.ProviderID); !ok {
				unknown.Add(1)
			}
			c.onReceipt(r)
		},
	})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				id, err := n.Submit(context.Background(), submission())
				if err != nil {
					t.Errorf("Submit = %v", err)
					return
				}
				returned.Store(id, true)
			}
		})
	}
	wg.Wait()
	waitFor(t, 10*time.Second, "all receipts", func() bool { return c.len() == 400 })
	if u := unknown.Load(); u > 0 {
		t.Errorf("%d receipts arrived before Submit returned their id", u)
	}
}
