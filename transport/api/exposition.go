// Exposition: the metrics and profiles operators read, on the API port or the internal
// listener.

package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/pprof"
	rpprof "runtime/pprof"
	"time"

	"github.com/fasthttp/router"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// InternalHandler serves /metrics and /debug/pprof/* for the internal listener
// (TUMA_METRICS_ADDR): no credentials, so that listener must stay off public networks. It
// needs nothing but the registry, so it serves while the node boots.
func InternalHandler(gatherer prometheus.Gatherer, log *slog.Logger) fasthttp.RequestHandler {
	r := router.New()
	metrics := MetricsHandler(gatherer, log)
	r.GET("/metrics", func(rc *fasthttp.RequestCtx) { _ = metrics(context.Background(), rc) })
	prof := pprofHandler()
	r.GET("/debug/pprof/{path:*}", prof)
	r.POST("/debug/pprof/symbol", prof)
	return r.Handler
}

// MetricsTimeHeader says when the exposition's values were read (RFC 3339, nanoseconds):
// rates measured between scrapes are exact however late a scrape was answered.
const MetricsTimeHeader = "X-Tuma-Metrics-Time"

// MetricsHandler serves the exposition of gatherer, stamped with when it was read.
func MetricsHandler(gatherer prometheus.Gatherer, log *slog.Logger) Handler {
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

type slogPrintln struct {
	log interface{ Error(string, ...any) }
}

func (l slogPrintln) Println(v ...any) { l.log.Error("metrics exposition", "detail", v) }

// Profiles serves net/http/pprof's pages from /debug/pprof/{path}; a name that is none of
// them is a 404 problem, as the document says, not pprof's text.
func Profiles() Handler {
	prof := pprofHandler()
	return func(_ context.Context, rc *fasthttp.RequestCtx) error {
		if name, _ := rc.UserValue("path").(string); !pprofPage(name) {
			return NotFound("no such profile")
		}
		prof(rc)
		return nil
	}
}

// pprofPage reports whether name is a page of net/http/pprof: the index, its handlers, or a
// profile of runtime/pprof.
func pprofPage(name string) bool {
	switch name {
	case "", "cmdline", "profile", "symbol", "trace":
		return true
	}
	return rpprof.Lookup(name) != nil
}

// pprofHandler is net/http/pprof's pages: the index and named profiles under /debug/pprof/.
func pprofHandler() fasthttp.RequestHandler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return fasthttpadaptor.NewFastHTTPHandler(mux)
}
