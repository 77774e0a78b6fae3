package web

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

// Page is what the layout and a page's template see. A handler fills the first fields;
// Render fills the rest.
type Page struct {
	Title   string   // the document's title and the page's heading
	Nav     string   // the path of the nav entry to mark as the current page
	Data    any      // the page's own data
	Form    *Form    // a form's values and errors (nil: none)
	Banners []Banner // messages above the content; Render adds the flash

	CSRF     string               // the token every form of the page carries
	SignedIn bool                 // the page is a signed-in person's (the nav and sign-out show)
	Account  *persistence.Account // the signed-in account (nil on public pages and some error pages)
	NavItems []NavItem
}

// NavItem is one entry of the dashboard's navigation.
type NavItem struct {
	Path, Label string
}

// navItems are every page of the dashboard's navigation, in order.
var navItems = []NavItem{
	{"/app/", "Overview"},
	{"/app/send", "Send"},
	{"/app/messages", "Messages"},
	{"/app/campaigns", "Campaigns"},
	{"/app/reports", "Reports"},
	{"/app/contacts", "Contacts"},
	{"/app/senders", "Sender IDs"},
	{"/app/wallet", "Wallet"},
	{"/app/developers", "Developers"},
	{"/app/notifications", "Notifications"},
	{"/app/settings", "Settings"},
}

// baseTemplates are the layout and the shared partials, cloned under every page.
type baseTemplates struct {
	t *template.Template
}

func parseBase(a *assets) (*baseTemplates, error) {
	t, err := template.New("base").Funcs(funcs(a)).ParseFS(templateFiles, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard layout: %w", err)
	}
	return &baseTemplates{t: t}, nil
}

// Views are a page group's templates: each templates/NAME.html file of its fsys defines
// "content" (and any fragments) and is a page NAME drawn inside the layout.
type Views struct {
	site  *Site
	pages map[string]*template.Template
}

// Views parses the page templates of a group (templates/*.html in fsys, usually its embed).
func (s *Site) Views(fsys fs.FS) (*Views, error) {
	files, err := fs.Glob(fsys, "templates/*.html")
	if err != nil {
		return nil, err
	}
	v := &Views{site: s, pages: map[string]*template.Template{}}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" || name == "partials" {
			continue
		}
		t, err := template.Must(s.base.t.Clone()).ParseFS(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("dashboard page %s: %w", f, err)
		}
		v.pages[name] = t
	}
	return v, nil
}

// Render writes the page name inside the layout with the given status: the signed-in
// account in the header, the flash, the CSRF token in every form.
func (v *Views) Render(ctx context.Context, rc *fasthttp.RequestCtx, status int, name string, p *Page) error {
	t, ok := v.pages[name]
	if !ok {
		return fmt.Errorf("no dashboard page %q", name)
	}
	if err := v.site.fill(ctx, rc, p); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", p); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	writeCompressed(rc, status, "text/html; charset=utf-8", b.Bytes())
	return nil
}

// Fragment writes one template of page name without the layout (an htmx partial).
func (v *Views) Fragment(rc *fasthttp.RequestCtx, status int, name, block string, data any) error {
	t, ok := v.pages[name]
	if !ok {
		return fmt.Errorf("no dashboard page %q", name)
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, block, data); err != nil {
		return fmt.Errorf("render %s/%s: %w", name, block, err)
	}
	writeCompressed(rc, status, "text/html; charset=utf-8", b.Bytes())
	return nil
}

// RenderForm shows a form again after its operation failed with a problem the form can
// show (400, 401, 402, 409, 422: its fields' errors beside them, or a message above), with
// the problem's status; a domain error is shown as the API answers it (an insufficient
// balance is a 402 with its detail). Any other error is returned for the chain's error page.
func (v *Views) RenderForm(ctx context.Context, rc *fasthttp.RequestCtx, name string, p *Page, err error) error {
	if err == nil {
		return nil
	}
	prob := api.ProblemOf(err)
	if !formShows(prob.Status) {
		return err
	}
	if p.Form == nil {
		p.Form = NewForm()
	}
	p.Form.Fail(prob)
	return v.Render(ctx, rc, prob.Status, name, p)
}

func formShows(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusPaymentRequired, http.StatusConflict, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// fill completes a page: the session's CSRF token and account, or the pre-session token on
// a public page; the flash; the navigation.
func (s *Site) fill(ctx context.Context, rc *fasthttp.RequestCtx, p *Page) error {
	p.NavItems = navItems
	if ws, ok := currentSession(rc); ok {
		p.SignedIn = true
		p.CSRF = encodeToken(ws.CSRF)
		a, err := s.store.AccountByID(ctx, ws.AccountID)
		if err != nil {
			return err
		}
		p.Account = &a
	} else {
		token, err := s.preSessionToken(rc)
		if err != nil {
			return err
		}
		p.CSRF = token
	}
	if f, ok := s.takeFlash(rc); ok {
		p.Banners = append([]Banner{f}, p.Banners...)
	}
	return nil
}

// RenderProblem writes a problem as an HTML error page (api.Pages): what happened and what
// to do, with Retry-After on 429 and 503.
func (s *Site) RenderProblem(rc *fasthttp.RequestCtx, prob *api.Problem) {
	secureHeaders(rc)
	if prob.RetryAfter > 0 {
		rc.Response.Header.Set("Retry-After", strconv.Itoa(prob.RetryAfter))
	}
	p := &Page{Title: errorTitle(prob), Data: prob, NavItems: navItems}
	if ws, ok := currentSession(rc); ok {
		p.SignedIn, p.CSRF = true, encodeToken(ws.CSRF)
	}
	var b bytes.Buffer
	if err := s.views.pages["error"].ExecuteTemplate(&b, "layout", p); err != nil {
		s.log.Error("render an error page", "error", err)
		rc.Response.Header.SetContentType("text/plain; charset=utf-8")
		rc.SetStatusCode(prob.Status)
		rc.SetBodyString(prob.Title + "\n")
		return
	}
	writeCompressed(rc, prob.Status, "text/html; charset=utf-8", b.Bytes())
}

func errorTitle(p *api.Problem) string {
	switch p.Status {
	case http.StatusNotFound:
		return "Page not found"
	case http.StatusForbidden:
		return "Not allowed"
	case http.StatusTooManyRequests:
		return "Too many attempts"
	case http.StatusServiceUnavailable:
		return "Temporarily unavailable"
	case http.StatusConflict:
		return "That cannot be done now"
	}
	if p.Status >= 500 {
		return "Something went wrong"
	}
	return p.Title
}
