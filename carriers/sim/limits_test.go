package sim

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

func TestTPSCap(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs for 1.5 s")
	}
	const (
		tps     = 200.0
		burst   = tps / 10
		workers = 8
		run     = 1500 * time.Millisecond
	)
	n := newNetwork(t, Options{Network: carriers.Safaricom, TPS: tps, OnReceipt: func(Receipt) {}})
	var wg sync.WaitGroup
	var errs atomic.Uint64
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for time.Since(start) < run {
				if _, err := n.Submit(context.Background(), submission()); err != nil && !errors.Is(err, ErrThrottled) {
					errs.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	st := n.Stats()
	t.Logf("%.2fs: %+v", elapsed, st)
	if errs.Load() > 0 {
		t.Errorf("%d submits failed other than ErrThrottled", errs.Load())
	}
	// The bucket starts full, so burst more than the rate may go through.
	low, high := 0.97*tps*elapsed, 1.01*tps*elapsed+burst
	if a := float64(st.Accepted); a < low || a > high {
		t.Errorf("accepted %d in %.2fs (%.1f/s); want in [%.0f, %.0f]", st.Accepted, elapsed, a/elapsed, low, high)
	}
	if st.Throttled == 0 || st.Throttled+st.Accepted != st.Submits {
		t.Errorf("Stats() = %+v; want the rest throttled", st)
	}
	if st.MaxRate > 1.05*tps+burst || st.MaxRate < 0.95*tps {
		t.Errorf("MaxRate = %.0f; want about %.0f, at most %.0f", st.MaxRate, tps, 1.05*tps+burst)
	}
}

func TestRateWindow(t *testing.T) {
	ms := int64(time.Millisecond)
	tests := []struct {
		name   string
		events []int64 // times in ms
		want   uint64
	}{
		{"none", nil, 0},
		{"one", []int64{5}, 1},
		{"spread over two seconds", []int64{0, 500, 1000, 1500, 2000}, 2},
		{"burst at the edge", []int64{0, 0, 0, 995, 995, 1005}, 5},
		{"just over a second apart", []int64{0, 0, 1010, 1010}, 2},
		{"gap longer than the window", []int64{0, 5000, 5001, 9000}, 2},
		{"late event counts in the newest slot", []int64{100, 50}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w rateWindow
			for _, e := range tt.events {
				w.add(e * ms)
			}
			if w.max != tt.want {
				t.Errorf("max after %v = %d; want %d", tt.events, w.max, tt.want)
			}
		})
	}
}
