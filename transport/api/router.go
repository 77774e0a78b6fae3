// Routes: what a group registers, and who may call each route.

package api

import (
	"context"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/auth"
)

// Handler is an endpoint. It writes its success response; an error becomes a problem.
type Handler func(ctx context.Context, rc *fasthttp.RequestCtx) error

// Access says who may call a route. The kinds are a closed set the chain owns: it checks the
// caller before the handler runs and renders the route's problems. A new kind (the dashboard's
// session cookie with CSRF, whose problems render as HTML) is a case in authorize and render.
type Access int

const (
	Public   Access = iota // no credentials
	Optional               // public; credentials that come are checked, and Principal names the caller
	Account                // API key or bearer token of an active account, within its rate limit
	Operator               // the operator token (TUMA_ADMIN_TOKEN); without one the route is absent
)

const principalKey = "tuma.principal"

// Principal returns the caller of an Account route, or of an Optional one who signed in
// (Source is empty for an anonymous caller).
func Principal(rc *fasthttp.RequestCtx) auth.Principal {
	p, _ := rc.UserValue(principalKey).(auth.Principal)
	return p
}

// Router is what groups register their routes on.
type Router struct{ s *Server }

// Handle registers a route behind the chain: request id, panic recovery, metrics and access
// log, admission, bounded body, access, then the endpoint.
func (r *Router) Handle(method, path string, acc Access, h Handler) {
	s := r.s
	s.routes = append(s.routes, Route{Method: method, Path: path})
	s.router.Handle(method, path, s.wrap(method, path, acc, h))
}

// HandleIf registers a route that exists only when on (a feature the configuration turns
// on): off, it answers 404 as an unknown path does, before any credentials are looked at, and
// stays in Routes (the document describes it).
func (r *Router) HandleIf(on bool, method, path string, acc Access, h Handler) {
	if !on {
		acc, h = Public, func(context.Context, *fasthttp.RequestCtx) error { return noRoute() }
	}
	r.Handle(method, path, acc, h)
}

// Upload registers a route whose body (multipart, at most limit bytes) the handler reads as a
// stream with EachPart.
func (r *Router) Upload(method, path string, acc Access, limit int, h Handler) {
	r.s.uploads = append(r.s.uploads, uploadRoute{method: method, path: path, limit: limit})
	r.Handle(method, path, acc, h)
}

// noRoute is the 404 of a path that matches no route.
func noRoute() error { return NotFound("no route matches this path") }
