// A node paused for longer than the others wait on its health checks (SIGSTOP, a frozen VM, a
// stalled host) comes back to a cluster that has evicted it: its accounts have moved, and
// protoactor blocks its member id for good, so it can never rejoin (notes/wave3.md §2.2). Its
// old tenants would only contend for fences with their successors. A watchdog notices the gap
// in its own beats; from then on the node submits nothing, takes no command, fails /readyz, and
// its owner restarts it as a new member (Lapsed).

package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// ErrLapsed: this node stopped running for longer than the cluster waits before evicting a
// member; it must start again to rejoin.
var ErrLapsed = errors.New("this node was paused for longer than the cluster allows; it must restart to rejoin")

// errLapsedCommand answers a command a lapsed node refuses before doing anything: like a
// fenced one, nothing was written, so the caller may retry it elsewhere at once.
var errLapsedCommand = fmt.Errorf("%w: %w", ErrFenced, ErrLapsed)

// errLapsedSubmit: a submit a lapsed node did not make (the message stays queued and marked
// for the account's new owner).
var errLapsedSubmit = fmt.Errorf("submit not made: %w", ErrLapsed)

// watchdog beats every limit/8 and notices when a beat comes later than limit after the one
// before: the process (or its host) did not run in between.
type watchdog struct {
	limit  time.Duration
	born   time.Time    // monotonic origin of beat
	beat   atomic.Int64 // nanoseconds since born of the last beat on time
	lapsed chan struct{}
	once   sync.Once
	gap    atomic.Int64 // the gap that lapsed it
}

func newWatchdog(limit time.Duration) *watchdog {
	return &watchdog{limit: limit, born: time.Now(), lapsed: make(chan struct{})}
}

// stale reports whether the node has not beaten within its limit. It needs no beat after the
// pause to know: right after a SIGCONT the last beat is the one before the pause, so every
// check made before the watchdog's goroutine even runs again already sees the gap.
func (w *watchdog) stale() bool {
	if w == nil {
		return false
	}
	select {
	case <-w.lapsed:
		return true
	default:
	}
	return time.Since(w.born)-time.Duration(w.beat.Load()) > w.limit
}

// run beats until ctx ends or a gap lapses the node.
func (w *watchdog) run(ctx context.Context, lapse func(gap time.Duration)) {
	t := time.NewTicker(w.limit / 8)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Since(w.born)
		if gap := now - time.Duration(w.beat.Load()); gap > w.limit {
			w.gap.Store(int64(gap))
			w.once.Do(func() { close(w.lapsed) })
			lapse(gap)
			return // no beat again: the node stays stale until it restarts
		}
		w.beat.Store(int64(now))
	}
}

// startWatchdog starts the engine's watchdog, when the node is in a cluster with a pause
// limit, on a goroutine the engine owns.
func (e *Engine) startWatchdog(limit time.Duration) {
	if limit <= 0 || e.opts.Faults.unwatched() {
		return
	}
	dog := newWatchdog(limit)
	e.dog.Store(dog)
	e.io.Add(1)
	go func() {
		defer e.io.Done()
		dog.run(e.life, func(gap time.Duration) {
			e.m.lapses.Inc()
			e.workMu.Lock()
			e.workStop() // rounds under way end; their leases may have passed on
			e.workMu.Unlock()
			e.log.Error("this node was paused for longer than the cluster waits before evicting a member: "+
				"the others may have taken its accounts over; it stops submitting and serving and must restart to rejoin",
				slog.Duration("paused", gap.Round(time.Millisecond)), slog.Duration("limit", limit))
		})
	}()
}

// Lapsed is closed when this node has been paused past the cluster's pause limit; its owner
// should shut it down and start it again (a new member). Never closed for a single node.
func (e *Engine) Lapsed() <-chan struct{} {
	if dog := e.dog.Load(); dog != nil {
		return dog.lapsed
	}
	return nil
}

// ClusterHealth is nil while this node may act on its view of the cluster, and ErrLapsed,
// with the pause, once it may not (from the first moment after the pause, before its watchdog
// runs again).
func (e *Engine) ClusterHealth() error {
	dog := e.dog.Load()
	if !dog.stale() {
		return nil
	}
	gap := time.Duration(dog.gap.Load())
	if gap == 0 {
		gap = time.Since(dog.born) - time.Duration(dog.beat.Load())
	}
	return fmt.Errorf("%w (it did not run for %s; the limit is %s)", ErrLapsed, gap.Round(time.Millisecond), dog.limit)
}

// lapsed reports whether this node must not act on its view of the cluster any more.
func (e *Engine) lapsed() bool { return e.dog.Load().stale() }

// fencedWrite counts a write refused by a fence or a lapse.
func (e *Engine) fencedWrite(write string) {
	e.m.fencedWrites.WithLabelValues(write).Inc()
	e.fenced.Add(1)
}

// logLapse says, as a lapsed node stops, how many writes were refused: what its old view of
// the cluster still tried.
func (e *Engine) logLapse() {
	if err := e.ClusterHealth(); err != nil {
		e.log.Warn("a lapsed node stops", slog.Int64("refused_writes", e.fenced.Load()),
			slog.Int64("refused_commands", e.lapseRefused.Load()), slog.Any("error", err))
	}
}
