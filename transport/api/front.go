// The front: the listener side of the HTTP front door, serving from the moment the process
// starts.

package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// Front accepts connections from the moment the process starts. While the node boots
// (connecting to its stores, migrating, starting the engine) it answers /healthz (alive),
// /readyz (503, with the boot stage) and /metrics itself, and every other request with 503
// and Retry-After; once the node is up, Attach hands every request to the full Server. A
// restart after a crash is then visible to probes at once, whatever the node must do before
// it can take writes.
type Front struct {
	http     *fasthttp.Server
	log      *slog.Logger
	maxBody  int
	server   atomic.Pointer[Server]
	stage    atomic.Pointer[string]
	gatherer prometheus.Gatherer
	conns    atomic.Pointer[connTracker] // what Serve accepted, for Shutdown (conns.go)
}

// NewFront builds the front; maxBody bounds request bodies (413 beyond).
func NewFront(maxBody int, gatherer prometheus.Gatherer, log *slog.Logger) *Front {
	if maxBody <= 0 {
		maxBody = 4 << 20
	}
	f := &Front{log: log, maxBody: maxBody, gatherer: gatherer}
	f.SetStage("starting")
	f.http = &fasthttp.Server{
		Handler:               f.handle,
		Name:                  "tuma",
		NoDefaultServerHeader: true,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           90 * time.Second, // without it keep-alive connections hold up Shutdown
		MaxRequestBodySize:    maxBody,
		// Bodies over the server's 8 KB prefetch reach handlers as streams: uploads are read
		// part by part, and everything else is read to its end, at most maxBody, by boundBody
		// before its handler.
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		CloseOnShutdown:              true,
		ErrorHandler:                 f.transportError,
		Logger:                       fasthttpLogger{log},
	}
	return f
}

// SetStage says what the node is doing while it boots (shown by /readyz).
func (f *Front) SetStage(stage string) { f.stage.Store(&stage) }

// Attach hands every request to s from now on.
func (f *Front) Attach(s *Server) { f.server.Store(s) }

// Serve accepts connections on ln until Shutdown.
func (f *Front) Serve(ln net.Listener) error {
	t := trackConns(ln)
	f.conns.Store(t)
	return f.http.Serve(t)
}

// Shutdown stops accepting connections and waits for in-flight requests, up to ctx.
// Connections that have sent nothing hold no request: they are closed, not waited for.
func (f *Front) Shutdown(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- f.http.ShutdownWithContext(ctx) }()
	tick := time.NewTicker(silentAge / 2)
	defer tick.Stop()
	var err error
	for waiting := true; waiting; {
		select {
		case err = <-done:
			waiting = false
		case <-tick.C:
			if t := f.conns.Load(); t != nil {
				t.closeSilent()
			}
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("http shutdown: requests still running: %w", err)
	}
	return err
}

func (f *Front) handle(rc *fasthttp.RequestCtx) {
	if s := f.server.Load(); s != nil {
		if s.opts.Faults.logSecrets() { // a deliberate defect: credentials in the log
			f.log.Info("request credentials", slog.String("x_api_key", string(rc.Request.Header.Peek("X-API-Key"))),
				slog.String("authorization", string(rc.Request.Header.Peek("Authorization"))))
		}
		s.router.Handler(rc)
		return
	}
	if streamed(rc) { // its body, unread, would be taken for the next request
		rc.SetConnectionClose()
	}
	switch string(rc.Path()) {
	case "/healthz":
		_ = WriteJSON(rc, http.StatusOK, map[string]string{"status": "ok"})
	case "/readyz":
		rc.Response.Header.Set("Retry-After", "1")
		_ = WriteJSON(rc, http.StatusServiceUnavailable, Readiness{Status: "starting", Stage: *f.stage.Load(), Checks: map[string]CheckState{}})
	case "/metrics":
		_ = MetricsHandler(f.gatherer, f.log)(context.Background(), rc)
	case "/openapi.json":
		_ = ServeOpenAPI(context.Background(), rc)
	case "/docs":
		_ = ServeDocs(context.Background(), rc)
	default:
		if name, ok := strings.CutPrefix(string(rc.Path()), "/docs/"); ok {
			rc.SetUserValue("filepath", name)
			if err := ServeDocsAsset(context.Background(), rc); err != nil {
				writeProblem(rc, problemFor(err))
			}
			return
		}
		p := NewProblem("starting", "the service is starting; retry shortly")
		p.RetryAfter = 1
		writeProblem(rc, p)
	}
}

// Readiness is the body of /readyz.
type Readiness struct {
	Status   string                `json:"status"`          // starting | ok | degraded | unavailable
	Stage    string                `json:"stage,omitempty"` // while starting: what the node is doing
	Checks   map[string]CheckState `json:"checks"`
	Recovery any                   `json:"recovery,omitempty"` // the engine's recovery of earlier work
}

// CheckState is one dependency in /readyz.
type CheckState struct {
	Status   string `json:"status"` // up | down
	Critical bool   `json:"critical"`
}

// transportError answers requests fasthttp could not parse, before routing.
func (f *Front) transportError(rc *fasthttp.RequestCtx, err error) {
	var p *Problem
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		p = NewProblem("body_too_large", fmt.Sprintf("the request body is larger than %d bytes", f.maxBody))
	} else {
		p = NewProblem("malformed_request", "the HTTP request could not be parsed")
	}
	if s := f.server.Load(); s != nil {
		s.metrics.requests.WithLabelValues("unparsed", "other", fmt.Sprint(p.Status)).Inc()
	}
	writeProblem(rc, p)
}
