// Package web is the dashboard's plumbing: the server-rendered pages under /app/ for the
// people who run a tenant account. It owns sessions (a cookie naming a row in PostgreSQL),
// CSRF, the template set with its layout, HTML pages and HTML error pages, flash messages,
// the static assets (embedded, with a content hash in their URLs), the security headers,
// the SVG chart helpers and form decoding; and the sign-up, sign-in and email pages.
//
// The pages themselves are groups in the packages below this one (overview, notifications,
// …), each registering its routes on a Router and rendering its templates with Views; every
// action calls the same operation or store read as the JSON API. The chain of transport/api
// admits page requests through Site.Admit (the Page and PagePublic access kinds).
//
// A page group, in short (see overview and notifications):
//
//	//go:embed templates/*.html
//	var templates embed.FS // templates/send.html: {{define "content"}}…{{end}}, and fragments
//
//	views, err := site.Views(templates)                     // each file a page in the layout
//	func (p *Page) RegisterPages(r *web.Router) {
//		r.Page("GET", "/app/send", p.form)               // signed in; CSRF on POST
//		r.Page("POST", "/app/send", p.send)
//	}
//	id := web.AccountID(rc)                                  // or api.Principal(rc).AccountID
//	f := web.ReadForm(rc)                                    // the posted fields
//	err := op(ctx, input built from f)                       // the JSON API's operation
//	return views.RenderForm(ctx, rc, "send", &web.Page{Title: "Send", Nav: "/app/send", Form: f}, err)
//	site.Flash(rc, "success", "Sent."); return api.SeeOther(rc, "/app/messages")
//
// Templates use {{template "field" (field .Form "message" "Message" "textarea" "required")}}
// (a labelled input with its errors under the API's field name), {{template "csrf" .CSRF}}
// in every form, {{template "barchart" .Data.Chart}} (web.NewBarChart) and {{template "hbar"
// (web.NewHBar …)}}, and kes, num, pct, date and when to format. Errors a handler returns
// become HTML error pages (404 for another account's id); a 303 follows every POST.
package web

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/auth"
)

// Options configure the plumbing.
type Options struct {
	Secure      bool          // cookies only over HTTPS (TUMA_PUBLIC_URL is https)
	IdleTimeout time.Duration // a session unused this long ends (30 minutes)
	MaxAge      time.Duration // a session ends this long after sign-in, used or not (TUMA_SESSION_MAX_AGE)
	Proxies     api.Proxies   // who a request is from, for sessions and the per-address budgets
}

// Defaults of Options.
const (
	DefaultIdleTimeout = 30 * time.Minute
	DefaultMaxAge      = 12 * time.Hour
	// touchEvery bounds how often a session's last use is written: most page views only read.
	touchEvery = time.Minute
)

// Store is what the plumbing reads and writes.
type Store interface {
	AccountByID(ctx context.Context, id uuid.UUID) (persistence.Account, error)
	CreateWebSession(ctx context.Context, ws persistence.WebSession, idleBefore, createdBefore time.Time) error
	WebSessionByID(ctx context.Context, id []byte) (persistence.WebSession, error)
	TouchWebSession(ctx context.Context, id []byte, at time.Time) error
	DeleteWebSession(ctx context.Context, id []byte) error
}

// Authenticator applies the API's rules to a session: the account's status and token
// version, from the cache every node keeps (auth.Authenticator).
type Authenticator interface {
	Session(ctx context.Context, accountID uuid.UUID, tokenVersion int64) (auth.Principal, error)
}

// Deps are the plumbing's collaborators.
type Deps struct {
	Log   *slog.Logger
	Store Store
	Auth  Authenticator
	Now   func() time.Time
}

// Site is the plumbing every page group shares. It is the chain's api.Pages.
type Site struct {
	opts   Options
	log    *slog.Logger
	store  Store
	auth   Authenticator
	now    func() time.Time
	assets *assets
	views  *Views // the plumbing's own pages: errors, sign-in, sign-up, …
	base   *baseTemplates
}

// New builds the plumbing: the assets and the layout are parsed and hashed here, so a broken
// template stops the node at boot.
func New(opts Options, d Deps) (*Site, error) {
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	s := &Site{opts: opts, log: d.Log, store: d.Store, auth: d.Auth, now: d.Now}
	var err error
	if s.assets, err = loadAssets(); err != nil {
		return nil, err
	}
	if s.base, err = parseBase(s.assets); err != nil {
		return nil, err
	}
	if s.views, err = s.Views(templateFiles); err != nil {
		return nil, err
	}
	return s, nil
}

// Group is a set of pages: it registers its routes on the dashboard's router.
type Group interface {
	RegisterPages(r *Router)
}

// GroupFunc makes a function a Group.
type GroupFunc func(r *Router)

// RegisterPages calls f.
func (f GroupFunc) RegisterPages(r *Router) { f(r) }

// Router is what page groups register on: the API's router, with the site admitting callers.
type Router struct {
	api  *api.Router
	site *Site
}

// Page registers a page of a signed-in person: without a live session a GET is sent to sign
// in (and back), and every state-changing method needs the session's CSRF token.
// api.Principal(rc) names the account.
func (r *Router) Page(method, path string, h api.Handler) {
	r.api.HandlePage(method, path, api.Page, r.site, h)
}

// Public registers a page anyone may open (sign in, sign up, password reset); a
// state-changing method needs the pre-session CSRF cookie's token.
func (r *Router) Public(method, path string, h api.Handler) {
	r.api.HandlePage(method, path, api.PagePublic, r.site, h)
}

// Mount makes the dashboard one group of the API's server: the site's own routes (assets,
// GET / and the pages of this package) and groups', in order.
func (s *Site) Mount(groups ...Group) api.Group {
	return api.GroupFunc(func(ar *api.Router) {
		r := &Router{api: ar, site: s}
		s.registerOwn(r)
		for _, g := range groups {
			g.RegisterPages(r)
		}
		// Any other path under /app/ is a page that does not exist: an HTML 404.
		r.Public("GET", "/app/{rest:*}", func(context.Context, *fasthttp.RequestCtx) error {
			return api.NotFound("there is no such page")
		})
	})
}
