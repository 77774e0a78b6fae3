// Workers: the node's background loops (mail delivery, payment reconciliation, webhooks owed,
// dependency probes) as actors the engine supervises.

package actors

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Worker is background work the engine runs and restarts: Round does one pass (deliver the
// mail that is due, ask the payment provider about open checkouts, …) and reports whether
// more is waiting. The worker runs it again at once while there is, otherwise after Every or
// as soon as it is woken (Engine.Wake). A round that panics restarts the worker's actor,
// counted in tuma_actor_restarts_total{actor="worker"}, and the next round runs after Every.
type Worker struct {
	Name    string
	Every   time.Duration
	Timeout time.Duration // bounds one round (default 5 minutes)
	Round   func(ctx context.Context) (more bool, err error)
	// AtStart runs the first round as soon as the worker starts, not after Every: work an
	// earlier run left due (mail queued before a crash), state operators read at once (probes).
	AtStart bool
}

func (w *Worker) setDefaults() error {
	if w.Name == "" || w.Round == nil {
		return fmt.Errorf("a worker needs a name and a round")
	}
	if w.Every <= 0 {
		w.Every = time.Minute
	}
	if w.Timeout <= 0 {
		w.Timeout = 5 * time.Minute
	}
	return nil
}

// workerActor runs one Worker's rounds, one at a time, on goroutines the engine owns.
type workerActor struct {
	e      *Engine
	w      Worker
	st     *workerState
	timers timers
}

// workerState outlives the actor's incarnations: a round still running when the actor
// restarts reports to the successor.
type workerState struct {
	mu      sync.Mutex
	started bool // the first incarnation has started (AtStart is for it only)
	running bool // a round is under way
	woken   bool // a wake came while it was: run again when it ends
	inbox   inbox
}

type (
	workerTick  struct{}
	workerWake  struct{}
	roundResult struct {
		more  bool
		err   error
		panic any
		stack []byte
	}
)

func (a *workerActor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		a.takeInbox(ctx)
		if !a.st.isRunning() {
			first := a.w.Every
			if a.w.AtStart && !a.st.started {
				first = 0
			}
			a.st.started = true
			a.timers.after(a.e.root, ctx.Self(), first, &workerTick{})
		}
	case *actor.Restarting, *actor.Stopping:
		a.timers.stop()
	case *inboxPoke:
		a.takeInbox(ctx)
	case *workerTick:
		a.run(ctx)
	case *workerWake:
		a.st.mu.Lock()
		running := a.st.running
		a.st.woken = running
		a.st.mu.Unlock()
		if !running {
			a.run(ctx)
		}
	case *panicNow:
		panic(a.w.Name + ": panic requested")
	}
}

func (s *workerState) isRunning() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// run starts a round unless one is under way or the engine is stopping its workers.
func (a *workerActor) run(ctx actor.Context) {
	st := a.st
	st.mu.Lock()
	if st.running {
		st.mu.Unlock()
		return
	}
	st.running, st.woken = true, false
	st.mu.Unlock()
	self, root, w := ctx.Self(), a.e.root, a.w
	if !a.e.goWorker(w.Timeout, func(c context.Context) {
		res := &roundResult{}
		func() {
			defer func() {
				if p := recover(); p != nil {
					res.panic, res.stack = p, debug.Stack()
				}
			}()
			res.more, res.err = w.Round(c)
		}()
		st.inbox.put(root, self, res)
	}) {
		st.mu.Lock()
		st.running = false
		st.mu.Unlock()
	}
}

func (a *workerActor) takeInbox(ctx actor.Context) {
	for _, m := range a.st.inbox.take() {
		res := m.(*roundResult)
		a.st.mu.Lock()
		a.st.running = false
		again := res.more || a.st.woken
		a.st.mu.Unlock()
		if res.panic != nil {
			// Fail the actor itself, so its supervisor restarts it (and counts it): the next
			// incarnation starts the rounds afresh after Every.
			a.e.log.Error("worker round panicked", slog.String("worker", a.w.Name), slog.Any("panic", res.panic),
				slog.String("stack", string(res.stack)))
			panic(fmt.Sprintf("%s: round panicked: %v", a.w.Name, res.panic))
		}
		if res.err != nil && a.e.workLife.Err() == nil {
			a.e.log.Error("worker round failed", slog.String("worker", a.w.Name), slog.Any("error", res.err))
		}
		if again && res.err == nil {
			a.run(ctx)
			continue
		}
		a.timers.after(a.e.root, ctx.Self(), a.w.Every, &workerTick{})
	}
}
