package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/pprof"
	rpprof "runtime/pprof"

	"github.com/fasthttp/router"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// InternalHandler serves /metrics and /debug/pprof/* for the internal listener
// (TUMA_METRICS_ADDR): no credentials, so that listener must stay off public networks. It
// needs nothing but the registry, so it serves while the node boots.
func InternalHandler(gatherer prometheus.Gatherer, log *slog.Logger) fasthttp.RequestHandler {
	r := router.New()
	metrics := metricsHandler(gatherer, log)
	r.GET("/metrics", func(rc *fasthttp.RequestCtx) { _ = metrics(context.Background(), rc) })
	prof := pprofHandler()
	r.GET("/debug/pprof/{path:*}", prof)
	r.POST("/debug/pprof/symbol", prof)
	return r.Handler
}

// pprof serves the profiles on the API port when TUMA_PPROF is on, to operators only.
func (s *Server) pprof() handler {
	prof := pprofHandler()
	return func(_ context.Context, rc *fasthttp.RequestCtx) error {
		if !s.opts.Pprof {
			return notFound("no route matches this path")
		}
		if err := s.checkAdmin(rc); err != nil {
			return err
		}
		if name, _ := rc.UserValue("path").(string); !pprofPage(name) {
			return notFound("no such profile") // a problem, as the document says, not pprof's text
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
