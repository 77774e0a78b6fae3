package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

// bareServer is a front door with no stores: enough for routing, errors and metrics. Besides
// the routes of groups it has GET /healthz.
func bareServer(t *testing.T, opts Options, groups ...Group) (*Server, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	healthz := GroupFunc(func(r *Router) {
		r.Handle("GET", "/healthz", Public, func(_ context.Context, rc *fasthttp.RequestCtx) error {
			return WriteJSON(rc, 200, map[string]string{"status": "ok"})
		})
	})
	s, err := New(opts, Deps{Log: slog.New(slog.DiscardHandler), Registerer: reg}, append(groups, healthz)...)
	if err != nil {
		t.Fatal(err)
	}
	return s, reg
}

// route is a group of one route.
func route(method, path string, acc Access, h Handler) Group {
	return GroupFunc(func(r *Router) { r.Handle(method, path, acc, h) })
}

// serveInMemory runs s on an in-memory listener and returns a client for it.
func serveInMemory(t *testing.T, s *Server) *fasthttp.Client {
	t.Helper()
	ln := fasthttputil.NewInmemoryListener()
	f := NewFront(s.opts.MaxBodyBytes, prometheus.NewRegistry(), s.log)
	f.Attach(s)
	go func() { _ = f.Serve(ln) }()
	t.Cleanup(func() { _ = f.Shutdown(context.Background()) })
	return &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}
}

func call(t *testing.T, c *fasthttp.Client, method, path, contentType string, body []byte) (int, *fasthttp.ResponseHeader, Problem) {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://tuma" + path)
	req.Header.SetMethod(method)
	if contentType != "" {
		req.Header.SetContentType(contentType)
	}
	req.SetBody(body)
	if err := c.Do(req, resp); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	var p Problem
	if strings.HasPrefix(string(resp.Header.ContentType()), "application/problem+json") {
		if err := json.Unmarshal(resp.Body(), &p); err != nil {
			t.Fatalf("problem body %q: %v", resp.Body(), err)
		}
	}
	h := &fasthttp.ResponseHeader{}
	resp.Header.CopyTo(h)
	return resp.StatusCode(), h, p
}

func TestRoutingProblems(t *testing.T) {
	s, reg := bareServer(t, Options{MaxBodyBytes: 1024}, route("POST", "/echo", Public, func(_ context.Context, rc *fasthttp.RequestCtx) error {
		var v struct{}
		return DecodeJSON(rc, &v)
	}))
	c := serveInMemory(t, s)

	status, _, p := call(t, c, "GET", "/no/such/path", "", nil)
	if status != 404 || p.Code != "not_found" || p.Status != 404 {
		t.Errorf("unknown path = %d %+v; want a 404 problem", status, p)
	}
	status, h, p := call(t, c, "DELETE", "/healthz", "", nil)
	if status != 405 || p.Code != "method_not_allowed" || !strings.Contains(string(h.Peek("Allow")), "GET") {
		t.Errorf("wrong method = %d %+v Allow=%q; want a 405 problem with Allow", status, p, h.Peek("Allow"))
	}
	status, _, p = call(t, c, "POST", "/echo", "application/json", []byte(strings.Repeat(" ", 2048)))
	if status != 413 || p.Code != "body_too_large" {
		t.Errorf("oversized body = %d %+v; want a 413 problem", status, p)
	}
	status, _, p = call(t, c, "POST", "/echo", "application/x-www-form-urlencoded", []byte("a=b"))
	if status != 415 || p.Code != "unsupported_media_type" {
		t.Errorf("form body = %d %+v; want a 415 problem", status, p)
	}
	status, _, p = call(t, c, "POST", "/echo", "application/json; charset=utf-8", []byte(`{"a":`))
	if status != 400 || p.Code != "malformed_json" {
		t.Errorf("malformed JSON = %d %+v; want a 400 problem", status, p)
	}
	if got := testutil.ToFloat64(s.metrics.requests.WithLabelValues("unmatched", "GET", "404")); got != 1 {
		t.Errorf("unmatched 404 counter = %v; want 1", got)
	}
	if got := testutil.ToFloat64(s.metrics.requests.WithLabelValues("/echo", "POST", "415")); got != 1 {
		t.Errorf("/echo 415 counter = %v; want 1 (labelled by route template)", got)
	}
	if n, err := testutil.GatherAndCount(reg, "tuma_http_request_duration_seconds"); err != nil || n == 0 {
		t.Errorf("duration histogram series = %d, %v; want some", n, err)
	}
}

func TestPanicBecomesOpaque500(t *testing.T) {
	s, _ := bareServer(t, Options{}, route("GET", "/boom", Public, func(context.Context, *fasthttp.RequestCtx) error {
		panic("database password is hunter2")
	}))
	c := serveInMemory(t, s)
	status, h, p := call(t, c, "GET", "/boom", "", nil)
	if status != 500 || p.Code != "internal_error" || strings.Contains(p.Detail, "hunter2") {
		t.Fatalf("panic = %d %+v; want an opaque 500 problem", status, p)
	}
	if len(h.Peek("X-Request-Id")) == 0 {
		t.Error("no X-Request-Id on the 500")
	}
	if got := testutil.ToFloat64(s.metrics.panics); got != 1 {
		t.Errorf("panics counter = %v; want 1", got)
	}
	// The server keeps serving.
	if status, _, _ := call(t, c, "GET", "/healthz", "", nil); status != 200 {
		t.Errorf("after a panic /healthz = %d; want 200", status)
	}
}

func TestRequestIDIsKeptWhenSane(t *testing.T) {
	s, _ := bareServer(t, Options{})
	var rc fasthttp.RequestCtx
	rc.Request.Header.Set("X-Request-Id", "abc-123")
	if got := s.reqIDs.of(&rc); got != "abc-123" {
		t.Errorf("sane id replaced with %q", got)
	}
	rc.Request.Header.Set("X-Request-Id", "evil\nheader")
	if got := s.reqIDs.of(&rc); got == "evil\nheader" {
		t.Error("unsafe id kept")
	}
}
