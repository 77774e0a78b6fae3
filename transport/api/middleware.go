package api

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/auth"
)

// handler is an endpoint. It writes its success response; an error becomes a problem.
type handler func(ctx context.Context, rc *fasthttp.RequestCtx) error

// access says who may call a route.
type access int

const (
	public access = iota // no credentials
	authed               // API key or bearer token of an active account
	admin                // the operator token
)

const principalKey = "tuma.principal"

// principal returns the caller of an authed route.
func principal(rc *fasthttp.RequestCtx) auth.Principal {
	p, _ := rc.UserValue(principalKey).(auth.Principal)
	return p
}

// handle registers a route with the standard chain: request id, panic recovery, metrics and
// access log, authentication, rate limit, then the endpoint.
func (s *Server) handle(method, path string, acc access, h handler) {
	s.routes = append(s.routes, Route{Method: method, Path: path})
	s.router.Handle(method, path, s.wrap(method, path, acc, h))
}

func (s *Server) wrap(method, route string, acc access, h handler) fasthttp.RequestHandler {
	limited := admitted(route)
	templated := strings.Contains(route, "{")
	upload := s.uploadLimit(method, route)
	var rm *routeMetrics
	if method != "" {
		rm = s.metrics.forRoute(route, method)
	}
	return func(rc *fasthttp.RequestCtx) {
		start := time.Now()
		reqID := s.reqIDs.of(rc)
		rc.Response.Header.Set("X-Request-Id", reqID)
		s.metrics.inFlight.Inc()
		defer func() {
			if p := recover(); p != nil {
				s.metrics.panics.Inc()
				s.Log.Error("panic serving request", slog.String("request_id", reqID), slog.String("route", route),
					slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
				rc.Response.ResetBody()
				writeProblem(rc, problemFor(fmt.Errorf("panic: %v", p)))
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
				m := method
				if m == "" {
					m = string(rc.Method())
				}
				attrs := []slog.Attr{
					slog.String("request_id", reqID), slog.String("method", m), slog.String("route", route),
					slog.String("path", string(rc.Path())), slog.Int("status", status),
					slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
					slog.String("ip", s.clientIP(rc)),
				}
				if p := principal(rc); p.Source != "" {
					attrs = append(attrs, slog.String("account_id", p.AccountID.String()))
				}
				s.Log.LogAttrs(context.Background(), slog.LevelInfo, "http request", attrs...)
			}
		}()

		if limited {
			if !s.admit.Enter() {
				s.metrics.shed.Inc()
				p := problem("overloaded", "the node is serving as many requests as it can; retry shortly")
				p.RetryAfter = 1
				writeProblem(rc, p)
				return
			}
			defer func() {
				if upload > 0 {
					s.admit.Release() // its time is the client's upload speed, not the node's load
				} else {
					s.admit.Leave(time.Since(start))
				}
			}()
		}
		// A path the router matched to a template ({id}) that is also a path of its own
		// (DELETE /contacts/import against DELETE /contacts/{id}): that path lacks the method.
		if templated {
			if allowed, ok := s.staticMethods[string(rc.Path())]; ok {
				rc.Response.Header.Set("Allow", allowed)
				writeProblem(rc, problem("method_not_allowed", fmt.Sprintf("%s is not allowed here; allowed: %s", rc.Method(), allowed)))
				return
			}
		}
		// Bodies are bounded before anything else is looked at: an upload by its declared
		// length (and while it streams), everything else by TUMA_MAX_BODY_BYTES.
		if upload == 0 {
			if err := boundBody(rc, s.opts.MaxBodyBytes); err != nil {
				writeProblem(rc, problemFor(err))
				return
			}
		} else if rc.Request.Header.ContentLength() > upload {
			writeProblem(rc, problemFor(tooLarge(rc, upload)))
			return
		}
		// fasthttp's RequestCtx is only cancelled at server shutdown, so each request gets
		// its own deadline for the stores and actors it calls.
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.RequestTimeout)
		defer cancel()
		if err := s.serve(ctx, rc, acc, h); err != nil {
			p := problemFor(err)
			if p.Status >= 500 {
				s.Log.Error("request failed", slog.String("request_id", reqID), slog.String("route", route),
					slog.Any("error", err))
			}
			writeProblem(rc, p)
		}
	}
}

func (s *Server) serve(ctx context.Context, rc *fasthttp.RequestCtx, acc access, h handler) error {
	switch acc {
	case authed:
		p, err := s.authenticate(ctx, rc)
		if err != nil {
			return err
		}
		rc.SetUserValue(principalKey, p)
		if d := s.Limiter.Allow(ctx, "acct:"+p.AccountID.String(), s.opts.AccountRate); !d.Allowed {
			return tooManyRequests("rate_limited", "too many requests for this account; slow down",
				int(math.Ceil(d.RetryAfter.Seconds())))
		}
	case admin:
		if err := s.checkAdmin(rc); err != nil {
			return err
		}
	}
	return h(ctx, rc)
}

// authenticate accepts X-API-Key (source api) or Authorization: Bearer (source browser).
func (s *Server) authenticate(ctx context.Context, rc *fasthttp.RequestCtx) (auth.Principal, error) {
	if key := rc.Request.Header.Peek("X-API-Key"); len(key) > 0 {
		return s.Auth.APIKey(ctx, string(key))
	}
	if h := rc.Request.Header.Peek("Authorization"); len(h) > 0 {
		tok, ok := auth.ParseBearer(string(h))
		if !ok {
			return auth.Principal{}, auth.ErrUnauthenticated
		}
		return s.Auth.Bearer(ctx, tok)
	}
	return auth.Principal{}, auth.ErrUnauthenticated
}

func (s *Server) checkAdmin(rc *fasthttp.RequestCtx) error {
	if s.opts.AdminToken == "" {
		return notFound("no route matches this path") // the admin API is off
	}
	tok, ok := auth.ParseBearer(string(rc.Request.Header.Peek("Authorization")))
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.AdminToken)) != 1 {
		return problem("unauthenticated", "the admin API needs Authorization: Bearer <TUMA_ADMIN_TOKEN>")
	}
	return nil
}

// clientIP is the address rate limits and logs attribute a request to (see clientAddr).
func (s *Server) clientIP(rc *fasthttp.RequestCtx) string {
	peer, ok := netip.AddrFromSlice(rc.RemoteIP())
	if !ok {
		return rc.RemoteIP().String()
	}
	if len(s.opts.TrustedProxies) == 0 {
		return peer.Unmap().String()
	}
	return clientAddr(peer, rc.Request.Header.PeekAll("X-Forwarded-For"), s.opts.TrustedProxies).String()
}

// clientAddr finds the client behind trusted proxies. X-Forwarded-For is believed only when
// the peer is a trusted proxy, and then only from the right: each proxy appends the address
// it was reached from, so every hop left of the first untrusted one may be forged by the
// client. A malformed hop ends the walk at the last trusted proxy, which is what reached us.
func clientAddr(peer netip.Addr, xff [][]byte, trusted []netip.Prefix) netip.Addr {
	last := peer.Unmap()
	if !isTrusted(last, trusted) {
		return last
	}
	for i := len(xff) - 1; i >= 0; i-- {
		hops := strings.Split(string(xff[i]), ",")
		for j := len(hops) - 1; j >= 0; j-- {
			hop, ok := parseHop(hops[j])
			if !ok {
				return last
			}
			if !isTrusted(hop, trusted) {
				return hop
			}
			last = hop
		}
	}
	return last // every hop is a trusted proxy
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseHop reads one X-Forwarded-For entry: an address, or an address with a port as some
// proxies write it.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Addr().Zone() == "" {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
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
