// Package admission bounds the API requests a node serves at once, adapted to their latency.
package admission

import (
	"sync/atomic"
	"time"
)

// Controller refuses API requests beyond a bound with 503 overloaded at once. Past the node's
// capacity, queueing more requests for the database and the engine only makes every request
// slow (and lets clients' timeouts turn into retries of work that may still commit); a quick
// refusal with Retry-After costs microseconds and keeps the accepted ones fast.
//
// The bound adapts: every window (100 ms), when the mean latency of the requests served, or
// the wait of those in flight at the rate the node serves them, exceeded the target, the
// bound shrinks in proportion (by target/latency, at least a quarter) and at most to what
// the node serves within the target (never under a floor), so a storm is met in a window; when it did not and the bound
// was reached, it doubles (or, saturated, rises at once to what the node serves within the
// target) while requests take under half the target and grows by a twentieth
// nearer it (never over the ceiling). A node then holds only as many requests as it serves within the target,
// whatever they cost: a hundred 1-recipient sends or a few 10,000-recipient ones.
type Controller struct {
	ceiling int64         // most requests at once; 0: no bound at all
	target  time.Duration // mean latency to stay under; 0: the bound stays at the ceiling
	window  time.Duration

	limit atomic.Int64
	n     atomic.Int64

	windowStart atomic.Int64 // unix nanos
	sumNanos    atomic.Int64
	served      atomic.Int64
	full        atomic.Bool // the bound was reached this window
}

// floor is the least the adaptive bound falls to.
const floor = 8

// New returns a controller taking at most ceiling requests at once (0: no bound at all),
// shrinking the bound while their mean latency exceeds target (0: the bound stays fixed).
func New(ceiling int, target time.Duration) *Controller {
	a := &Controller{ceiling: int64(ceiling), target: target, window: 100 * time.Millisecond}
	a.limit.Store(int64(ceiling))
	a.windowStart.Store(time.Now().UnixNano())
	return a
}

// Enter takes a place; false when the node is full.
func (a *Controller) Enter() bool {
	if a.ceiling <= 0 {
		return true
	}
	if a.n.Add(1) > a.limit.Load() {
		a.n.Add(-1)
		a.demanded()
		return false
	}
	return true
}

// demanded notes a request refused: demand exceeded the bound in this window.
func (a *Controller) demanded() {
	if !a.full.Swap(true) {
		a.restartStale()
	}
}

// restartStale starts a new window when the bound is first reached in one that began more
// than a window ago: its idle start would hide the rate, and the bound would only double at
// its close, while a burst after a quiet spell is refused meanwhile. Counted from the onset
// of the burst, the window measures the rate that sets the bound (Little's law) at its close.
func (a *Controller) restartStale() {
	now := time.Now().UnixNano()
	start := a.windowStart.Load()
	if now-start > int64(a.window) && a.windowStart.CompareAndSwap(start, now) {
		a.served.Store(0)
		a.sumNanos.Store(0)
	}
}

// Leave gives the place back, with how long the request took.
func (a *Controller) Leave(took time.Duration) {
	if a.ceiling <= 0 {
		return
	}
	a.n.Add(-1)
	if a.target <= 0 {
		return
	}
	a.sumNanos.Add(int64(took))
	a.served.Add(1)
	now := time.Now().UnixNano()
	start := a.windowStart.Load()
	if now-start < int64(a.window) || !a.windowStart.CompareAndSwap(start, now) {
		return
	}
	// This request closes the window (the CAS elects one): adjust from what it saw.
	served, sum, full := a.served.Swap(0), a.sumNanos.Swap(0), a.full.Swap(false)
	if served == 0 {
		return
	}
	limit := a.limit.Load()
	mean, elapsed := time.Duration(sum/served), time.Duration(now-start)
	// What the node served per unit of time, and how long the requests in it now will wait
	// at that rate. Latency is only known when a request ends, so a storm's queue shows in
	// the mean a queue-length later; the wait shows it while the queue forms. A window much
	// longer than its length saw idle time, which says nothing about the rate either.
	// The rate is the node's capacity only when demand exceeded the bound all along (full): a
	// burst into a quiet window would read as a slow node and be shed for nothing.
	saturated := full && elapsed <= 2*a.window
	rate := float64(served) / float64(elapsed)
	wait := mean
	if saturated {
		wait = max(mean, time.Duration(float64(a.n.Load())/rate))
	}
	switch {
	case wait > a.target:
		shrunk := int64(float64(limit) * min(0.75, float64(a.target)/float64(wait)))
		if saturated {
			// Little's law: at this rate the node holds rate × target requests within the
			// target, so a storm is met in one window.
			shrunk = min(shrunk, int64(rate*float64(a.target)))
		}
		limit = max(floor, shrunk)
	case full && wait < a.target/2:
		// Far under the target: open up at once. A bound shrunk by a few slow requests (large
		// reads at the end of a busy spell) would otherwise shed the next burst of quick ones
		// for seconds while it crept back up (measured: 75% of 1-recipient sends for 4 s).
		// Saturated, the node's rate says how many it serves within the target (Little's
		// law, as when shrinking): a bound left at its floor by a spell of slow requests
		// reaches it in one window, not after a run of doublings that shed a burst of
		// quick sends meanwhile (measured: 9,700 refused in the first 0.5 s of a run).
		grown := 2 * limit
		if saturated {
			grown = max(grown, int64(rate*float64(a.target)))
		}
		limit = min(a.ceiling, grown)
	case full:
		limit = min(a.ceiling, limit+max(1, limit/20))
	}
	a.limit.Store(limit)
}

// Release gives the place back without counting the request's time (an upload's, which is
// the client's speed rather than the node's load).
func (a *Controller) Release() {
	if a.ceiling > 0 {
		a.n.Add(-1)
	}
}

// Bound is the current bound (0: none).
func (a *Controller) Bound() int64 {
	if a.ceiling <= 0 {
		return 0
	}
	return a.limit.Load()
}
