package smppserver

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/tuma-sms/tuma/persistence/redis"
	"github.com/tuma-sms/tuma/persistence/redis/redistest"
)

// An account's bucket holds a second of its rate, refills with time and is its own: another
// account is not slowed by it; a zero rate allows everything.
func TestThrottle(t *testing.T) {
	th := newThrottle(2, nil)
	a, b := uuid.New(), uuid.New()
	t0 := time.Unix(1_000, 0)
	for i, want := range []bool{true, true, false, false} {
		if got := th.allow(a, t0); got != want {
			t.Errorf("submit %d at once = %v; want %v", i+1, got, want)
		}
	}
	if !th.allow(b, t0) {
		t.Error("another account is throttled by the first")
	}
	if !th.allow(a, t0.Add(500*time.Millisecond)) || th.allow(a, t0.Add(500*time.Millisecond)) {
		t.Error("half a second at 2/s does not give back exactly one submit")
	}
	if th.allow(a, t0.Add(400*time.Millisecond)) { // a clock going back refills nothing
		t.Error("an earlier time refilled the bucket")
	}
	for i := 0; i < 2; i++ {
		if !th.allow(a, t0.Add(time.Hour)) {
			t.Errorf("after an hour idle, submit %d refused", i+1)
		}
	}
	if th.allow(a, t0.Add(time.Hour)) {
		t.Error("an idle hour gave more than a second's burst")
	}
	off := newThrottle(0, nil)
	for i := 0; i < 1000; i++ {
		if !off.allow(a, t0) {
			t.Fatal("rate 0 throttled")
		}
	}
}

// Past maxIdleBuckets accounts, the buckets of those idle a second or more are forgotten.
func TestThrottleForgetsIdleBuckets(t *testing.T) {
	th := newThrottle(5, nil)
	t0 := time.Unix(1_000, 0)
	for i := 0; i < maxIdleBuckets; i++ {
		th.allow(uuid.New(), t0)
	}
	busy := uuid.New()
	th.allow(busy, t0.Add(2*time.Second))
	th.allow(uuid.New(), t0.Add(2*time.Second))
	if n := len(th.buckets); n != 2 {
		t.Errorf("%d buckets kept; want the 2 used in the last second", n)
	}
}

// Two nodes' throttles on one Redis keep an account to its rate together: what they allow
// over a second and a bit is about one bucket's worth, not two.
func TestThrottleAcrossNodes(t *testing.T) {
	url, prefix := redistest.URL(t), redistest.Prefix()
	const rate = 20
	var nodes []*throttle
	for range 2 {
		c, err := redis.New(context.Background(), redis.Options{URL: url, Prefix: prefix}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		nodes = append(nodes, newThrottle(rate, redis.NewLimiter(c, 0)))
	}
	account := uuid.New()
	allowed := 0
	start := time.Now()
	for time.Since(start) < 1200*time.Millisecond {
		for _, th := range nodes {
			if th.allow(account, time.Now()) {
				allowed++
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	// A full bucket (20) and 1.2 s of refill (24), and a lease of 50 ms (1) per node beyond it.
	if allowed > 48 || allowed < 30 {
		t.Fatalf("two nodes allowed %d submits in 1.2 s at %d/s; want about 44 (one bucket shared), not 88", allowed, rate)
	}
}
