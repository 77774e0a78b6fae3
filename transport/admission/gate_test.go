package admission

import (
	"testing"
	"time"
)

// serveSlowReads serves one window of reads taking took each, a few at a time (never at the
// bound), through the gate.
func serveSlowReads(g *Gate, took time.Duration) {
	lane := g.lanes[Read]
	for range 4 {
		if g.Enter(Read) {
			g.Leave(Read, took)
		}
	}
	lane.windowStart.Store(time.Now().Add(-2 * lane.window).UnixNano()) // the next leave closes the window
	if g.Enter(Read) {
		g.Leave(Read, took)
	}
}

// Slow reads (a bulk run's read-back of deep pages) shrink the reads' bound to its floor; the
// writes' bound stays where it was, so a burst of quick sends that follows is not shed.
func TestGateSlowReadsDoNotShedWrites(t *testing.T) {
	g := NewGate(512, 250*time.Millisecond)
	for range 40 {
		serveSlowReads(g, time.Second)
	}
	if b := g.Bound(Read); b != floor {
		t.Fatalf("reads' bound %d after 40 windows of 1 s reads; want the floor %d", b, floor)
	}
	if b := g.Bound(Write); b != 512 {
		t.Fatalf("writes' bound %d after slow reads only; want the ceiling 512", b)
	}
	for i := range 64 {
		if !g.Enter(Write) {
			t.Fatalf("write %d of a burst of 64 refused after slow reads", i+1)
		}
	}
	for range floor {
		if !g.Enter(Read) {
			t.Fatal("a read refused under the reads' bound")
		}
	}
	if g.Enter(Read) {
		t.Fatalf("a read admitted over the reads' bound %d", floor)
	}
}

// The ceiling bounds every class together: each class's bound alone would let twice as many in.
func TestGateCeilingHoldsForAllClasses(t *testing.T) {
	g := NewGate(10, 250*time.Millisecond)
	for range 6 {
		if !g.Enter(Read) {
			t.Fatal("a read refused under the ceiling")
		}
	}
	for range 4 {
		if !g.Enter(Write) {
			t.Fatal("a write refused under the ceiling")
		}
	}
	if g.Enter(Write) || g.Enter(Read) {
		t.Fatal("an eleventh request admitted with a ceiling of 10")
	}
	if !g.lanes[Write].full.Load() || !g.lanes[Read].full.Load() {
		t.Error("a refusal at the ceiling did not count as demand over the class's bound")
	}
	g.Leave(Read, time.Millisecond)
	if !g.Enter(Write) {
		t.Fatal("a write refused after a read left")
	}
	g.Release(Write)
	if n := g.n.Load(); n != 9 {
		t.Fatalf("%d requests counted in after one left and one was released; want 9", n)
	}
	free := NewGate(0, 250*time.Millisecond)
	for range 10_000 {
		if !free.Enter(Read) || !free.Enter(Write) {
			t.Fatal("refused with no bound")
		}
	}
	if free.Bound(Read) != 0 || free.Bound(Write) != 0 {
		t.Error("no bound reads as a bound")
	}
}

func TestClassOfMethods(t *testing.T) {
	for method, want := range map[string]Class{"GET": Read, "HEAD": Read, "POST": Write, "PATCH": Write, "DELETE": Write, "PUT": Write, "": Write} {
		if got := ClassOf(method); got != want {
			t.Errorf("ClassOf(%q) = %v; want %v", method, got, want)
		}
	}
}
