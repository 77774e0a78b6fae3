package actors

import (
	"testing"
	"time"
)

func TestSharedPaceTakesSlotsOnTime(t *testing.T) {
	sp := newSharedPace("safaricom", 100) // a slot every 10 ms
	now := time.Now()
	if at, ok := sp.take(now); ok || !at.IsZero() {
		t.Fatalf("with no slots: take = %v, %v; want to ask", at, ok)
	}
	sp.next, sp.left = now.Add(5*time.Millisecond), 3
	if at, ok := sp.take(now); ok || !at.Equal(now.Add(5*time.Millisecond)) {
		t.Fatalf("before the first slot: take = %v, %v; want to wait for it", at.Sub(now), ok)
	}
	if _, ok := sp.take(now.Add(5 * time.Millisecond)); !ok {
		t.Fatal("the first slot, on time, was refused")
	}
	if at, ok := sp.take(now.Add(6 * time.Millisecond)); ok || !at.Equal(now.Add(15*time.Millisecond)) {
		t.Fatalf("between slots: take = %v, %v; want to wait for the second", at.Sub(now), ok)
	}
	// 60 ms late for the second slot (15 ms): it and the third (25 ms) are past slotLateness
	// and dropped rather than sent together with whatever comes next.
	if at, ok := sp.take(now.Add(75 * time.Millisecond)); ok || !at.IsZero() || sp.left != 0 {
		t.Fatalf("late: take = %v, %v with %d left; want both late slots dropped and a new ask", at, ok, sp.left)
	}
	sp.askAfter = now.Add(90 * time.Millisecond)
	if at, ok := sp.take(now.Add(80 * time.Millisecond)); ok || !at.Equal(sp.askAfter) {
		t.Fatalf("after an empty answer: take = %v, %v; want to ask again at %v", at, ok, sp.askAfter)
	}
	sp.asking = true
	if at, ok := sp.take(now.Add(95 * time.Millisecond)); ok || !at.IsZero() {
		t.Fatalf("while asking: take = %v, %v; want to wait for the answer", at, ok)
	}
}
