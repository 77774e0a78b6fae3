// Silent connections at shutdown. fasthttp waits, when it shuts down, for a new connection
// that has not sent its first request as if it were serving one — until ReadTimeout (30 s),
// longer than TUMA_SHUTDOWN_TIMEOUT — so one idle client (a port probe, a client's spare
// connection) held the whole graceful shutdown to its deadline, left the engine no time to
// drain and failed the exit. The front's listener tracks which connections have sent a byte;
// at shutdown the ones that never did hold no request and are closed.

package api

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// silentAge is how long a connection must have been open without sending anything before a
// shutdown closes it: its request, if it sent one the moment it connected, is being read.
const silentAge = 100 * time.Millisecond

// connTracker is a listener that remembers its open connections.
type connTracker struct {
	net.Listener
	mu    sync.Mutex
	conns map[*trackedConn]struct{}
}

func trackConns(ln net.Listener) *connTracker {
	return &connTracker{Listener: ln, conns: map[*trackedConn]struct{}{}}
}

func (t *connTracker) Accept() (net.Conn, error) {
	c, err := t.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, t: t, opened: time.Now()}
	t.mu.Lock()
	t.conns[tc] = struct{}{}
	t.mu.Unlock()
	return tc, nil
}

// closeSilent closes the connections open for silentAge or more that have sent nothing.
func (t *connTracker) closeSilent() {
	t.mu.Lock()
	var silent []*trackedConn
	for c := range t.conns {
		if !c.heard.Load() && time.Since(c.opened) >= silentAge {
			silent = append(silent, c)
		}
	}
	t.mu.Unlock()
	for _, c := range silent {
		_ = c.Close()
	}
}

// trackedConn is a connection that knows whether it has received a byte.
type trackedConn struct {
	net.Conn
	t      *connTracker
	opened time.Time
	heard  atomic.Bool
	forget sync.Once
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.heard.Store(true)
	}
	return n, err
}

func (c *trackedConn) Close() error {
	c.forget.Do(func() {
		c.t.mu.Lock()
		delete(c.t.conns, c)
		c.t.mu.Unlock()
	})
	return c.Conn.Close()
}
