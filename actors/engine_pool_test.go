package actors

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// A pool must never make one function wait for another: mailboxes block on nothing, but goIO
// functions wait on the database, and a send must not queue behind them.
func TestPoolNeverQueues(t *testing.T) {
	p := newPool(time.Minute, 1)
	defer p.close()
	close(blockedBurst(t, p, 50))
}

// blockedBurst schedules n functions that each wait for the returned channel to close, and
// waits for all n to be running at once.
func blockedBurst(t *testing.T, p *pool, n int) chan struct{} {
	t.Helper()
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	for range n {
		p.Schedule(func() {
			started.Done()
			<-release
		})
	}
	waitGroupDone(t, &started, "all blocked functions to start")
	return release
}

// A goroutine that finished takes the next function instead of a new one starting.
func TestPoolKeepsGoroutines(t *testing.T) {
	p := newPool(time.Minute, 1)
	defer p.close()
	for range 1000 {
		ran := make(chan struct{})
		p.Schedule(func() { close(ran) })
		<-ran
	}
	// The goroutine closing ran may not be waiting yet when the next Schedule comes, so a
	// few may start; a goroutine per function would be 1,000.
	if n := p.started.Load(); n > 10 {
		t.Fatalf("1,000 sequential functions started %d goroutines; want a few kept", n)
	}
}

// Idle goroutines exit after the idle time, and close waits for running ones.
func TestPoolIdleExitAndClose(t *testing.T) {
	p := newPool(20*time.Millisecond, 1)
	before := runtime.NumGoroutine()
	var done sync.WaitGroup
	done.Add(10)
	for range 10 {
		p.Schedule(done.Done)
	}
	waitGroupDone(t, &done, "the functions")
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines still kept after the idle time", runtime.NumGoroutine()-before)
		}
		time.Sleep(5 * time.Millisecond)
	}

	release, finished := make(chan struct{}), make(chan struct{})
	p.Schedule(func() { <-release; close(finished) })
	closed := make(chan struct{})
	go func() { p.close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("close returned while a function was still running")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-closed
	select {
	case <-finished:
	default:
		t.Fatal("close returned before the running function finished")
	}
	// After close, work still runs (stopping actors' last system messages).
	ran := make(chan struct{})
	p.Schedule(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a function scheduled after close never ran")
	}
}

func waitGroupDone(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// The goroutines a burst started exit once it is over, even while a trickle of work keeps
// coming: the trickle goes to the goroutine idle the shortest time, so the others time out.
// (Handed out in turn, work every idle/n kept all n alive for good: the overload drill's 45
// goroutines that never went.)
func TestPoolShrinksUnderATrickle(t *testing.T) {
	const idle = 200 * time.Millisecond
	p := newPool(idle, 1)
	defer p.close()
	before := runtime.NumGoroutine()
	const n = 50
	close(blockedBurst(t, p, n))

	// A function every millisecond, one at a time: far more often than idle/n.
	deadline := time.Now().Add(5 * time.Second)
	for {
		for range 100 {
			ran := make(chan struct{})
			p.Schedule(func() { close(ran) })
			<-ran
			time.Sleep(time.Millisecond)
		}
		extra := runtime.NumGoroutine() - before
		if extra <= 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines of a burst of %d still kept %s after it, under a trickle of work", extra, n, 5*time.Second)
		}
	}
}

// BenchmarkPoolSchedule is a function handed to a kept goroutine and waited for, from two
// senders at once (mailboxes scheduling each other).
func BenchmarkPoolSchedule(b *testing.B) {
	p := newPool(5*time.Second, 1)
	defer p.close()
	b.RunParallel(func(pb *testing.PB) {
		var wg sync.WaitGroup
		for pb.Next() {
			wg.Add(1)
			p.Schedule(wg.Done)
			wg.Wait()
		}
	})
}
