// Package api is the plumbing of Tuma's HTTP front door (fasthttp + fasthttp/router) that
// every group of endpoints shares: the middleware chain (request id, recovery, metrics, access
// log, admission, authentication, rate limit), decoding, problem+json and its one catalogue,
// pagination and cursors, Idempotency-Key, uploads and JSON writing; and the Front listener,
// the OpenAPI document and the API explorer.
//
// The endpoints are groups in the packages below this one (accounts, sms, senders, …), each
// declaring only the collaborators it uses and registering its routes on a Router;
// cmd/tuma/app assembles them. Handlers return errors; problemFor maps them to statuses in
// one place.
package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/fasthttp/router"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence/redis"
	"github.com/tuma-sms/tuma/transport/admission"
	"github.com/tuma-sms/tuma/transport/auth"
)

// Options configures the chain every request passes through. A zero Rate turns its limit off.
type Options struct {
	MaxBodyBytes   int            // larger bodies get 413
	RequestTimeout time.Duration  // bounds each request's work (database, Redis, actors)
	MaxInFlight    int            // API requests served at once; more get 503 overloaded at once (0: no cap)
	ShedLatency    time.Duration  // the in-flight bound shrinks while mean latency exceeds this (0: fixed bound)
	AccessLog      bool           // log every request
	TrustedProxies []netip.Prefix // peers whose X-Forwarded-For is believed (see Proxies)
	AccountRate    redis.Rate     // per-account API rate limit
	AdminToken     string         // empty: operator routes answer 404
	Faults         Faults         // deliberate defects, for the drills' own tests only
}

// withDefaults fills in the bounds a zero Options leaves open.
func (o Options) withDefaults() Options {
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 4 << 20
	}
	return o
}

// Authenticator checks an account's credentials.
type Authenticator interface {
	APIKey(ctx context.Context, key string) (auth.Principal, error)
	Bearer(ctx context.Context, token string) (auth.Principal, error)
}

// Limiter takes tokens from named buckets.
type Limiter interface {
	Allow(ctx context.Context, key string, r redis.Rate) redis.Decision
}

// Deps are what the chain itself uses; each group brings its own.
type Deps struct {
	Log        *slog.Logger
	Registerer prometheus.Registerer
	Auth       Authenticator // Account and Optional routes
	Limiter    Limiter       // the per-account rate limit
	// Probe refreshes the dependency probes (the ops group's), for ProbeDependencies.
	Probe func(ctx context.Context) (bool, error)
}

// Group is a set of endpoints: it registers its routes on the server's router.
type Group interface {
	Register(r *Router)
}

// GroupFunc makes a function a Group.
type GroupFunc func(r *Router)

// Register calls f.
func (f GroupFunc) Register(r *Router) { f(r) }

// Server is the HTTP front door: the chain, and the routes of the groups it was built with.
type Server struct {
	opts    Options
	log     *slog.Logger
	auth    Authenticator
	limiter Limiter
	probe   func(ctx context.Context) (bool, error)
	proxies Proxies

	router  *router.Router
	metrics *httpMetrics
	routes  []Route
	reqIDs  *requestIDs
	admit   *admission.Gate
	uploads []uploadRoute // routes whose bodies are streamed (Router.Upload)
	// staticMethods are the methods of each path without parameters, "GET, POST"; set once
	// every route is registered.
	staticMethods map[string]string
}

// Route is one registered method and path template.
type Route struct {
	Method string
	Path   string
	Access Access // who may call it; page kinds are the dashboard's, not the API's
}

// New builds the server and registers the routes of every group.
func New(opts Options, deps Deps, groups ...Group) (*Server, error) {
	opts = opts.withDefaults()
	admit := admission.NewGate(opts.MaxInFlight, opts.ShedLatency)
	if opts.Faults.noShed() {
		admit = admission.NewGate(0, 0)
	}
	m, err := newHTTPMetrics(deps.Registerer, admit.Bound)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, log: deps.Log, auth: deps.Auth, limiter: deps.Limiter, probe: deps.Probe,
		proxies: Proxies(opts.TrustedProxies), router: router.New(), metrics: m, reqIDs: newRequestIDs(), admit: admit}
	s.router.RedirectTrailingSlash = false
	s.router.RedirectFixedPath = false
	s.router.NotFound = s.wrap("", "unmatched", Public, func(context.Context, *fasthttp.RequestCtx) error {
		return noRoute()
	})
	s.router.MethodNotAllowed = s.wrap("", "unmatched", Public, func(_ context.Context, rc *fasthttp.RequestCtx) error {
		return NewProblem("method_not_allowed", fmt.Sprintf("%s is not allowed here; allowed: %s", rc.Method(), rc.Response.Header.Peek("Allow")))
	})
	r := &Router{s: s}
	for _, g := range groups {
		g.Register(r)
	}
	s.staticMethods = map[string]string{}
	for _, r := range s.routes {
		if !strings.Contains(r.Path, "{") {
			if m := s.staticMethods[r.Path]; m != "" {
				s.staticMethods[r.Path] = m + ", " + r.Method
			} else {
				s.staticMethods[r.Path] = r.Method
			}
		}
	}
	return s, nil
}

// Handler is the complete request handler, for in-process tests and benchmarks.
func (s *Server) Handler() fasthttp.RequestHandler { return s.router.Handler }

// Routes lists every registered route.
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

// ProbeDependencies probes every dependency once, so tuma_dependency_up is fresh whether or
// not anyone asks /readyz (a worker runs it every few seconds).
func (s *Server) ProbeDependencies(ctx context.Context) (bool, error) {
	if s.probe == nil {
		return false, nil
	}
	return s.probe(ctx)
}

type fasthttpLogger struct{ log *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.log.Debug("fasthttp: " + fmt.Sprintf(format, args...))
}
