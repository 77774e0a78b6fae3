package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// adminToken is the admin API's token on every node a drill starts.
const adminToken = "drill-admin-token-0123456789abcdef"

// client talks to one node over HTTP. Safe for concurrent use.
type client struct {
	base    string
	http    *http.Client
	secrets *secrets
}

func newClient(base string, conns int, timeout time.Duration, s *secrets) *client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     30 * time.Second,
	}
	return &client{base: base, http: &http.Client{Transport: tr, Timeout: timeout}, secrets: s}
}

// reply is one request's outcome: status 0 means no HTTP answer (err says why).
type reply struct {
	status  int
	header  http.Header
	body    []byte
	err     error
	took    time.Duration
	written bool // the whole request reached the connection before the error
}

// refused reports an error that means the request never reached a server (nothing listens).
func (r reply) refused() bool {
	return r.err != nil && (errors.Is(r.err, syscall.ECONNREFUSED) || !r.written)
}

// retryAfter is the Retry-After of the reply, bounded to [min, max].
func (r reply) retryAfter(lo, hi time.Duration) time.Duration {
	d := lo
	if r.header != nil {
		if s, err := strconv.Atoi(r.header.Get("Retry-After")); err == nil && s >= 0 {
			d = time.Duration(s) * time.Second
		}
	}
	return min(max(d, lo), hi)
}

// do sends a request. body may be nil, []byte (sent as is) or a value sent as JSON; headers
// are name, value pairs.
func (c *client) do(ctx context.Context, method, path string, body any, headers ...string) reply {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return reply{err: err}
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return reply{err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	var written atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) { written.Store(i.Err == nil) },
	}))
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return reply{err: err, took: time.Since(start), written: written.Load()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, body: b, took: time.Since(start), written: true}
	if err != nil {
		r.err, r.status = err, 0
	}
	return r
}

// expect is an error unless the reply has status want.
func (r reply) expect(want int) error {
	if r.err != nil {
		return r.err
	}
	if r.status != want {
		return fmt.Errorf("status %d (want %d): %s", r.status, want, clip(r.body, 300))
	}
	return nil
}

func (r reply) decode(v any) error {
	if err := json.Unmarshal(r.body, v); err != nil {
		return fmt.Errorf("decode %q: %w", clip(r.body, 200), err)
	}
	return nil
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func adminAuth() []string { return []string{"Authorization", "Bearer " + adminToken} }

// admin is a call of the admin API that must answer want.
func (c *client) admin(ctx context.Context, method, path string, body any, want int) (reply, error) {
	r := c.do(ctx, method, path, body, adminAuth()...)
	if err := r.expect(want); err != nil {
		return r, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return r, nil
}

// simPatch changes one simulated network (PATCH /admin/sim/{network}).
func (c *client) simPatch(ctx context.Context, network string, patch map[string]any) error {
	_, err := c.admin(ctx, "PATCH", "/admin/sim/"+network, patch, 200)
	return err
}

// simAll changes every simulated network.
func (c *client) simAll(ctx context.Context, patch map[string]any) error {
	for _, n := range networks {
		if err := c.simPatch(ctx, n, patch); err != nil {
			return err
		}
	}
	return nil
}

// waitStatus polls path until it answers want or ctx or limit ends; it returns how long that took.
func (c *client) waitStatus(ctx context.Context, path string, want int, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last reply
	for {
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		last = c.do(rctx, "GET", path, nil)
		rcancel()
		if last.status == want {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("%s did not answer %d within %s (last: %d %v %s)", path, want, limit, last.status, last.err, clip(last.body, 200))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// closeIdle closes the client's idle keep-alive connections (the node's goroutines serving
// them end with them).
func (c *client) closeIdle() { c.http.CloseIdleConnections() }

// collectGarbage makes the node run a garbage collection (GET /debug/pprof/heap?gc=1; the
// node needs TUMA_PPROF=true), so the heap it reports next holds live objects only. It
// returns the heap profile taken after it, for `go tool pprof -base`. Two collections: the
// first only moves what sync.Pools hold (fasthttp's buffers for every connection of a storm)
// to their victim caches, the second frees it.
func (c *client) collectGarbage(ctx context.Context) ([]byte, error) {
	var r reply
	var err error
	for range 2 {
		if r, err = c.admin(ctx, "GET", "/debug/pprof/heap?gc=1", nil, 200); err != nil {
			return nil, err
		}
	}
	return r.body, nil
}

// saveGoroutines writes the node's goroutines, grouped by stack, to path (GET
// /debug/pprof/goroutine?debug=1), to tell a leak from a pool that has not yet shrunk.
func (c *client) saveGoroutines(ctx context.Context, path string) error {
	r, err := c.admin(ctx, "GET", "/debug/pprof/goroutine?debug=1", nil, 200)
	if err != nil {
		return err
	}
	return os.WriteFile(path, r.body, 0o644)
}
