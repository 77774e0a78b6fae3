package actors

import (
	"testing"
	"time"
)

func TestYieldingHoldsWhileBulkAcceptsAndAtMostHalfTheTime(t *testing.T) {
	const yieldFor = 10 * time.Millisecond
	t0 := time.Unix(1_800_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var y yielding
	if y.hold(at(0), 0, yieldFor) {
		t.Fatal("held with no bulk send being accepted")
	}
	if y.hold(at(0), 1, 0) {
		t.Fatal("held with yielding turned off (0)")
	}
	// A bulk accept that never ends: held for yieldFor, then free for yieldFor, and so on.
	held := 0
	for ms := 0; ms < 100; ms++ {
		if y.hold(at(ms), 1, yieldFor) {
			held++
		}
	}
	if held < 40 || held > 50 {
		t.Fatalf("held %d of 100 ms under an endless bulk accept; want about half, never more", held)
	}
	// It ends: no hold, and the next accept is held at once.
	var z yielding
	if !z.hold(at(0), 1, yieldFor) || z.hold(at(1), 0, yieldFor) || !z.hold(at(2), 2, yieldFor) {
		t.Fatal("want a hold while accepting, none after, and a hold again for the next accept")
	}
}
