// Owned work: the timers an actor arms and the results of the I/O it starts belong to it.

package actors

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// timers are one actor incarnation's pending timers. The actor stops them when it stops or
// restarts (stopTimers in its Stopping/Restarting handling), so no timer outlives, or fires
// into, an incarnation that no longer expects it.
type timers struct {
	mu      sync.Mutex
	set     map[*time.Timer]struct{}
	stopped bool
}

// after sends msg to pid after d, unless the timers are stopped first.
func (t *timers) after(root *actor.RootContext, pid *actor.PID, d time.Duration, msg any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	if t.set == nil {
		t.set = map[*time.Timer]struct{}{}
	}
	var tm *time.Timer
	// The callback takes the lock, so it sees tm (assigned under the lock) however soon it runs.
	tm = time.AfterFunc(max(d, 0), func() {
		t.mu.Lock()
		_, live := t.set[tm]
		delete(t.set, tm)
		t.mu.Unlock()
		if live {
			root.Send(pid, msg)
		}
	})
	t.set[tm] = struct{}{}
}

// stop cancels every pending timer, for good.
func (t *timers) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	for tm := range t.set {
		tm.Stop()
	}
	t.set = nil
}

// pending reports how many timers are armed (tests).
func (t *timers) pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.set)
}

// inbox holds the results of I/O an actor started until the actor takes them. An I/O
// goroutine puts its result here and pokes the actor. When the actor was being respawned at
// that moment (its supervisor restarted), the poke is lost, but the result is not: the
// successor, which keeps the same state, takes it when it starts. Without it, a flush or a
// commit finishing during a restart would leave its actor waiting forever.
type inbox struct {
	mu    sync.Mutex
	items []any
}

// inboxPoke tells an actor its inbox has results.
type inboxPoke struct{}

func (b *inbox) put(root *actor.RootContext, pid *actor.PID, msg any) {
	b.mu.Lock()
	b.items = append(b.items, msg)
	b.mu.Unlock()
	root.Send(pid, &inboxPoke{})
}

// take returns the results waiting, oldest first.
func (b *inbox) take() []any {
	b.mu.Lock()
	defer b.mu.Unlock()
	items := b.items
	b.items = nil
	return items
}
