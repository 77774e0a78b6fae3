package sim

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

func TestClose(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	c := &collector{}
	n, err := New(Options{Network: carriers.Safaricom, ReceiptDelay: time.Hour, OnReceipt: c.onReceipt})
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	ctx := context.Background()
	id, err := n.Submit(ctx, submission())
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	if err := n.Configure(Options{Latency: time.Hour}); err != nil {
		t.Fatalf("Configure = %v", err)
	}
	waiting := make(chan error)
	go func() {
		_, err := n.Submit(ctx, submission())
		waiting <- err
	}()
	waitFor(t, 5*time.Second, "the second submit to wait", func() bool { return n.Stats().Submits == 2 })

	var wg sync.WaitGroup
	for range 3 { // concurrent Closes all return once the goroutine is gone
		wg.Go(n.Close)
	}
	wg.Wait()
	select {
	case <-n.done:
	default:
		t.Fatal("Close returned before the receipt goroutine")
	}
	if err := <-waiting; !errors.Is(err, ErrClosed) {
		t.Errorf("Submit waiting during Close = %v; want ErrClosed", err)
	}
	if _, err := n.Submit(ctx, submission()); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after Close = %v; want ErrClosed", err)
	}
	if _, err := n.Query(ctx, id); !errors.Is(err, ErrClosed) {
		t.Errorf("Query after Close = %v; want ErrClosed", err)
	}
	n.Close() // idempotent
	if c.len() != 0 || n.Stats().Receipts != 0 {
		t.Errorf("%d receipts pushed; want the pending one dropped", c.len())
	}
	waitFor(t, 5*time.Second, "goroutines to end", func() bool { return runtime.NumGoroutine() <= goroutines })
}

func TestCloseStopsDelivery(t *testing.T) {
	// Receipts flow at full speed while Close lands; none may follow it.
	var afterClose atomic.Bool
	var late atomic.Uint64
	n, err := New(Options{Network: carriers.Safaricom, OnReceipt: func(Receipt) {
		if afterClose.Load() {
			late.Add(1)
		}
	}})
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				if _, err := n.Submit(context.Background(), submission()); errors.Is(err, ErrClosed) {
					return
				}
			}
		})
	}
	waitFor(t, 5*time.Second, "receipts to flow", func() bool { return n.Stats().Receipts > 1000 })
	n.Close()
	afterClose.Store(true)
	wg.Wait()
	if l := late.Load(); l > 0 {
		t.Errorf("%d receipts pushed after Close returned", l)
	}
}
