package smppserver

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// An account's bucket holds a second of its rate, refills with time and is its own: another
// account is not slowed by it; a zero rate allows everything.
func TestThrottle(t *testing.T) {
	th := newThrottle(2)
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
	off := newThrottle(0)
	for i := 0; i < 1000; i++ {
		if !off.allow(a, t0) {
			t.Fatal("rate 0 throttled")
		}
	}
}

// Past maxIdleBuckets accounts, the buckets of those idle a second or more are forgotten.
func TestThrottleForgetsIdleBuckets(t *testing.T) {
	th := newThrottle(5)
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
