package transport

import (
	"context"
	_ "embed"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
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

// readyz reports each dependency. A critical one down (PostgreSQL) is 503; a non-critical one
// down (Redis) leaves the node serving on fallbacks, reported as degraded.
func (s *Server) readyz(ctx context.Context, rc *fasthttp.RequestCtx) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out := struct {
		Status string               `json:"status"` // ok | degraded | unavailable
		Checks map[string]checkJSON `json:"checks"`
	}{Status: "ok", Checks: make(map[string]checkJSON, len(s.Checks))}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, c := range s.Checks {
		wg.Go(func() {
			st := "up"
			if err := c.Probe(ctx); err != nil {
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

func (s *Server) metricsHandler() handler {
	h := fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(s.Gatherer, promhttp.HandlerOpts{
		EnableOpenMetrics: true,
		ErrorLog:          slogPrintln{s.Log},
	}))
	return func(_ context.Context, rc *fasthttp.RequestCtx) error {
		h(rc)
		return nil
	}
}

func (s *Server) openAPI(_ context.Context, rc *fasthttp.RequestCtx) error {
	rc.Response.Header.SetContentType("application/json; charset=utf-8")
	rc.SetBody(openAPIDocument)
	return nil
}

func (s *Server) docs(_ context.Context, rc *fasthttp.RequestCtx) error {
	rc.Response.Header.SetContentType("text/html; charset=utf-8")
	rc.SetBody(docsPage)
	return nil
}

// docsAssets serves the embedded Swagger UI files, so the explorer works offline.
func (s *Server) docsAssets() handler {
	return func(_ context.Context, rc *fasthttp.RequestCtx) error {
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
}

type slogPrintln struct {
	log interface{ Error(string, ...any) }
}

func (l slogPrintln) Println(v ...any) { l.log.Error("metrics exposition", "detail", v) }
