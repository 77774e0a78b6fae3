package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

// While the node boots, the front answers liveness, readiness (with the stage), metrics and
// the static documents, and every other request with 503 and Retry-After.
func TestFrontWhileBooting(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := NewFront(0, reg, slog.New(slog.DiscardHandler))
	f.SetStage("applying migrations")
	ln := fasthttputil.NewInmemoryListener()
	go func() { _ = f.Serve(ln) }()
	t.Cleanup(func() { _ = f.Shutdown(context.Background()) })
	c := &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}
	get := func(path string) (int, *fasthttp.Response) {
		req, resp := fasthttp.AcquireRequest(), &fasthttp.Response{}
		defer fasthttp.ReleaseRequest(req)
		req.SetRequestURI("http://x" + path)
		if err := c.Do(req, resp); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode(), resp
	}
	for path, want := range map[string]int{"/healthz": 200, "/metrics": 200, "/openapi.json": 200, "/docs": 200,
		"/docs/swagger-ui.css": 200, "/readyz": 503, "/sms/send": 503, "/auth/me": 503} {
		if got, _ := get(path); got != want {
			t.Errorf("GET %s while booting = %d; want %d", path, got, want)
		}
	}
	_, resp := get("/readyz")
	var r Readiness
	if err := json.Unmarshal(resp.Body(), &r); err != nil || r.Status != "starting" || r.Stage != "applying migrations" {
		t.Errorf("/readyz = %s; want status starting at stage applying migrations", resp.Body())
	}
	_, resp = get("/wallet")
	if string(resp.Header.Peek("Retry-After")) == "" || string(resp.Header.ContentType()) != "application/problem+json" {
		t.Errorf("a request while booting got headers %s; want a problem with Retry-After", resp.Header.String())
	}
}
