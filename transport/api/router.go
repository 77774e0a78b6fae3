// Routes: what a group registers, and who may call each route.

package api

import (
	"context"
	"fmt"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/transport/auth"
)

// Handler is an endpoint. It writes its success response; an error becomes a problem.
type Handler func(ctx context.Context, rc *fasthttp.RequestCtx) error

// Access says who may call a route. The kinds are a closed set the chain owns: it checks the
// caller before the handler runs and renders the route's problems. The page kinds are the
// dashboard's (transport/web): registered with HandlePage, admitted by its Pages (session
// cookie, CSRF), their problems shown as HTML pages; they are not part of /openapi.json.
type Access int

const (
	Public     Access = iota // no credentials
	Optional                 // public; credentials that come are checked, and Principal names the caller
	Account                  // API key or bearer token of an active account, within its rate limit
	Operator                 // the operator token (TUMA_ADMIN_TOKEN); without one the route is absent
	Page                     // a dashboard page of a signed-in person (session cookie, CSRF), within the account's rate limit
	PagePublic               // a dashboard page open to anyone (sign in, sign up, reset; static assets)
)

// IsPage reports whether routes of this kind are dashboard pages rather than the API.
func (acc Access) IsPage() bool { return acc == Page || acc == PagePublic }

// Pages is the dashboard's side of the page kinds (transport/web).
type Pages interface {
	// Admit lets a page request through as acc demands: for Page, the person its session
	// names (an error *SeeOtherError sends them to sign in); for both kinds, the CSRF token
	// of a state-changing request.
	Admit(ctx context.Context, rc *fasthttp.RequestCtx, acc Access) (auth.Principal, error)
	// RenderProblem writes p as an HTML page.
	RenderProblem(rc *fasthttp.RequestCtx, p *Problem)
}

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
	if acc.IsPage() {
		panic(fmt.Sprintf("%s %s: a page route is registered with HandlePage", method, path))
	}
	s := r.s
	s.routes = append(s.routes, Route{Method: method, Path: path, Access: acc})
	s.router.Handle(method, path, s.wrap(method, path, acc, h))
}

// HandlePage registers a dashboard page (acc Page or PagePublic) behind the same chain, with
// pages admitting its callers and showing its problems.
func (r *Router) HandlePage(method, path string, acc Access, pages Pages, h Handler) {
	if !acc.IsPage() || pages == nil {
		panic(fmt.Sprintf("%s %s: HandlePage takes a page access kind and the pages", method, path))
	}
	s := r.s
	s.routes = append(s.routes, Route{Method: method, Path: path, Access: acc})
	s.router.Handle(method, path, s.chain(method, path, acc, pages, h))
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

// UploadPage registers a dashboard page (as HandlePage does) whose body (multipart, at most
// limit bytes) the handler reads as a stream with EachPart.
func (r *Router) UploadPage(method, path string, acc Access, pages Pages, limit int, h Handler) {
	r.s.uploads = append(r.s.uploads, uploadRoute{method: method, path: path, limit: limit})
	r.HandlePage(method, path, acc, pages, h)
}

// noRoute is the 404 of a path that matches no route.
func noRoute() error { return NotFound("no route matches this path") }
