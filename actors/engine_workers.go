// The engine's side of its workers: adding and waking them, and the goroutines their rounds
// run on, which stop before the rest of the engine.

package actors

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// AddWorker starts running w under the engine's supervision until the engine stops. Its first
// round is due after w.Every (or when woken).
func (e *Engine) AddWorker(w Worker) error {
	if err := w.setDefaults(); err != nil {
		return err
	}
	e.workMu.Lock()
	defer e.workMu.Unlock()
	if e.workLife.Err() != nil {
		return ErrStopping
	}
	if _, dup := e.workerPIDs[w.Name]; dup {
		return fmt.Errorf("a worker called %s runs already", w.Name)
	}
	pid := actor.NewPID(e.sys.Address(), "engine/worker-"+w.Name)
	e.workerPIDs[w.Name] = pid
	st := &workerState{}
	spawnFixed(e, pid, func() actor.Actor { return &workerActor{e: e, w: w, st: st} })
	return nil
}

// Wake makes the named worker run a round now (or right after the one under way).
func (e *Engine) Wake(name string) {
	e.workMu.Lock()
	pid, ok := e.workerPIDs[name]
	e.workMu.Unlock()
	if ok {
		e.root.Send(pid, &workerWake{})
	}
}

// goWorker runs a worker's round on a goroutine the engine owns, with a context that
// stopping the workers cancels; false when they are stopped already.
func (e *Engine) goWorker(timeout time.Duration, f func(ctx context.Context)) bool {
	e.workMu.Lock()
	defer e.workMu.Unlock()
	if e.workLife.Err() != nil || e.lapsed() {
		return false
	}
	e.work.Add(1)
	go func() {
		defer e.work.Done()
		ctx, cancel := context.WithTimeout(e.workLife, timeout)
		defer cancel()
		f(ctx)
	}()
	return true
}

// stopWorkers cancels the rounds under way and waits for them: workers stop first, so what
// they hand the engine (a payment's credit) is still taken while they finish.
func (e *Engine) stopWorkers() {
	e.workMu.Lock()
	e.workStop()
	e.workMu.Unlock()
	e.work.Wait()
}

// HoldLease takes or renews the named worker lease for this node (persistence.HoldLease) and
// shows whether it holds it in tuma_cluster_lease_held.
func (e *Engine) HoldLease(ctx context.Context, name string, ttl time.Duration) (bool, error) {
	held, err := e.store.HoldLease(ctx, name, e.opts.NodeID, ttl)
	v := 0.0
	if held {
		v = 1
	}
	e.m.leaseHeld.WithLabelValues(name).Set(v)
	return held, err
}

// releaseLeases hands this node's worker leases over as it stops (its workers have stopped):
// another node takes each at its next round instead of after the lease lapses.
func (e *Engine) releaseLeases(ctx context.Context) {
	if err := e.store.ReleaseLeases(ctx, e.opts.NodeID); err != nil {
		e.log.Warn("release the worker leases", slog.Any("error", err))
		return
	}
	e.m.leaseHeld.Reset()
}
