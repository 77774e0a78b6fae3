// Package redis holds Tuma's Redis-backed accelerators (rueidis): the principal cache for API
// keys and account states (with client-side caching), token-bucket rate limits, and the
// connection monitor that lets the service keep serving on in-process fallbacks when Redis is
// unreachable. Redis is never the system of record.
package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// Options configures the Redis connection.
type Options struct {
	URL            string        // redis://host:port/db
	Prefix         string        // prepended to every key, so tests and tenants of a shared Redis never collide
	CommandTimeout time.Duration // per command; keeps a dead Redis from stalling requests
	CheckInterval  time.Duration // how often the monitor pings (and reconnects)
}

func (o *Options) setDefaults() {
	if o.Prefix == "" {
		o.Prefix = "tuma:"
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = 250 * time.Millisecond
	}
	if o.CheckInterval <= 0 {
		o.CheckInterval = time.Second
	}
}

// Client is a Redis connection that may be down. Callers ask Available and fall back to
// in-process behaviour when it is not; the monitor goroutine reconnects.
type Client struct {
	opts   Options
	ropts  rueidis.ClientOption
	log    *slog.Logger
	up     atomic.Bool
	mu     sync.RWMutex
	rc     rueidis.Client         // nil until the first successful connect
	onUp   []func(rueidis.Client) // run by the monitor after each recovery, before it is marked up
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once
}

// New parses the URL and starts the monitor. It does not fail when Redis is unreachable:
// the service starts degraded and the monitor keeps trying.
func New(ctx context.Context, opts Options, log *slog.Logger) (*Client, error) {
	opts.setDefaults()
	ro, err := rueidis.ParseURL(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("parse redis url: %w", err)
	}
	ro.Dialer = net.Dialer{Timeout: time.Second, KeepAlive: 30 * time.Second}
	ro.ConnWriteTimeout = 2 * time.Second
	ro.CacheSizeEachConn = 16 << 20
	// Redis only accelerates: a failed command falls back at once instead of retrying, so an
	// outage costs one fast error (then the client is marked down), never a stalled request.
	ro.DisableRetry = true
	c := &Client{opts: opts, ropts: ro, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	c.check(ctx)
	go c.monitor()
	return c, nil
}

// Key returns the prefixed key.
func (c *Client) Key(parts ...string) string {
	n := len(c.opts.Prefix)
	for _, p := range parts {
		n += len(p) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, c.opts.Prefix...)
	for i, p := range parts {
		if i > 0 {
			b = append(b, ':')
		}
		b = append(b, p...)
	}
	return string(b)
}

// Available reports whether Redis answered the last check and no command has failed since.
func (c *Client) Available() bool { return c.up.Load() }

// OnRecover registers f to run (on the monitor goroutine) each time Redis comes back, before
// Available reports true again. Register before traffic starts.
func (c *Client) OnRecover(f func(rueidis.Client)) {
	c.mu.Lock()
	c.onUp = append(c.onUp, f)
	c.mu.Unlock()
}

// Ping checks Redis directly (for readiness).
func (c *Client) Ping(ctx context.Context) error {
	rc := c.conn()
	if rc == nil {
		return errors.New("redis not connected")
	}
	return rc.Do(ctx, rc.B().Ping().Build()).Error()
}

// Close stops the monitor and closes the connection.
func (c *Client) Close() {
	c.closed.Do(func() {
		close(c.stop)
		<-c.done
		if rc := c.conn(); rc != nil {
			rc.Close()
		}
	})
}

func (c *Client) conn() rueidis.Client {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rc
}

// do returns the client when Redis is usable, and a context bounded by the command timeout.
func (c *Client) do(ctx context.Context) (rueidis.Client, context.Context, context.CancelFunc, bool) {
	if !c.up.Load() {
		return nil, nil, nil, false
	}
	rc := c.conn()
	if rc == nil {
		return nil, nil, nil, false
	}
	cctx, cancel := context.WithTimeout(ctx, c.opts.CommandTimeout)
	return rc, cctx, cancel, true
}

// failed records a command error. Redis error replies (and nil) mean Redis is fine; anything
// else (timeouts, refused connections) marks it down until the monitor sees it answer.
func (c *Client) failed(err error) {
	if err == nil || rueidis.IsRedisNil(err) {
		return
	}
	var re *rueidis.RedisError
	if errors.As(err, &re) {
		return
	}
	if c.up.Swap(false) {
		c.log.Warn("redis unavailable; using in-process fallbacks", slog.Any("error", err))
	}
}

func (c *Client) monitor() {
	defer close(c.done)
	t := time.NewTicker(c.opts.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.CheckInterval)
			c.check(ctx)
			cancel()
		}
	}
}

func (c *Client) check(ctx context.Context) {
	rc := c.conn()
	if rc == nil {
		nc, err := rueidis.NewClient(c.ropts)
		if err != nil {
			if c.up.Swap(false) {
				c.log.Warn("redis unavailable", slog.Any("error", err))
			}
			return
		}
		c.mu.Lock()
		c.rc, rc = nc, nc
		c.mu.Unlock()
	}
	pctx, cancel := context.WithTimeout(ctx, c.opts.CommandTimeout*2)
	err := rc.Do(pctx, rc.B().Ping().Build()).Error()
	cancel()
	if err != nil {
		c.failed(err)
		return
	}
	if !c.up.Load() {
		// Replay writes made during the outage before anyone reads through Redis again, so no
		// node can read a value older than one this node already published.
		c.mu.RLock()
		hooks := c.onUp
		c.mu.RUnlock()
		for _, f := range hooks {
			f(rc)
		}
		c.up.Store(true)
		for _, f := range hooks { // writes that queued up while the first replay ran
			f(rc)
		}
		c.log.Info("redis available")
	}
}
