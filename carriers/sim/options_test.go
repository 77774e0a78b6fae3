package sim

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

func TestNewRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"no network", Options{}},
		{"unknown network", Options{Network: carriers.Network(9)}},
		{"negative latency", Options{Network: carriers.Safaricom, Latency: -1}},
		{"negative jitter", Options{Network: carriers.Safaricom, Jitter: -1}},
		{"negative receipt delay", Options{Network: carriers.Safaricom, ReceiptDelay: -1}},
		{"negative receipt jitter", Options{Network: carriers.Safaricom, ReceiptJitter: -time.Second}},
		{"receipt delay too long", Options{Network: carriers.Safaricom, ReceiptDelay: 8 * 24 * time.Hour}},
		{"receipt delay+jitter too long", Options{Network: carriers.Safaricom, ReceiptDelay: 4 * 24 * time.Hour, ReceiptJitter: 4 * 24 * time.Hour}},
		{"jitter overflow", Options{Network: carriers.Safaricom, ReceiptDelay: time.Hour, ReceiptJitter: math.MaxInt64}},
		{"negative TPS", Options{Network: carriers.Safaricom, TPS: -1}},
		{"infinite TPS", Options{Network: carriers.Safaricom, TPS: math.Inf(1)}},
		{"NaN TPS", Options{Network: carriers.Safaricom, TPS: math.NaN()}},
		{"failure rate above 1", Options{Network: carriers.Safaricom, FailureRate: 1.1}},
		{"negative reject rate", Options{Network: carriers.Safaricom, RejectRate: -0.1}},
		{"NaN throttle rate", Options{Network: carriers.Safaricom, ThrottleRate: math.NaN()}},
		{"negative weight", Options{Network: carriers.Safaricom, Delivered: 1, Expired: -1}},
		{"infinite weight", Options{Network: carriers.Safaricom, Rejected: math.Inf(1)}},
		{"weights overflow", Options{Network: carriers.Safaricom, Delivered: math.MaxFloat64, Rejected: math.MaxFloat64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := New(tt.opts)
			if err == nil {
				n.Close()
				t.Fatalf("New(%+v) = nil error; want one", tt.opts)
			}
		})
	}
}

func TestConfigure(t *testing.T) {
	ctx := context.Background()
	base := Options{Network: carriers.Safaricom}
	n := newNetwork(t, base)

	delivered, err := n.Submit(ctx, submission())
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}

	steps := []struct {
		name    string
		opts    Options
		wantErr error // of Submit after the change; nil means accepted
		wantFix bool  // Configure itself fails
	}{
		{"always fail", Options{FailureRate: 1}, ErrTemporary, false},
		{"invalid keeps previous", Options{FailureRate: 2}, ErrTemporary, true},
		{"other network refused", Options{Network: carriers.Airtel}, ErrTemporary, true},
		{"always reject", Options{Network: carriers.Safaricom, RejectRate: 1}, ErrRejected, false},
		{"always throttle", Options{ThrottleRate: 1}, ErrThrottled, false},
		{"back to normal, all expire", Options{Expired: 1}, nil, false},
	}
	for _, st := range steps {
		err := n.Configure(st.opts)
		if (err != nil) != st.wantFix {
			t.Fatalf("%s: Configure(%+v) = %v; want error %t", st.name, st.opts, err, st.wantFix)
		}
		for range 20 {
			if _, err := n.Submit(ctx, submission()); !errors.Is(err, st.wantErr) {
				t.Fatalf("%s: Submit = %v; want %v", st.name, err, st.wantErr)
			}
		}
	}

	// The first message was delivered under the old mix and stays so.
	r, err := n.Query(ctx, delivered)
	if err != nil || r.State != Delivered {
		t.Errorf("Query(%q) = %+v, %v; want delivered as decided at submit", delivered, r, err)
	}
	id, err := n.Submit(ctx, submission())
	if err != nil {
		t.Fatalf("Submit = %v", err)
	}
	if r, err := n.Query(ctx, id); err != nil || r.ProviderStatus != "EXPIRED" {
		t.Errorf("Query(%q) = %+v, %v; want EXPIRED under the new mix", id, r, err)
	}

	// TPS: a bucket of one token throttles the second of two quick submits.
	if err := n.Configure(Options{TPS: 0.001}); err != nil {
		t.Fatalf("Configure = %v", err)
	}
	_, err1 := n.Submit(ctx, submission())
	_, err2 := n.Submit(ctx, submission())
	if err1 != nil || !errors.Is(err2, ErrThrottled) {
		t.Errorf("two submits at TPS 0.001 = %v, %v; want nil, ErrThrottled", err1, err2)
	}

	// Latency applies to later submits.
	if err := n.Configure(Options{Latency: 30 * time.Millisecond}); err != nil {
		t.Fatalf("Configure = %v", err)
	}
	start := time.Now()
	if _, err := n.Submit(ctx, submission()); err != nil {
		t.Fatalf("Submit = %v", err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("Submit took %v; want the new latency of 30ms", d)
	}
}

func TestConfigureConcurrentWithSubmit(t *testing.T) {
	n := newNetwork(t, Options{Network: carriers.Safaricom, OnReceipt: func(Receipt) {}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := n.Submit(ctx, submission()); err != nil && !errors.Is(err, ErrTemporary) &&
					!errors.Is(err, ErrThrottled) && !errors.Is(err, context.Canceled) {
					t.Errorf("Submit = %v", err)
					return
				}
			}
		})
	}
	for i := range 200 {
		if err := n.Configure(Options{FailureRate: float64(i%2) / 2, TPS: float64(i % 3 * 1000)}); err != nil {
			t.Fatalf("Configure = %v", err)
		}
	}
	cancel()
	wg.Wait()
}
