package actors_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/actors"
)

// counter is a worker round that counts its calls, panics on the call named panicOn, reports
// more work for the first moreFor calls, and blocks in the call named blockOn until its
// context ends.
type counter struct {
	calls, cancelled atomic.Int64
	panicOn, blockOn int64
	panicUntil       int64 // every call up to this one panics
	moreFor          int64
}

func (c *counter) round(ctx context.Context) (bool, error) {
	n := c.calls.Add(1)
	if n == c.panicOn || n <= c.panicUntil {
		panic("round panics")
	}
	if n == c.blockOn {
		<-ctx.Done()
		c.cancelled.Add(1)
		return false, ctx.Err()
	}
	return n <= c.moreFor, nil
}

// A worker runs its rounds every so often, at once while there is more, and at once when
// woken.
func TestWorkerRunsRoundsWhenDueMoreAndWoken(t *testing.T) {
	c := &counter{moreFor: 5}
	w := newWorld(t, actors.Options{}, nil)
	w.addWorker(actors.Worker{Name: "count", Every: time.Hour, Round: c.round})
	w.eng.Wake("count")
	// The woken round reports more work five times: six rounds without waiting the hour.
	eventually(t, 10*time.Second, "the rounds with more work", func() (bool, string) {
		return c.calls.Load() == 6, fmt.Sprint(c.calls.Load())
	})
	w.eng.Wake("count")
	eventually(t, 10*time.Second, "a woken round", func() (bool, string) { return c.calls.Load() == 7, fmt.Sprint(c.calls.Load()) })
	w.eng.Wake("no-such-worker")      // ignored
	time.Sleep(50 * time.Millisecond) // nothing is due for an hour: no round may run by itself
	if n := c.calls.Load(); n != 7 {
		t.Errorf("%d rounds; want 7 (no round is due before an hour)", n)
	}
}

// AtStart runs the first round at once, however long Every is.
func TestWorkerAtStart(t *testing.T) {
	c := &counter{}
	w := newWorld(t, actors.Options{}, nil)
	w.addWorker(actors.Worker{Name: "count", Every: time.Hour, Round: c.round, AtStart: true})
	eventually(t, 10*time.Second, "the first round", func() (bool, string) { return c.calls.Load() == 1, fmt.Sprint(c.calls.Load()) })
}

// A round that panics restarts the worker's actor, counted, and the rounds go on.
func TestWorkerPanicRestartsIt(t *testing.T) {
	c := &counter{panicOn: 2}
	w := newWorld(t, actors.Options{}, nil)
	w.addWorker(actors.Worker{Name: "count", Every: 20 * time.Millisecond, Round: c.round})
	eventually(t, 10*time.Second, "the restart", func() (bool, string) {
		n := w.metric("tuma_actor_restarts_total", map[string]string{"kind": "worker"})
		return n == 1, fmt.Sprint(n)
	})
	eventually(t, 10*time.Second, "rounds after the restart", func() (bool, string) {
		return c.calls.Load() >= 5, fmt.Sprint(c.calls.Load())
	})
}

// A fixed actor is never given up on: one that panics again and again (here fifteen times in a
// row, past protoactor's default of ten in ten seconds, after which a top-level actor is
// stopped for good) is restarted with a growing pause, and works once its fault passes.
func TestWorkerPanickingRepeatedlyIsNeverStopped(t *testing.T) {
	c := &counter{panicUntil: 15}
	w := newWorld(t, actors.Options{}, nil)
	w.addWorker(actors.Worker{Name: "count", Every: time.Millisecond, Round: c.round, AtStart: true})
	eventually(t, 60*time.Second, "rounds after fifteen panics", func() (bool, string) {
		return c.calls.Load() >= 20, fmt.Sprint(c.calls.Load(), " calls")
	})
	if n := w.metric("tuma_actor_restarts_total", map[string]string{"kind": "worker"}); n < 15 {
		t.Errorf("%v restarts counted; want the fifteen", n)
	}
}

// Stopping the engine ends a round under way (its context is cancelled) and runs no more.
func TestWorkerStopsWithTheEngine(t *testing.T) {
	c := &counter{blockOn: 1}
	w := newWorld(t, actors.Options{}, nil)
	w.addWorker(actors.Worker{Name: "count", Every: time.Millisecond, Round: c.round})
	eventually(t, 10*time.Second, "the first round", func() (bool, string) { return c.calls.Load() == 1, fmt.Sprint(c.calls.Load()) })
	done := make(chan error, 1)
	go func() { done <- w.eng.Stop(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stop waited for a round that blocks until cancelled")
	}
	if c.cancelled.Load() != 1 {
		t.Errorf("the round under way was not cancelled")
	}
	n := c.calls.Load()
	time.Sleep(20 * time.Millisecond) // a stopped worker would have run several rounds by now
	if c.calls.Load() != n {
		t.Errorf("rounds ran after Stop: %d, then %d", n, c.calls.Load())
	}
}

// Two workers of one name are refused, and so is a worker once the engine stopped.
func TestWorkerNamesAreUnique(t *testing.T) {
	c := &counter{}
	w := newWorld(t, actors.Options{}, nil)
	w.addWorker(actors.Worker{Name: "x", Every: time.Hour, Round: c.round})
	if err := w.eng.AddWorker(actors.Worker{Name: "x", Round: c.round}); err == nil {
		t.Error("a second worker called x was added")
	}
	if err := w.eng.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.eng.AddWorker(actors.Worker{Name: "y", Round: c.round}); err == nil {
		t.Error("a worker was added to a stopped engine")
	}
}

func (w *world) addWorker(wk actors.Worker) {
	w.t.Helper()
	if err := w.eng.AddWorker(wk); err != nil {
		w.t.Fatal(err)
	}
}
