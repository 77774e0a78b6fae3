package sim

import (
	"sync"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

// newNetwork starts a Network closed at the end of the test, and checks then
// that its goroutine is gone.
func newNetwork(t testing.TB, opts Options) *Network {
	t.Helper()
	n, err := New(opts)
	if err != nil {
		t.Fatalf("New(%+v) = %v", opts, err)
	}
	t.Cleanup(func() {
		n.Close()
		select {
		case <-n.done:
		default:
			t.Error("Close returned before the receipt goroutine")
		}
	})
	return n
}

func submission() Submission {
	return Submission{
		MessageID:   "msg-1",
		Sender:      "TUMA",
		Destination: "+254712345678",
		Text:        "Habari",
		Parts:       1,
		Encoding:    carriers.GSM7,
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// collector records receipts pushed through OnReceipt.
type collector struct {
	mu       sync.Mutex
	receipts []Receipt
	arrived  []time.Time
}

func (c *collector) onReceipt(r Receipt) {
	now := time.Now()
	c.mu.Lock()
	c.receipts = append(c.receipts, r)
	c.arrived = append(c.arrived, now)
	c.mu.Unlock()
}

func (c *collector) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.receipts)
}

func (c *collector) snapshot() ([]Receipt, []time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Receipt(nil), c.receipts...), append([]time.Time(nil), c.arrived...)
}
