package api

import (
	"context"
	_ "embed"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	swaggerfiles "github.com/swaggo/files/v2"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

//go:embed openapi.json
var openAPIDocument []byte

//go:embed docs/index.html
var docsPage []byte

func (s *Server) healthz(_ context.Context, rc *fasthttp.RequestCtx) error {
	return writeJSON(rc, http.StatusOK, map[string]string{"status": "ok"})
}

type checkJSON struct {
	Status   string `json:"status"` // up | down
	Critical bool   `json:"critical"`
}

// readiness is the body of /readyz.
type readiness struct {
	Status   string               `json:"status"`          // starting | ok | degraded | unavailable
	Stage    string               `json:"stage,omitempty"` // while starting: what the node is doing
	Checks   map[string]checkJSON `json:"checks"`
	Recovery any                  `json:"recovery,omitempty"` // the engine's recovery of earlier work
}

// readyz reports each dependency. A critical one down (PostgreSQL) is 503; a non-critical one
// down (Redis) leaves the node serving on fallbacks, reported as degraded.
func (s *Server) readyz(ctx context.Context, rc *fasthttp.RequestCtx) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out := readiness{Status: "ok", Checks: make(map[string]checkJSON, len(s.Checks))}
	if s.Recovery != nil {
		out.Recovery = s.Recovery()
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, c := range s.Checks {
		wg.Go(func() {
			st := "up"
			if !s.probe(ctx, c) {
				st = "down"
			}
			mu.Lock()
			defer mu.Unlock()
			out.Checks[c.Name] = checkJSON{Status: st, Critical: c.Critical}
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
	return writeJSON(rc, status, out)
}

// probe runs one check and records its result in tuma_dependency_up.
func (s *Server) probe(ctx context.Context, c Check) bool {
	up := c.Probe(ctx) == nil
	v := 0.0
	if up {
		v = 1
	}
	s.metrics.depUp.WithLabelValues(c.Name).Set(v)
	return up
}

// ProbeDependencies probes every dependency once, so tuma_dependency_up is fresh whether or
// not anyone asks /readyz (a worker runs it every few seconds).
func (s *Server) ProbeDependencies(ctx context.Context) (bool, error) {
	for _, c := range s.Checks {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		s.probe(pctx, c)
		cancel()
	}
	return false, nil
}

// MetricsTimeHeader says when the exposition's values were read (RFC 3339, nanoseconds):
// rates measured between scrapes are exact however late a scrape was answered.
const MetricsTimeHeader = "X-Tuma-Metrics-Time"

// publicMetrics is /metrics on the API port, unless TUMA_METRICS_ADDR moved it.
func (s *Server) publicMetrics() handler {
	metrics := s.metricsHandler()
	return func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		if s.opts.MetricsElsewhere {
			return notFound("no route matches this path")
		}
		return metrics(ctx, rc)
	}
}

func (s *Server) metricsHandler() handler { return metricsHandler(s.Gatherer, s.Log) }

// metricsHandler serves the exposition of gatherer, stamped with when it was read.
func metricsHandler(gatherer prometheus.Gatherer, log *slog.Logger) handler {
	opts := promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorLog: slogPrintln{log}}
	return func(_ context.Context, rc *fasthttp.RequestCtx) error {
		var at time.Time
		g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
			at = time.Now()
			return gatherer.Gather()
		})
		fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(g, opts))(rc)
		if !at.IsZero() {
			rc.Response.Header.Set(MetricsTimeHeader, at.UTC().Format(time.RFC3339Nano))
		}
		return nil
	}
}

func openAPI(_ context.Context, rc *fasthttp.RequestCtx) error {
	rc.Response.Header.SetContentType("application/json; charset=utf-8")
	rc.SetBody(openAPIDocument)
	return nil
}

func docs(_ context.Context, rc *fasthttp.RequestCtx) error {
	rc.Response.Header.SetContentType("text/html; charset=utf-8")
	rc.SetBody(docsPage)
	return nil
}

// docsAssets serves the embedded Swagger UI files, so the explorer works offline.
func docsAssets(_ context.Context, rc *fasthttp.RequestCtx) error {
	name, _ := rc.UserValue("filepath").(string)
	b, err := fs.ReadFile(swaggerfiles.FS, name)
	if err != nil {
		return notFound("no such file")
	}
	switch {
	case strings.HasSuffix(name, ".css"):
		rc.Response.Header.SetContentType("text/css; charset=utf-8")
	case strings.HasSuffix(name, ".js"):
		rc.Response.Header.SetContentType("text/javascript; charset=utf-8")
	case strings.HasSuffix(name, ".png"):
		rc.Response.Header.SetContentType("image/png")
	case strings.HasSuffix(name, ".html"):
		rc.Response.Header.SetContentType("text/html; charset=utf-8")
	default:
		rc.Response.Header.SetContentType("application/octet-stream")
	}
	rc.Response.Header.Set("Cache-Control", "public, max-age=86400")
	rc.SetBody(b)
	return nil
}

type slogPrintln struct {
	log interface{ Error(string, ...any) }
}

func (l slogPrintln) Println(v ...any) { l.log.Error("metrics exposition", "detail", v) }
