package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

// BenchmarkSubmit is the hot path: parallel submits, zero latency, receipts
// due at once and flowing to a no-op OnReceipt.
func BenchmarkSubmit(b *testing.B) {
	n := newNetwork(b, Options{Network: carriers.Safaricom, OnReceipt: func(Receipt) {}})
	s := submission()
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := n.Submit(ctx, s); err != nil {
				b.Error(err)
				return
			}
		}
	})
	// Receipts still pending when the submits end are part of the cost.
	waitFor(b, time.Minute, "receipts", func() bool { st := n.Stats(); return st.Receipts == st.Accepted })
}

// BenchmarkSubmitSerial is one submitter, as a link with a window of one.
func BenchmarkSubmitSerial(b *testing.B) {
	n := newNetwork(b, Options{Network: carriers.Safaricom, OnReceipt: func(Receipt) {}})
	s := submission()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := n.Submit(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSubmitPending keeps receipts pending (a 1-minute delay), so the
// heap grows with every submit.
func BenchmarkSubmitPending(b *testing.B) {
	n := newNetwork(b, Options{
		Network: carriers.Safaricom, ReceiptDelay: time.Minute, ReceiptJitter: time.Second,
		OnReceipt: func(Receipt) {},
	})
	s := submission()
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := n.Submit(ctx, s); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkSubmitThrottled is the cost of a throttled answer, which a link
// hammering a TPS cap pays most often.
func BenchmarkSubmitThrottled(b *testing.B) {
	n := newNetwork(b, Options{Network: carriers.Safaricom, TPS: 1e-9})
	s := submission()
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := n.Submit(ctx, s); err != nil && !errors.Is(err, ErrThrottled) {
				b.Error(err) // only the first is accepted; the rest throttled
				return
			}
		}
	})
}

func BenchmarkQuery(b *testing.B) {
	n := newNetwork(b, Options{Network: carriers.Safaricom})
	id, err := n.Submit(context.Background(), submission())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := n.Query(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}
