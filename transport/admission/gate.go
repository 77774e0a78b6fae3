package admission

import (
	"sync/atomic"
	"time"
)

// Class is a kind of request with a bound of its own.
type Class uint8

const (
	// Write: requests that change something (POST, PUT, PATCH, DELETE): sends, sign-ups.
	Write Class = iota
	// Read: GET and HEAD, whose cost ranges from a message to a deep page of a million.
	Read
	classes
)

// String is the class's metric label.
func (c Class) String() string {
	if c == Read {
		return "read"
	}
	return "write"
}

// ClassOf is the class of a request method.
func ClassOf(method string) Class {
	if method == "GET" || method == "HEAD" {
		return Read
	}
	return Write
}

// Gate keeps a bound for each class of request, each adapting to the latency of its own
// requests (Controller), under one ceiling for all. With one bound for every request, a few
// slow reads (the deep pages of a large account) took the mean latency over the target and
// shrank the bound though nothing queued, and the quick sends that came next were shed
// (measured: 4,689 refused in one window after a bulk run's read-back).
type Gate struct {
	ceiling int64
	n       atomic.Int64
	lanes   [classes]*Controller
}

// NewGate bounds the requests at once to ceiling (0: no bound at all), each class's bound
// shrinking while its requests' mean latency exceeds target (0: the bounds stay fixed).
func NewGate(ceiling int, target time.Duration) *Gate {
	g := &Gate{ceiling: int64(ceiling)}
	for c := range g.lanes {
		g.lanes[c] = New(ceiling, target)
	}
	return g
}

// Enter takes a place for a request of class c; false when the node is full for it.
func (g *Gate) Enter(c Class) bool {
	if g.ceiling <= 0 {
		return true
	}
	if g.n.Add(1) > g.ceiling {
		g.n.Add(-1)
		g.lanes[c].demanded()
		return false
	}
	if !g.lanes[c].Enter() {
		g.n.Add(-1)
		return false
	}
	return true
}

// Leave gives the place back, with how long the request took.
func (g *Gate) Leave(c Class, took time.Duration) {
	if g.ceiling <= 0 {
		return
	}
	g.n.Add(-1)
	g.lanes[c].Leave(took)
}

// Release gives the place back without counting the request's time (Controller.Release).
func (g *Gate) Release(c Class) {
	if g.ceiling <= 0 {
		return
	}
	g.n.Add(-1)
	g.lanes[c].Release()
}

// Bound is class c's current bound (0: none).
func (g *Gate) Bound(c Class) int64 { return g.lanes[c].Bound() }
