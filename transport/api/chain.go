// The chain every request passes through before its endpoint.

package api

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/admission"
	"github.com/tuma-sms/tuma/transport/auth"
)

func (s *Server) wrap(method, route string, acc Access, h Handler) fasthttp.RequestHandler {
	return s.chain(method, route, acc, nil, h)
}

// chain is the handler of a route: the chain, then h. pages admits the callers of a page
// route and shows its problems; nil for the API's routes.
func (s *Server) chain(method, route string, acc Access, pages Pages, h Handler) fasthttp.RequestHandler {
	limited, class := admitted(route), admission.ClassOf(method)
	templated := strings.Contains(route, "{")
	upload := s.uploadLimit(method, route)
	var rm *routeMetrics
	if method != "" {
		rm = s.metrics.forRoute(route, method)
	}
	render := writeProblem
	if pages != nil {
		render = pages.RenderProblem
	}
	return func(rc *fasthttp.RequestCtx) {
		start := time.Now()
		reqID := s.reqIDs.of(rc)
		rc.Response.Header.Set("X-Request-Id", reqID)
		s.metrics.inFlight.Inc()
		defer func() {
			if p := recover(); p != nil {
				s.metrics.panics.Inc()
				s.log.Error("panic serving request", slog.String("request_id", reqID), slog.String("route", route),
					slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
				rc.Response.ResetBody()
				render(rc, problemFor(fmt.Errorf("panic: %v", p)))
			}
			s.metrics.inFlight.Dec()
			// An upload's bytes still on the connection (one refused before its end) would be
			// taken for the next request: close it instead. Other bodies were read in full.
			if upload > 0 && streamed(rc) {
				rc.SetConnectionClose()
			}
			status := rc.Response.StatusCode()
			elapsed := time.Since(start)
			if rm != nil {
				rm.observe(status, elapsed)
			} else {
				// Unmatched routes see any method a client invents: label only a fixed set.
				s.metrics.observe(route, methodLabel(rc.Method()), status, elapsed)
			}
			if s.opts.AccessLog {
				s.accessLog(rc, method, route, reqID, status, elapsed)
			}
		}()

		if limited {
			if !s.admit.Enter(class) {
				s.metrics.shed.Inc()
				p := NewProblem("overloaded", "the node is serving as many requests as it can; retry shortly")
				p.RetryAfter = 1
				render(rc, p)
				return
			}
			defer func() {
				if upload > 0 {
					s.admit.Release(class) // its time is the client's upload speed, not the node's load
				} else {
					s.admit.Leave(class, time.Since(start))
				}
			}()
		}
		// A path the router matched to a template ({id}) that is also a path of its own
		// (DELETE /contacts/import against DELETE /contacts/{id}): that path lacks the method.
		if templated {
			if allowed, ok := s.staticMethods[string(rc.Path())]; ok {
				rc.Response.Header.Set("Allow", allowed)
				render(rc, NewProblem("method_not_allowed", fmt.Sprintf("%s is not allowed here; allowed: %s", rc.Method(), allowed)))
				return
			}
		}
		// Bodies are bounded before anything else is looked at: an upload by its declared
		// length (and while it streams), everything else by TUMA_MAX_BODY_BYTES.
		if upload == 0 {
			if err := boundBody(rc, s.opts.MaxBodyBytes); err != nil {
				render(rc, problemFor(err))
				return
			}
		} else if rc.Request.Header.ContentLength() > upload {
			render(rc, problemFor(tooLarge(rc, upload)))
			return
		}
		// fasthttp's RequestCtx is only cancelled at server shutdown, so each request gets
		// its own deadline for the stores and actors it calls.
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.RequestTimeout)
		defer cancel()
		err := s.authorize(ctx, rc, acc, pages)
		if err == nil {
			err = h(ctx, rc)
		}
		var elsewhere *SeeOtherError
		if errors.As(err, &elsewhere) {
			_ = SeeOther(rc, elsewhere.Location)
			return
		}
		if err != nil {
			p := problemFor(err)
			if p.Status >= 500 {
				s.log.Error("request failed", slog.String("request_id", reqID), slog.String("route", route),
					slog.Any("error", err))
			}
			render(rc, p)
		}
	}
}

func (s *Server) accessLog(rc *fasthttp.RequestCtx, method, route, reqID string, status int, elapsed time.Duration) {
	if method == "" {
		method = string(rc.Method())
	}
	attrs := []slog.Attr{
		slog.String("request_id", reqID), slog.String("method", method), slog.String("route", route),
		slog.String("path", string(rc.Path())), slog.Int("status", status),
		slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
		slog.String("ip", s.proxies.ClientIP(rc)),
	}
	if p := Principal(rc); p.Source != "" {
		attrs = append(attrs, slog.String("account_id", p.AccountID.String()))
	}
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "http request", attrs...)
}

// SeeOtherError answers 303 to Location instead of a problem: a page whose caller must go
// elsewhere first (to sign in).
type SeeOtherError struct{ Location string }

func (e *SeeOtherError) Error() string { return "see other: " + e.Location }

// authorize lets the caller through as acc demands, recording who they are.
func (s *Server) authorize(ctx context.Context, rc *fasthttp.RequestCtx, acc Access, pages Pages) error {
	switch acc {
	case Page, PagePublic:
		p, err := pages.Admit(ctx, rc, acc)
		if err != nil || acc == PagePublic {
			return err
		}
		rc.SetUserValue(principalKey, p)
		if d := s.limiter.Allow(ctx, "acct:"+p.AccountID.String(), s.opts.AccountRate); !d.Allowed {
			return TooManyRequests("rate_limited", "too many requests for this account; slow down", d.RetryAfter)
		}
	case Optional:
		if len(rc.Request.Header.Peek("X-API-Key")) == 0 && len(rc.Request.Header.Peek("Authorization")) == 0 {
			return nil // anonymous
		}
		p, err := s.authenticate(ctx, rc)
		if err != nil {
			return err
		}
		rc.SetUserValue(principalKey, p)
	case Account:
		p, err := s.authenticate(ctx, rc)
		if err != nil {
			return err
		}
		rc.SetUserValue(principalKey, p)
		if d := s.limiter.Allow(ctx, "acct:"+p.AccountID.String(), s.opts.AccountRate); !d.Allowed {
			return TooManyRequests("rate_limited", "too many requests for this account; slow down", d.RetryAfter)
		}
	case Operator:
		return s.checkOperator(rc)
	}
	return nil
}

// authenticate accepts X-API-Key (source api) or Authorization: Bearer (source browser).
func (s *Server) authenticate(ctx context.Context, rc *fasthttp.RequestCtx) (auth.Principal, error) {
	if key := rc.Request.Header.Peek("X-API-Key"); len(key) > 0 {
		return s.auth.APIKey(ctx, string(key))
	}
	if h := rc.Request.Header.Peek("Authorization"); len(h) > 0 {
		tok, ok := auth.ParseBearer(string(h))
		if !ok {
			return auth.Principal{}, auth.ErrUnauthenticated
		}
		return s.auth.Bearer(ctx, tok)
	}
	return auth.Principal{}, auth.ErrUnauthenticated
}

func (s *Server) checkOperator(rc *fasthttp.RequestCtx) error {
	if s.opts.AdminToken == "" {
		return noRoute() // the admin API is off
	}
	tok, ok := auth.ParseBearer(string(rc.Request.Header.Peek("Authorization")))
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.AdminToken)) != 1 {
		return NewProblem("unauthenticated", "the admin API needs Authorization: Bearer <TUMA_ADMIN_TOKEN>")
	}
	return nil
}

// admitted reports whether a route counts against the admission bound: probes, metrics and
// the API reference are answered whatever the load, so operators can see a node that is
// shedding.
func admitted(route string) bool {
	switch route {
	case "/healthz", "/readyz", "/metrics", "/openapi.json", "/docs":
		return false
	}
	return !strings.HasPrefix(route, "/docs/") && !strings.HasPrefix(route, "/debug/pprof/")
}

// requestIDs hands out ids unique to this process: a random prefix and a counter.
type requestIDs struct {
	prefix string
	seq    atomic.Uint64
}

func newRequestIDs() *requestIDs {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return &requestIDs{prefix: hex.EncodeToString(b)}
}

// of keeps a caller's X-Request-Id when it is sane, so traces join up across services.
func (r *requestIDs) of(rc *fasthttp.RequestCtx) string {
	if in := rc.Request.Header.Peek("X-Request-Id"); len(in) > 0 && len(in) <= 64 && saneID(in) {
		return string(in)
	}
	return r.prefix + "-" + strconv.FormatUint(r.seq.Add(1), 36)
}

func saneID(b []byte) bool {
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
