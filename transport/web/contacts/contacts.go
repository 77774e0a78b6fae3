// Package contacts is the dashboard's address book: the account's contacts (search, add,
// opt out, export, the import template) at /app/contacts, its groups at
// /app/contacts/groups, and CSV import at /app/contacts/import. Every action runs the JSON
// API's operation (transport/api/contacts), so the rules, limits and errors are the API's.
package contacts

import (
	"context"
	"embed"
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	book "github.com/tuma-sms/tuma/transport/api/contacts"
	"github.com/tuma-sms/tuma/transport/web"
)

//go:embed templates/*.html
var templates embed.FS

// Operations are the address book's operations, as the JSON API runs them (book.Handler).
type Operations interface {
	Contacts(ctx context.Context, rc *fasthttp.RequestCtx) (book.Listing, error)
	AddContact(ctx context.Context, acct uuid.UUID, in book.ContactInput) (persistence.Contact, error)
	OptOut(ctx context.Context, acct, id uuid.UUID) error
	CreateGroup(ctx context.Context, acct uuid.UUID, in book.GroupInput) (persistence.Group, error)
	DeleteGroup(ctx context.Context, acct, id uuid.UUID) error
	Export(ctx context.Context, rc *fasthttp.RequestCtx, acct uuid.UUID, group *uuid.UUID) error
	Import(ctx context.Context, acct uuid.UUID, parts book.Parts, report bool, finish func(ctx context.Context, imp *persistence.ContactImport) error) error
	WriteReport(ctx context.Context, rc *fasthttp.RequestCtx, imp *persistence.ContactImport) error
}

// Store is what the pages read besides: the account's groups (GET /contacts/groups), with
// their contacts counted only where the page shows the counts.
type Store interface {
	Groups(ctx context.Context, accountID uuid.UUID) ([]persistence.Group, error)
	GroupNames(ctx context.Context, accountID uuid.UUID) ([]persistence.Group, error)
	GroupOf(ctx context.Context, accountID, id uuid.UUID) error
}

// Pages serve the address book.
type Pages struct {
	web.Kit[Operations, Store]
}

// New returns the pages.
func New(site *web.Site, ops Operations, store Store) (*Pages, error) {
	kit, err := web.NewKit(site, templates, ops, store)
	if err != nil {
		return nil, err
	}
	return &Pages{Kit: kit}, nil
}

// RegisterPages adds the routes.
func (p *Pages) RegisterPages(r *web.Router) {
	r.Page("GET", "/app/contacts", p.list)
	r.Page("POST", "/app/contacts", p.add)
	r.Page("POST", "/app/contacts/{id}/opt-out", p.optOut)
	r.Page("GET", "/app/contacts/export", p.export)
	r.Page("GET", "/app/contacts/template", p.importTemplate)
	r.Page("GET", "/app/contacts/groups", p.groups)
	r.Page("POST", "/app/contacts/groups", p.createGroup)
	r.Page("POST", "/app/contacts/groups/{id}/delete", p.deleteGroup)
	r.Page("GET", "/app/contacts/import", p.importForm)
	r.Upload("POST", "/app/contacts/import", book.MaxImportBody, p.upload)
}

const listPath = "/app/contacts"

// listData is what the contacts page shows.
type listData struct {
	Filter   *web.Form // search and group_id, as asked, with their errors
	Filtered bool      // a search or a group narrows the list
	Group    *persistence.Group
	Groups   []persistence.Group
	Choices  []choice // the filter's groups
	Pick     []choice // the add form's groups
	Rows     []row
	Total    int64
	Listed   bool   // the list was read (the filter was valid)
	BadLink  bool   // the page's paging parameters were not valid (an altered cursor)
	Here     string // this page's address, for the forms that come back to it
	Next     string // the next page's address ("" at the end)
	First    string // the first page's address, when this is a later one
	Export   string // the export of the group shown, or of every contact
}

// row is a contact as the list shows it.
type row struct {
	persistence.Contact
	Name  string // first and last
	Group string // its group's name
}

// choice is an option of a group select.
type choice struct {
	Value, Label string
	Selected     bool
}

func groupChoices(gs []persistence.Group, none, selected string) []choice {
	out := []choice{{Value: "", Label: none, Selected: selected == ""}}
	for _, g := range gs {
		id := g.ID.String()
		out = append(out, choice{Value: id, Label: g.Name, Selected: id == selected})
	}
	return out
}

// list shows a page of the account's contacts as GET /contacts reads it.
func (p *Pages) list(ctx context.Context, rc *fasthttp.RequestCtx) error {
	return p.renderList(ctx, rc, http.StatusOK, web.NewForm())
}

// renderList draws the contacts page with the add form (its values and errors in add).
func (p *Pages) renderList(ctx context.Context, rc *fasthttp.RequestCtx, status int, add *web.Form) error {
	acct := web.AccountID(rc)
	q := rc.QueryArgs()
	d := listData{Filter: web.NewForm(), Here: listPath}
	d.Filter.Set("search", string(q.Peek("search")))
	d.Filter.Set("group_id", string(q.Peek("group_id")))
	d.Filtered = d.Filter.Get("search") != "" || d.Filter.Get("group_id") != ""
	if string(rc.Method()) == http.MethodGet { // this page's address, cursor and all
		d.Here = string(rc.RequestURI())
	}
	var err error
	if d.Groups, err = p.Store.GroupNames(ctx, acct); err != nil {
		return err
	}
	if g := d.Filter.Get("group_id"); g != "" {
		if d.Group = findGroup(d.Groups, g); d.Group == nil {
			return api.NotFound("no such group") // malformed, or not this account's
		}
	}
	d.Choices = groupChoices(d.Groups, "All contacts", d.Filter.Get("group_id"))
	pick := add.Get("group_id")
	if _, posted := add.Values["group_id"]; !posted && d.Group != nil {
		pick = d.Group.ID.String() // a contact added while a group is shown goes into it
	}
	d.Pick = groupChoices(d.Groups, "No group", pick)
	d.Export = "/app/contacts/export"
	if d.Group != nil {
		d.Export += "?group_id=" + d.Group.ID.String()
	}
	l, err := p.Ops.Contacts(ctx, rc)
	var prob *api.Problem
	switch {
	case errors.As(err, &prob) && prob.Status < 500:
		d.Filter.Fail(prob) // a search too long: said beside the search
		d.BadLink = len(d.Filter.ErrorsOf("search")) < len(prob.Errors)
		status = prob.Status
	case err != nil:
		return err
	default:
		d.Listed, d.Total = true, l.Total
		names := map[uuid.UUID]string{}
		for _, g := range d.Groups {
			names[g.ID] = g.Name
		}
		for _, c := range l.Contacts {
			r := row{Contact: c, Name: fullName(c)}
			if c.GroupID != nil {
				r.Group = names[*c.GroupID]
			}
			d.Rows = append(d.Rows, r)
		}
		env := api.NewEnvelope(l.Contacts, l.Total, l.Page, l.List, func(c persistence.Contact) uuid.UUID { return c.ID })
		if env.NextCursor != nil {
			d.Next = pageURL(d.Filter, "cursor", *env.NextCursor)
		}
		if l.Page.After != nil || l.Page.Number > 1 {
			d.First = pageURL(d.Filter, "", "")
		}
	}
	return p.Views.Render(ctx, rc, status, "contacts", &web.Page{Title: "Contacts", Nav: listPath, Data: d, Form: add})
}

// pageURL is the contacts page with the filter, and one more parameter when key is given.
func pageURL(filter *web.Form, key, value string) string {
	return web.ListURL(listPath, filter, []string{"search", "group_id"}, key, value)
}

// findGroup is the group of gs with the id raw, nil when none is (or raw is no id).
func findGroup(gs []persistence.Group, raw string) *persistence.Group {
	id, err := uuid.Parse(raw)
	if err != nil {
		return nil
	}
	for i := range gs {
		if gs[i].ID == id {
			return &gs[i]
		}
	}
	return nil
}

func fullName(c persistence.Contact) string {
	switch {
	case c.FirstName == "":
		return c.LastName
	case c.LastName == "":
		return c.FirstName
	}
	return c.FirstName + " " + c.LastName
}

// add adds a contact with POST /contacts' operation; its field errors are shown beside the
// fields, a phone the account has already beside the phone.
func (p *Pages) add(ctx context.Context, rc *fasthttp.RequestCtx) error {
	acct := web.AccountID(rc)
	f := web.ReadForm(rc)
	in := book.ContactInput{Phone: field(f, "phone"), FirstName: field(f, "first_name"), LastName: field(f, "last_name")}
	if g := f.Get("group_id"); g != "" {
		if err := p.ownGroup(ctx, acct, g); err != nil {
			return err
		}
		in.GroupID = &g
	}
	c, err := p.Ops.AddContact(ctx, acct, in)
	switch {
	case errors.Is(err, persistence.ErrContactExists):
		f.AddError("phone", "is in your contacts already")
		return p.renderList(ctx, rc, http.StatusConflict, f)
	case errors.Is(err, persistence.ErrContactOptedOut):
		f.AddError("phone", "belongs to a contact who opted out: it cannot be added again")
		return p.renderList(ctx, rc, http.StatusConflict, f)
	case err != nil:
		status, err := shown(f, err)
		if err != nil {
			return err
		}
		return p.renderList(ctx, rc, status, f)
	}
	p.Site.Flash(rc, "success", "Added "+describe(c)+".")
	return api.SeeOther(rc, listPath)
}

// shown records in f an operation's problem that a form shows (its fields' errors beside
// them), with its status; any other error is returned, for an error page.
func shown(f *web.Form, err error) (int, error) {
	var prob *api.Problem
	if !errors.As(err, &prob) {
		return 0, err
	}
	switch prob.Status {
	case http.StatusBadRequest, http.StatusConflict, http.StatusUnprocessableEntity:
		f.Fail(prob)
		return prob.Status, nil
	}
	return 0, err
}

// field is a form's value as an operation's input: absent when empty.
func field(f *web.Form, name string) *string {
	v, ok := f.Values[name]
	if !ok {
		return nil
	}
	return &v
}

// ownGroup checks a group id a form names is one of the account's: anything else (a forged
// form) is a 404 page, and nothing is changed.
func (p *Pages) ownGroup(ctx context.Context, acct uuid.UUID, raw string) error {
	id, err := uuid.Parse(raw)
	if err != nil {
		return api.NotFound("no such group")
	}
	return p.Store.GroupOf(ctx, acct, id)
}

func describe(c persistence.Contact) string {
	if n := fullName(c); n != "" {
		return n + " (" + c.Phone + ")"
	}
	return c.Phone
}

// optOut opts a contact out with DELETE /contacts/{id}'s operation; another account's is a
// 404 page.
func (p *Pages) optOut(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	if err := p.Ops.OptOut(ctx, web.AccountID(rc), id); err != nil {
		return err
	}
	p.Site.Flash(rc, "success", "Opted out: they are off your list and get no more campaign messages.")
	return api.SeeOther(rc, back(web.ReadForm(rc).Get("next")))
}

// back is where a form sends the browser after it: the list it came from, when that is a
// contacts page.
func back(next string) string {
	if n := web.SafeNext(next); n == listPath || len(n) > len(listPath) && n[:len(listPath)+1] == listPath+"?" {
		return n
	}
	return listPath
}

// export streams the contacts (of a group) as CSV with GET /contacts/export's code.
func (p *Pages) export(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := api.NewQuery(rc)
	group := q.UUID("group_id")
	if err := q.Err(); err != nil {
		return api.NotFound("no such group")
	}
	return p.Ops.Export(ctx, rc, web.AccountID(rc), group)
}

// importTemplate is the import template, as GET /contacts/template answers.
func (p *Pages) importTemplate(_ context.Context, rc *fasthttp.RequestCtx) error {
	book.WriteTemplate(rc)
	return nil
}
