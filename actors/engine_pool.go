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
// one otherwise, exactly as `go` would run it. A goroutine idle for longer than idle exits.
type pool struct {
	work       chan func() // unbuffered: a send succeeds only into a waiting goroutine
	done       chan struct{}
	idle       time.Duration
	throughput int // messages a mailbox run handles before yielding (protoactor's default 300)

	mu      sync.Mutex // orders wg.Add against close's Wait
	closed  bool
	wg      sync.WaitGroup
	started atomic.Int64 // goroutines started, for tests
}

func newPool(idle time.Duration, throughput int) *pool {
	return &pool{work: make(chan func()), done: make(chan struct{}), idle: idle, throughput: throughput}
}

// Schedule runs fn on a kept goroutine (actor.Dispatcher).
func (p *pool) Schedule(fn func()) {
	select {
	case p.work <- fn:
		return
	default:
	}
	p.mu.Lock()
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
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for {
		fn()
		fn = nil // nothing the last run held stays reachable while idle
		t.Reset(p.idle)
		select {
		case fn = <-p.work:
		case <-t.C:
			return
		case <-p.done:
			return
		}
	}
}

// close lets the idle goroutines go and waits for the running ones to finish.
func (p *pool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	close(p.done)
	p.wg.Wait()
}
