package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

func TestLatency(t *testing.T) {
	const latency, jitter = 40 * time.Millisecond, 20 * time.Millisecond
	tests := []struct {
		name    string
		opts    Options
		wantErr error
		slow    bool // answers after the latency
	}{
		{"accepted", Options{}, nil, true},
		{"temporary", Options{FailureRate: 1}, ErrTemporary, true},
		{"rejected", Options{RejectRate: 1}, ErrRejected, true},
		{"throttled", Options{ThrottleRate: 1}, ErrThrottled, false},
		{"over TPS", Options{TPS: 1e-9}, ErrThrottled, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Network, opts.Latency, opts.Jitter = carriers.Safaricom, latency, jitter
			n := newNetwork(t, opts)
			if tt.opts.TPS > 0 {
				// Spend the one token the bucket starts with, then measure.
				if _, err := n.Submit(context.Background(), submission()); err != nil {
					t.Fatalf("first Submit = %v", err)
				}
			}
			start := time.Now()
			_, err := n.Submit(context.Background(), submission())
			d := time.Since(start)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Submit = %v; want %v", err, tt.wantErr)
			}
			if tt.slow && d < latency {
				t.Errorf("Submit answered in %v; want at least %v", d, latency)
			}
			if !tt.slow && d >= latency {
				t.Errorf("Submit answered in %v; want at once", d)
			}
		})
	}
}
