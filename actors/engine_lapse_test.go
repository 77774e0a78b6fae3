package actors

import (
	"context"
	"testing"
	"time"
)

// The watchdog calls a gap in its beats a lapse, and the node is stale from the moment the
// gap passes the limit, before the watchdog's goroutine runs again.
func TestWatchdogNoticesAPause(t *testing.T) {
	w := newWatchdog(80 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lapses := make(chan time.Duration, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.run(ctx, func(gap time.Duration) { lapses <- gap })
	}()
	deadline := time.Now().Add(5 * time.Second)
	for w.beat.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the watchdog never beat")
		}
		time.Sleep(time.Millisecond)
	}
	if w.stale() {
		t.Fatal("stale while beating")
	}
	// A pause, as the process sees it: the last beat is long ago.
	for noticed := false; !noticed; {
		w.beat.Store(int64(time.Since(w.born) - time.Second))
		if !w.stale() {
			t.Fatal("not stale a second after the last beat")
		}
		select {
		case <-w.lapsed:
			noticed = true
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the watchdog did not notice the pause")
		}
	}
	select {
	case gap := <-lapses:
		if gap < 900*time.Millisecond {
			t.Fatalf("lapse after a gap of %s; want about 1s", gap)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watchdog did not notice the pause")
	}
	<-done // it stops beating: the node stays stale until it restarts
	if !w.stale() {
		t.Fatal("not stale after a lapse")
	}
}
