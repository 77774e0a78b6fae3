// The goroutines that run the engine's mailboxes and I/O, kept between runs.

package actors

import (
	"sync"
	"sync/atomic"
	"time"
)

const (
	// poolIdle is how long a kept goroutine waits for more work: long enough to span the
	// gaps of a steady load, short enough that a burst's goroutines do not linger.
	poolIdle = 5 * time.Second
	// mailboxThroughput is protoactor's default: messages a mailbox run handles before it
	// lets other mailboxes have the goroutine.
	mailboxThroughput = 300
)

// pool runs functions on goroutines it keeps. protoactor's default dispatcher starts a
// goroutine for every mailbox run, and goIO one for every database call: each began with the
// minimum stack and grew it, copy by copy, to what the actors and pgx need. Under
// 1-recipient sends that copying was 9% of the node's CPU. A kept goroutine keeps its stack.
//
// The pool never queues: a function goes to an idle goroutine if one is waiting and to a new
// one otherwise, exactly as `go` would run it. Work goes to the goroutine idle the shortest
// time (last in, first out), so after a burst the steady load keeps only the goroutines it
// needs and the rest, idle for longer than idle, exit. (Handed out in turn, as an unbuffered
// channel does, a trickle of work every idle/n kept all n of a burst's goroutines for good.)
type pool struct {
	idle       time.Duration
	throughput int // messages a mailbox run handles before yielding (protoactor's default 300)

	mu      sync.Mutex
	waiting []*keeper // idle goroutines, the most recently idle last
	closed  bool
	wg      sync.WaitGroup
	started atomic.Int64 // goroutines started, for tests
}

// keeper is one kept goroutine's inbox: Schedule hands it a function only after taking it
// off waiting, so the one slot never fills twice; nil tells it to exit.
type keeper struct{ work chan func() }

func newPool(idle time.Duration, throughput int) *pool {
	return &pool{idle: idle, throughput: throughput}
}

// Schedule runs fn on a kept goroutine (actor.Dispatcher).
func (p *pool) Schedule(fn func()) {
	p.mu.Lock()
	if n := len(p.waiting); n > 0 {
		k := p.waiting[n-1]
		p.waiting[n-1] = nil
		p.waiting = p.waiting[:n-1]
		p.mu.Unlock()
		k.work <- fn
		return
	}
	if p.closed {
		// Stopping: the last system messages of stopping actors still need running.
		p.mu.Unlock()
		go fn()
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	p.started.Add(1)
	go p.keep(fn)
}

// Throughput is the messages a mailbox processes per run (actor.Dispatcher).
func (p *pool) Throughput() int { return p.throughput }

func (p *pool) keep(fn func()) {
	defer p.wg.Done()
	k := &keeper{work: make(chan func(), 1)}
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for fn != nil {
		fn()
		fn = nil // nothing the last run held stays reachable while idle
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		p.waiting = append(p.waiting, k)
		p.mu.Unlock()
		t.Reset(p.idle)
		select {
		case fn = <-k.work:
		case <-t.C:
			p.mu.Lock()
			gone := p.unwait(k)
			p.mu.Unlock()
			if !gone {
				// Schedule (or close) took it off waiting first: its word is on the way.
				fn = <-k.work
			}
		}
	}
}

// unwait takes k off waiting, reporting whether it was there. The caller holds mu. A
// goroutine timing out has been idle longest, so it is found near the front.
func (p *pool) unwait(k *keeper) bool {
	for i, w := range p.waiting {
		if w == k {
			copy(p.waiting[i:], p.waiting[i+1:])
			p.waiting[len(p.waiting)-1] = nil
			p.waiting = p.waiting[:len(p.waiting)-1]
			return true
		}
	}
	return false
}

// close lets the idle goroutines go and waits for the running ones to finish.
func (p *pool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	idle := p.waiting
	p.waiting = nil
	p.mu.Unlock()
	for _, k := range idle {
		k.work <- nil
	}
	p.wg.Wait()
}
