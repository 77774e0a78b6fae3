// Package ops is the operators' endpoints: liveness, readiness, metrics, the API reference
// and the profiles.
package ops

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/api"
)

// Check is one dependency /readyz reports on. A failing critical check makes the node unready;
// a failing non-critical one makes it degraded.
type Check struct {
	Name     string
	Critical bool
	Probe    func(ctx context.Context) error
}

// Options say which of the endpoints this node serves.
type Options struct {
	MetricsElsewhere bool // /metrics is served by the internal listener (api.InternalHandler), not here
	Pprof            bool // serve /debug/pprof/* here, to operators
}

// Deps are what the endpoints read.
type Deps struct {
	Log        *slog.Logger
	Registerer prometheus.Registerer // tuma_dependency_up
	Gatherer   prometheus.Gatherer   // what /metrics exposes
	Checks     []Check
	Recovery   func() any // the engine's progress recovering earlier work, shown by /readyz
}

// Handler serves the operators' endpoints.
type Handler struct {
	opts     Options
	checks   []Check
	recovery func() any
	depUp    *prometheus.GaugeVec // dependency: 1 up, 0 down, as last probed
	metrics  api.Handler
}

// New registers tuma_dependency_up and returns the endpoints.
func New(opts Options, d Deps) (*Handler, error) {
	up := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "tuma", Subsystem: "dependency", Name: "up",
		Help: "Whether a dependency answered its last probe (1) or not (0): postgres, redis.",
	}, []string{"dependency"})
	if err := d.Registerer.Register(up); err != nil {
		return nil, err
	}
	return &Handler{opts: opts, checks: d.Checks, recovery: d.Recovery, depUp: up,
		metrics: api.MetricsHandler(d.Gatherer, d.Log)}, nil
}

// Register adds the routes.
func (h *Handler) Register(r *api.Router) {
	r.Handle("GET", "/healthz", api.Public, h.healthz)
	r.Handle("GET", "/readyz", api.Public, h.readyz)
	r.HandleIf(!h.opts.MetricsElsewhere, "GET", "/metrics", api.Public, h.metrics)
	r.Handle("GET", "/openapi.json", api.Public, api.ServeOpenAPI)
	r.Handle("GET", "/docs", api.Public, api.ServeDocs)
	r.Handle("GET", "/docs/{filepath:*}", api.Public, api.ServeDocsAsset)
	// Profiles, to operators (TUMA_PPROF); while off the route reveals nothing, whoever asks.
	r.HandleIf(h.opts.Pprof, "GET", "/debug/pprof/{path:*}", api.Operator, api.Profiles())
}

func (h *Handler) healthz(_ context.Context, rc *fasthttp.RequestCtx) error {
	return api.WriteJSON(rc, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz reports each dependency. A critical one down (PostgreSQL) is 503; a non-critical one
// down (Redis) leaves the node serving on fallbacks, reported as degraded.
func (h *Handler) readyz(ctx context.Context, rc *fasthttp.RequestCtx) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out := api.Readiness{Status: "ok", Checks: make(map[string]api.CheckState, len(h.checks))}
	if h.recovery != nil {
		out.Recovery = h.recovery()
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, c := range h.checks {
		wg.Go(func() {
			st := "up"
			if !h.probe(ctx, c) {
				st = "down"
			}
			mu.Lock()
			defer mu.Unlock()
			out.Checks[c.Name] = api.CheckState{Status: st, Critical: c.Critical}
			switch {
			case st == "up":
			case c.Critical:
				out.Status = "unavailable"
			case out.Status == "ok":
				out.Status = "degraded"
			}
		})
	}
	wg.Wait()
	status := http.StatusOK
	if out.Status == "unavailable" {
		status = http.StatusServiceUnavailable
		rc.Response.Header.Set("Retry-After", "5")
	}
	return api.WriteJSON(rc, status, out)
}

// probe runs one check and records its result in tuma_dependency_up.
func (h *Handler) probe(ctx context.Context, c Check) bool {
	up := c.Probe(ctx) == nil
	v := 0.0
	if up {
		v = 1
	}
	h.depUp.WithLabelValues(c.Name).Set(v)
	return up
}

// ProbeDependencies probes every dependency once, so tuma_dependency_up is fresh whether or
// not anyone asks /readyz (a worker runs it every few seconds).
func (h *Handler) ProbeDependencies(ctx context.Context) (bool, error) {
	for _, c := range h.checks {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		h.probe(pctx, c)
		cancel()
	}
	return false, nil
}
