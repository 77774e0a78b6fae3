package admission

import (
	"sync"
	"testing"
	"time"
)

func TestAdmissionBoundsRequestsAtOnce(t *testing.T) {
	a := New(3, 0)
	for i := range 3 {
		if !a.Enter() {
			t.Fatalf("request %d refused under the bound", i+1)
		}
	}
	if a.Enter() {
		t.Fatal("a fourth request admitted with a bound of 3")
	}
	a.Leave(time.Millisecond)
	if !a.Enter() {
		t.Fatal("a request refused after one left")
	}
	// Concurrent enters never admit more than the bound.
	b := New(10, 0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admittedN := 0
	for range 100 {
		wg.Go(func() {
			if b.Enter() {
				mu.Lock()
				admittedN++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if admittedN != 10 {
		t.Errorf("%d of 100 concurrent requests admitted; want exactly the bound, 10", admittedN)
	}
}

func TestAdmissionZeroIsNoBound(t *testing.T) {
	a := New(0, 250*time.Millisecond)
	for i := range 10_000 {
		if !a.Enter() {
			t.Fatalf("request %d refused with no bound", i+1)
		}
	}
	if a.Bound() != 0 {
		t.Errorf("bound %d; want 0 (none)", a.Bound())
	}
}

// serveWindow serves one window of requests of the given latency, filling the bound first
// when full is set, and returns the bound after the window closed.
func serveWindow(a *Controller, took time.Duration, full bool) int64 {
	if full {
		for a.Enter() {
		}
		for a.n.Load() > 0 {
			a.Leave(took)
		}
	} else if a.Enter() {
		a.Leave(took)
	}
	a.windowStart.Store(time.Now().Add(-2 * a.window).UnixNano()) // the next leave closes the window
	if a.Enter() {
		a.Leave(took)
	}
	return a.Bound()
}

// Slow requests shrink the bound to its floor; fast ones at the bound grow it back to the
// ceiling, and a fixed bound (no target) never moves.
func TestAdmissionAdaptsToLatency(t *testing.T) {
	a := New(512, 100*time.Millisecond)
	prev := a.Bound()
	for range 40 {
		b := serveWindow(a, time.Second, false)
		if b > prev {
			t.Fatalf("bound grew from %d to %d while requests took 1 s", prev, b)
		}
		prev = b
	}
	if prev != floor {
		t.Fatalf("bound %d after 40 slow windows; want the floor %d", prev, floor)
	}
	for range 200 {
		b := serveWindow(a, time.Millisecond, true)
		if b < prev {
			t.Fatalf("bound fell from %d to %d while requests took 1 ms", prev, b)
		}
		prev = b
	}
	if prev != 512 {
		t.Fatalf("bound %d after 200 fast full windows; want the ceiling 512", prev)
	}
	// Fast but not full: no reason to grow past what is used, nor to shrink.
	a.limit.Store(100)
	if b := serveWindow(a, time.Millisecond, false); b != 100 {
		t.Errorf("bound %d after a fast window that never reached it; want 100 unchanged", b)
	}
	fixed := New(64, 0)
	if b := serveWindow(fixed, time.Minute, true); b != 64 {
		t.Errorf("a fixed bound moved to %d", b)
	}
}

// A storm at a high ceiling, seen before any of its requests finished: 480 requests in
// flight while the node finishes 500 in 100 ms (5,000/s) means a wait of about 100 ms, past
// the 20 ms target, although the requests that finished were quick. The bound falls at once
// to what the node serves within the target, 5,000/s × 20 ms = 100, not a quarter off 512.
func TestAdmissionMeetsAStormInOneWindow(t *testing.T) {
	a := New(512, 20*time.Millisecond)
	a.windowStart.Store(time.Now().UnixNano())
	for range 480 {
		if !a.Enter() {
			t.Fatal("refused under the ceiling")
		}
	}
	for range 499 {
		a.Enter()
		a.Leave(5 * time.Millisecond)
	}
	// The storm is refused at the bound as well; the 500th request closes the window at 100 ms.
	a.full.Store(true)
	a.windowStart.Store(time.Now().Add(-a.window).UnixNano())
	a.Enter()
	a.Leave(5 * time.Millisecond)
	if b := a.Bound(); b < 90 || b > 100 {
		t.Fatalf("bound %d with 480 waiting on 5,000 requests/s, target 20 ms; want about 100", b)
	}
	// An idle node whose first request in a while is quick keeps its bound: the long window
	// says nothing about the rate.
	idle := New(512, 20*time.Millisecond)
	idle.windowStart.Store(time.Now().Add(-10 * time.Second).UnixNano())
	for range 20 {
		idle.Enter()
	}
	idle.Leave(time.Millisecond)
	if b := idle.Bound(); b != 512 {
		t.Errorf("bound %d after a quick request closed a 10 s idle window; want 512", b)
	}
	// A burst of 300 quick requests into a quiet window, under the bound, is served, not shed.
	burst := New(512, 20*time.Millisecond)
	burst.windowStart.Store(time.Now().UnixNano())
	for range 300 {
		burst.Enter()
	}
	burst.windowStart.Store(time.Now().Add(-burst.window).UnixNano())
	burst.Leave(time.Millisecond)
	if b := burst.Bound(); b != 512 {
		t.Errorf("bound %d after a burst of 300 quick requests under the bound; want 512", b)
	}
}

// A bound left at its floor by a few slow requests opens up within a few windows when quick
// requests fill it again, instead of shedding them for seconds; near the target it creeps.
func TestAdmissionRecoversQuicklyFromTheFloor(t *testing.T) {
	a := New(512, 250*time.Millisecond)
	a.limit.Store(floor)
	windows := 0
	for a.Bound() < 64 {
		serveWindow(a, 15*time.Millisecond, true)
		if windows++; windows > 4 {
			t.Fatalf("bound %d after %d full windows of 15 ms requests; want ≥ 64 within 4", a.Bound(), windows)
		}
	}
	// Saturated at the floor by 1 ms requests, 800 served in the 100 ms window (8,000/s): the
	// node serves 2,000 within the 250 ms target, so the bound is the ceiling after one window.
	a.limit.Store(floor)
	a.windowStart.Store(time.Now().UnixNano())
	for range 799 {
		a.Enter()
		a.Leave(time.Millisecond)
	}
	a.full.Store(true)
	a.windowStart.Store(time.Now().Add(-a.window).UnixNano())
	a.Enter()
	a.Leave(time.Millisecond)
	if b := a.Bound(); b != 512 {
		t.Errorf("bound %d after one saturated window of 8,000 quick requests/s; want the ceiling 512", b)
	}
	a.limit.Store(100)
	if b := serveWindow(a, 200*time.Millisecond, true); b != 105 {
		t.Errorf("bound %d after a full window at 200 ms of a 250 ms target; want 105 (a twentieth more)", b)
	}
}

// A burst after a quiet spell, at a bound left at its floor: the window that saw the quiet
// restarts when the burst first reaches the bound, so its close measures the burst's rate and
// opens the bound in one window (a window begun idle would only double it).
func TestAdmissionBurstAfterQuietRestartsTheWindow(t *testing.T) {
	a := New(512, 250*time.Millisecond)
	a.limit.Store(floor)
	a.windowStart.Store(time.Now().Add(-10 * time.Second).UnixNano())
	a.served.Store(5)
	for range floor {
		if !a.Enter() {
			t.Fatal("refused under the bound")
		}
	}
	if a.Enter() {
		t.Fatal("admitted over the bound")
	}
	if age := time.Since(time.Unix(0, a.windowStart.Load())); age > time.Second {
		t.Fatalf("window began %v ago after the burst reached the bound; want it restarted", age)
	}
	if n := a.served.Load(); n != 0 {
		t.Fatalf("%d requests of the quiet spell still count in the restarted window", n)
	}
	for a.n.Load() > 0 {
		a.Leave(time.Millisecond)
	}
	for range 799 - floor {
		a.Enter()
		a.Leave(time.Millisecond)
	}
	a.windowStart.Store(time.Now().Add(-a.window).UnixNano())
	a.Enter()
	a.Leave(time.Millisecond)
	if b := a.Bound(); b != 512 {
		t.Errorf("bound %d one window into a burst of 8,000 quick requests/s; want the ceiling 512", b)
	}
}
