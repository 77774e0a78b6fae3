// Package suppressions is the dashboard's page of an account's suppression list
// (CONTRACT §15) at /app/contacts/suppressions, in the contacts area: the numbers no send or
// campaign ever messages, searched and paged newest first, added and removed. Every action
// is the JSON API's operation (transport/api/suppressions), so the rules, the messages and
// the tenant actor's copy of the list are the API's; a CSV file of numbers is imported as
// POST /suppressions/import does.
package suppressions

import (
	"context"
	"embed"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	suppr "github.com/tuma-sms/tuma/transport/api/suppressions"
	"github.com/tuma-sms/tuma/transport/web"
)

//go:embed templates/*.html
var templates embed.FS

// Operations are the suppression list's operations, as the JSON API runs them
// (suppressions.Handler).
type Operations interface {
	Suppressions(ctx context.Context, rc *fasthttp.RequestCtx) (suppr.Listing, error)
	Add(ctx context.Context, accountID uuid.UUID, in suppr.Input) (persistence.Suppression, bool, error)
	Remove(ctx context.Context, accountID uuid.UUID, phone string) error
	Import(ctx context.Context, accountID uuid.UUID, file io.Reader) (*suppr.ImportResult, error)
}

// Pages serve the suppression list. The page reads nothing beyond its operations, so the
// kit holds no store.
type Pages struct {
	web.Kit[Operations, struct{}]
}

// New returns the pages.
func New(site *web.Site, ops Operations) (*Pages, error) {
	kit, err := web.NewKit(site, templates, ops, struct{}{})
	if err != nil {
		return nil, err
	}
	return &Pages{Kit: kit}, nil
}

// RegisterPages adds the routes.
func (p *Pages) RegisterPages(r *web.Router) {
	r.Page("GET", listPath, p.list)
	r.Page("POST", listPath, p.add)
	r.Page("POST", listPath+"/{phone}/remove", p.remove)
	r.Upload("POST", importPath, suppr.MaxImportBody, p.upload)
}

// listPath is the page's address; its nav entry is the contacts area's.
const (
	listPath   = "/app/contacts/suppressions"
	importPath = listPath + "/import"
	navPath    = "/app/contacts"
)

// listData is what the page shows.
type listData struct {
	Filter   *web.Form // search, as asked, with its error
	Filtered bool      // a search narrows the list
	Listed   bool      // the list was read (the search and the link were valid)
	BadLink  bool      // the page's paging parameters were not valid (an altered cursor)
	Rows     []row
	Here     string // this page's address, for the forms that come back to it
	Next     string // the older entries' page ("" at the end)
	First    string // the newest entries' page, when this is a later one
	// Import is the CSV upload form, with its errors; Imported what the last upload did.
	Import   *web.Form
	Imported *suppr.ImportResult
}

// row is a suppression as the list shows it.
type row struct {
	Phone   string // E.164
	How     string // the source in words
	Reason  string
	Added   time.Time
	Remove  string // the remove form's action
	Keyword bool   // the person replied STOP: removing it goes against their word
	Contact bool   // its contact was opted out
}

func newRow(s persistence.Suppression) row {
	r := row{Phone: s.E164(), How: sourceText(s.Source), Reason: s.Reason, Added: s.CreatedAt}
	r.Remove = listPath + "/" + url.PathEscape(r.Phone) + "/remove"
	r.Keyword = s.Source == persistence.SuppressedByKeyword
	r.Contact = s.Source == persistence.SuppressedByContact
	return r
}

// sourceText says how a number came onto the list.
func sourceText(s persistence.SuppressionSource) string {
	switch s {
	case persistence.SuppressedByAPI:
		return "Added by you"
	case persistence.SuppressedByKeyword:
		return "Replied STOP"
	case persistence.SuppressedByContact:
		return "Contact opted out"
	}
	return string(s)
}

// list shows a page of the account's list as GET /suppressions reads it.
func (p *Pages) list(ctx context.Context, rc *fasthttp.RequestCtx) error {
	return p.renderList(ctx, rc, http.StatusOK, web.NewForm())
}

// renderList draws the page with the add form (its values and errors in add).
func (p *Pages) renderList(ctx context.Context, rc *fasthttp.RequestCtx, status int, add *web.Form) error {
	return p.renderWith(ctx, rc, status, add, web.NewForm(), nil)
}

// renderWith is renderList with the import form's errors and the last import's result.
func (p *Pages) renderWith(ctx context.Context, rc *fasthttp.RequestCtx, status int, add, imp *web.Form, res *suppr.ImportResult) error {
	q := rc.QueryArgs()
	d := listData{Filter: web.NewForm(), Here: listPath, Import: imp, Imported: res}
	d.Filter.Set("search", string(q.Peek("search")))
	d.Filter.Set("page_size", string(q.Peek("page_size")))
	d.Filtered = strings.TrimSpace(d.Filter.Get("search")) != ""
	if string(rc.Method()) == http.MethodGet { // this page's address, cursor and all
		d.Here = string(rc.RequestURI())
	}
	l, err := p.Ops.Suppressions(ctx, rc)
	var prob *api.Problem
	switch {
	case errors.As(err, &prob) && prob.Status < 500:
		d.Filter.Fail(prob) // a search no number begins with: said beside the search
		d.BadLink = len(d.Filter.ErrorsOf("search")) < len(prob.Errors)
		if status == http.StatusOK {
			status = prob.Status
		}
	case err != nil:
		return err
	default:
		d.Listed = true
		for _, s := range l.Suppressions {
			d.Rows = append(d.Rows, newRow(s))
		}
		if l.NextCursor != nil {
			d.Next = pageURL(d.Filter, "cursor", *l.NextCursor)
		}
		if len(q.Peek("cursor")) > 0 {
			d.First = pageURL(d.Filter, "", "")
		}
	}
	return p.Views.Render(ctx, rc, status, "suppressions", &web.Page{Title: "Suppression list", Nav: navPath, Data: d, Form: add})
}

// pageURL is the page with the search (and the page size a link asked for), and one more
// parameter when key is given.
func pageURL(filter *web.Form, key, value string) string {
	return web.ListURL(listPath, filter, []string{"search", "page_size"}, key, value)
}

// add suppresses a number with POST /suppressions' operation: its field errors are shown
// beside the fields and nothing changes; a number on the list already is said so.
func (p *Pages) add(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := web.ReadForm(rc)
	phone, reason := f.Get("phone"), f.Get("reason")
	s, added, err := p.Ops.Add(ctx, web.AccountID(rc), suppr.Input{Phone: &phone, Reason: &reason})
	if err != nil {
		var prob *api.Problem
		if !errors.As(err, &prob) || prob.Status != http.StatusUnprocessableEntity {
			return err
		}
		f.Fail(prob)
		return p.renderList(ctx, rc, prob.Status, f)
	}
	if !added {
		p.Site.Flash(rc, "info", s.E164()+" is on your suppression list already, since "+web.Date(s.CreatedAt)+" ("+
			strings.ToLower(sourceText(s.Source))+"): nothing changed.")
		return api.SeeOther(rc, listPath)
	}
	p.Site.Flash(rc, "success", "Added "+s.E164()+" to your suppression list: no send or campaign will message it.")
	return api.SeeOther(rc, listPath)
}

// remove lifts a suppression with DELETE /suppressions/{phone}'s operation. A number not on
// the account's list (another account's, or no number at all) is a 404 page.
func (p *Pages) remove(ctx context.Context, rc *fasthttp.RequestCtx) error {
	raw, _ := rc.UserValue("phone").(string)
	phone, err := url.PathUnescape(raw)
	if err != nil {
		phone = raw
	}
	err = p.Ops.Remove(ctx, web.AccountID(rc), phone)
	var prob *api.Problem
	if errors.As(err, &prob) && prob.Status == http.StatusUnprocessableEntity {
		return api.NotFound("this number is not on your suppression list")
	}
	if err != nil {
		return err
	}
	p.Site.Flash(rc, "success", "Removed "+phone+" from your suppression list: sends and campaigns can message it again.")
	return api.SeeOther(rc, back(web.ReadForm(rc).Get("next")))
}

// importTimeout bounds an import, as the API's does: a million numbers take about half a
// minute.
const importTimeout = 10 * time.Minute

// upload adds the numbers of a CSV file with POST /suppressions/import's operation, read as
// it arrives; the page then says what it did, with the first rows it refused and why.
func (p *Pages) upload(ctx context.Context, rc *fasthttp.RequestCtx, parts web.Parts) error {
	acct := web.AccountID(rc)
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), importTimeout)
	defer cancel()
	var res *suppr.ImportResult
	err := parts(func(part api.FormPart) error {
		if part.Name != "file" || part.FileName == "" || res != nil {
			return nil // a browser sends the file input empty when none was chosen
		}
		var err error
		res, err = p.Ops.Import(ictx, acct, part.Body)
		return err
	})
	imp := web.NewForm()
	var prob *api.Problem
	switch {
	case errors.As(err, &prob) && prob.Status < 500:
		imp.Fail(prob)
		return p.renderWith(ctx, rc, prob.Status, web.NewForm(), imp, nil)
	case err != nil:
		return err
	case res == nil:
		imp.AddError("file", "is required: a CSV of numbers, one a row (phone, then an optional reason)")
		return p.renderWith(ctx, rc, http.StatusUnprocessableEntity, web.NewForm(), imp, nil)
	}
	return p.renderWith(ctx, rc, http.StatusOK, web.NewForm(), imp, res)
}

// back is where a form sends the browser after it: the page of the list it came from.
func back(next string) string {
	if n := web.SafeNext(next); n == listPath || strings.HasPrefix(n, listPath+"?") {
		return n
	}
	return listPath
}
