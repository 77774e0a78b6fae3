// Package contacts is the address book endpoints: an account's contacts and their groups,
// with CSV import and export.
package contacts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/contactcsv"
	"github.com/tuma-sms/tuma/transport/strictjson"
)

// Options configure the endpoints.
type Options struct {
	RequestTimeout time.Duration // an export or import gets at least ten minutes beyond it
	ImportWorkers  int           // transactions an import merges its batches in at once (at least one)
}

// Store is what the endpoints need from the store.
type Store interface {
	ListContacts(ctx context.Context, accountID uuid.UUID, f persistence.ContactFilter, p persistence.Page) ([]persistence.Contact, int64, error)
	CreateContact(ctx context.Context, n persistence.NewContact) (persistence.Contact, error)
	OptOutContact(ctx context.Context, accountID, id uuid.UUID) (nsn uint32, suppressed bool, err error)
	Groups(ctx context.Context, accountID uuid.UUID) ([]persistence.Group, error)
	CreateGroup(ctx context.Context, accountID uuid.UUID, name, description string) (persistence.Group, error)
	DeleteGroup(ctx context.Context, accountID, id uuid.UUID) error
	GroupOf(ctx context.Context, accountID, id uuid.UUID) error
	ExportContacts(ctx context.Context, accountID uuid.UUID, groupID *uuid.UUID, each func(persistence.Contact) error) error
	BeginImport(ctx context.Context, accountID uuid.UUID, opts persistence.ImportOptions) (*persistence.ContactImport, error)
}

// Tenants are the account actors that must hear of a number suppressed before the caller is
// answered (its next send leaves it out).
type Tenants interface {
	SuppressionChanged(ctx context.Context, accountID uuid.UUID, nsn uint32, suppressed bool) error
}

// Deps are the collaborators of the endpoints.
type Deps struct {
	Store   Store
	Tenants Tenants
	Lists   api.Lists
	Plan    *carriers.Plan // contacts' phones
}

// Handler serves the endpoints.
type Handler struct {
	opts    Options
	store   Store
	tenants Tenants
	lists   api.Lists
	plan    *carriers.Plan
}

// New returns the endpoints.
func New(opts Options, d Deps) *Handler {
	return &Handler{opts: opts, store: d.Store, tenants: d.Tenants, lists: d.Lists, plan: d.Plan}
}

// Register adds the routes.
func (h *Handler) Register(r *api.Router) {
	r.Handle("GET", "/contacts", api.Account, h.listContacts)
	r.Handle("POST", "/contacts", api.Account, h.createContact)
	r.Handle("DELETE", "/contacts/{id}", api.Account, h.deleteContact)
	r.Handle("GET", "/contacts/template", api.Account, h.contactsTemplate)
	r.Upload("POST", "/contacts/import", api.Account, MaxImportBody, h.importContacts)
	r.Handle("GET", "/contacts/export", api.Account, h.exportContacts)
	r.Handle("GET", "/contacts/groups", api.Account, h.listGroups)
	r.Handle("POST", "/contacts/groups", api.Account, h.createGroup)
	r.Handle("DELETE", "/contacts/groups/{id}", api.Account, h.deleteGroup)
}

type contactJSON struct {
	ID         uuid.UUID     `json:"id"`
	Phone      string        `json:"phone"`
	FirstName  string        `json:"first_name"`
	LastName   string        `json:"last_name"`
	GroupID    *uuid.UUID    `json:"group_id"`
	IsOptedOut bool          `json:"is_opted_out"`
	CreatedAt  api.Timestamp `json:"created_at"`
}

func newContactJSON(c persistence.Contact) contactJSON {
	return contactJSON{ID: c.ID, Phone: c.Phone, FirstName: c.FirstName, LastName: c.LastName, GroupID: c.GroupID,
		IsOptedOut: c.OptedOut, CreatedAt: api.Timestamp(c.CreatedAt)}
}

type groupJSON struct {
	ID           uuid.UUID     `json:"id"`
	Name         string        `json:"name"`
	Description  string        `json:"description"`
	ContactCount int64         `json:"contact_count"`
	CreatedAt    api.Timestamp `json:"created_at"`
}

func (h *Handler) listContacts(ctx context.Context, rc *fasthttp.RequestCtx) error {
	l, err := h.Contacts(ctx, rc)
	if err != nil {
		return err
	}
	out := make([]contactJSON, len(l.Contacts))
	for i, c := range l.Contacts {
		out[i] = newContactJSON(c)
	}
	return api.WriteJSON(rc, http.StatusOK, api.NewEnvelope(out, l.Total, l.Page, l.List, func(c contactJSON) uuid.UUID { return c.ID }))
}

// Listing is one page of an account's active contacts, as GET /contacts reads its query.
type Listing struct {
	Page     persistence.Page
	List     api.List // the list the page's cursors belong to
	Contacts []persistence.Contact
	Total    int64
}

// Contacts reads a page of the signed-in account's contacts as the query asks: search,
// group_id, page and page_size, or cursor.
func (h *Handler) Contacts(ctx context.Context, rc *fasthttp.RequestCtx) (Listing, error) {
	q := api.NewQuery(rc)
	acct := api.Principal(rc).AccountID
	f := persistence.ContactFilter{GroupID: q.UUID("group_id"), Search: persistence.SearchTerm(q.Text("search"))}
	if n := utf8.RuneCountInString(f.Search); n > 100 {
		q.Invalid("search", "must be at most 100 characters")
	}
	l := h.lists.Of(api.ContactList, acct, "group_id="+api.OptID(f.GroupID), "search="+f.Search)
	page := q.Page(l)
	if err := q.Err(); err != nil {
		return Listing{}, err
	}
	if f.GroupID != nil { // another account's group, or none, is a 404 (CONTRACT §1), not an empty list
		if err := h.store.GroupOf(ctx, acct, *f.GroupID); err != nil {
			return Listing{}, err
		}
	}
	list, total, err := h.store.ListContacts(ctx, acct, f, page)
	if err != nil {
		return Listing{}, err
	}
	return Listing{Page: page, List: l, Contacts: list, Total: total}, nil
}

// ContactInput is a contact to add, as POST /contacts has it (nil: absent).
type ContactInput struct {
	Phone     *string `json:"phone"`
	FirstName *string `json:"first_name"`
	LastName  *string `json:"last_name"`
	GroupID   *string `json:"group_id"`
}

func (h *Handler) createContact(ctx context.Context, rc *fasthttp.RequestCtx) error {
	var in ContactInput
	if err := api.DecodeJSON(rc, &in); err != nil {
		return err
	}
	c, err := h.AddContact(ctx, api.Principal(rc).AccountID, in)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusCreated, newContactJSON(c))
}

// AddContact validates a contact and adds it to the account: field errors are 422; a phone
// the account has is persistence.ErrContactExists, or ErrContactOptedOut (409).
func (h *Handler) AddContact(ctx context.Context, acct uuid.UUID, in ContactInput) (persistence.Contact, error) {
	n := persistence.NewContact{AccountID: acct}
	var fe api.FieldErrors
	if in.Phone == nil || strings.TrimSpace(*in.Phone) == "" {
		fe.Add("phone", "is required")
	} else if num, err := h.plan.Normalize(*in.Phone); err != nil && !errors.Is(err, carriers.ErrUnsupportedNetwork) {
		fe.Add("phone", "must be a Kenyan mobile number (07…, 01…, 254… or +254…)")
	} else {
		n.Phone = num.E164
	}
	for _, f := range []struct {
		name string
		v    *string
		dst  *string
	}{{"first_name", in.FirstName, &n.FirstName}, {"last_name", in.LastName, &n.LastName}} {
		if f.v == nil {
			continue
		}
		*f.dst = strings.TrimSpace(*f.v)
		switch {
		case !strictjson.Storable(*f.dst): // a form's text; JSON refused it already
			fe.Add(f.name, "must be text without NUL bytes, in UTF-8")
		case utf8.RuneCountInString(*f.dst) > contactcsv.MaxNameLen:
			fe.Add(f.name, fmt.Sprintf("must be at most %d characters", contactcsv.MaxNameLen))
		}
	}
	if in.GroupID != nil {
		if id, err := uuid.Parse(*in.GroupID); err != nil {
			fe.Add("group_id", "must be the id of one of your groups")
		} else {
			n.GroupID = &id
		}
	}
	if err := fe.Err(); err != nil {
		return persistence.Contact{}, err
	}
	c, err := h.store.CreateContact(ctx, n)
	if errors.Is(err, persistence.ErrUnknownGroup) {
		return persistence.Contact{}, api.Invalid(api.FieldError{Field: "group_id", Message: "must be the id of one of your groups"})
	}
	return c, err
}

func (h *Handler) deleteContact(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	if err := h.OptOut(ctx, api.Principal(rc).AccountID, id); err != nil {
		return err
	}
	rc.SetStatusCode(http.StatusNoContent)
	return nil
}

// OptOut opts one of the account's active contacts out (DELETE /contacts/{id}), its number
// suppressed: another account's, or one opted out already, is persistence.ErrNotFound.
func (h *Handler) OptOut(ctx context.Context, acct, id uuid.UUID) error {
	nsn, added, err := h.store.OptOutContact(ctx, acct, id)
	if err != nil || !added {
		return err
	}
	return h.tenants.SuppressionChanged(ctx, acct, nsn, true)
}

func (h *Handler) contactsTemplate(_ context.Context, rc *fasthttp.RequestCtx) error {
	WriteTemplate(rc)
	return nil
}

// WriteTemplate answers with the import template: a CSV file of the header and a sample row.
func WriteTemplate(rc *fasthttp.RequestCtx) {
	rc.Response.Header.SetContentType("text/csv; charset=utf-8")
	rc.Response.Header.Set("Content-Disposition", `attachment; filename="contacts-template.csv"`)
	rc.SetStatusCode(http.StatusOK)
	rc.SetBodyString("phone,first_name,last_name\r\n0712345678,Jane,Wanjiru\r\n")
}

func (h *Handler) listGroups(ctx context.Context, rc *fasthttp.RequestCtx) error {
	gs, err := h.store.Groups(ctx, api.Principal(rc).AccountID)
	if err != nil {
		return err
	}
	out := make([]groupJSON, len(gs))
	for i, g := range gs {
		out[i] = groupJSON{ID: g.ID, Name: g.Name, Description: g.Description, ContactCount: g.ContactCount, CreatedAt: api.Timestamp(g.CreatedAt)}
	}
	return api.WriteJSON(rc, http.StatusOK, out)
}

// GroupInput is a group to create, as POST /contacts/groups has it (nil: absent).
type GroupInput struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
}

func (h *Handler) createGroup(ctx context.Context, rc *fasthttp.RequestCtx) error {
	var in GroupInput
	if err := api.DecodeJSON(rc, &in); err != nil {
		return err
	}
	g, err := h.CreateGroup(ctx, api.Principal(rc).AccountID, in)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusCreated, groupJSON{ID: g.ID, Name: g.Name, Description: g.Description, CreatedAt: api.Timestamp(g.CreatedAt)})
}

// CreateGroup validates a group and creates it in the account (field errors are 422).
func (h *Handler) CreateGroup(ctx context.Context, acct uuid.UUID, in GroupInput) (persistence.Group, error) {
	var fe api.FieldErrors
	name, desc := "", ""
	if in.Name != nil {
		name = strings.TrimSpace(*in.Name)
	}
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		fe.Add("name", "is required")
	case !strictjson.Storable(name): // a form's text; JSON refused it already
		fe.Add("name", "must be text without NUL bytes, in UTF-8")
	case n > 100:
		fe.Add("name", "must be at most 100 characters")
	}
	if in.Description != nil {
		desc = strings.TrimSpace(*in.Description)
		switch {
		case !strictjson.Storable(desc):
			fe.Add("description", "must be text without NUL bytes, in UTF-8")
		case utf8.RuneCountInString(desc) > 500:
			fe.Add("description", "must be at most 500 characters")
		}
	}
	if err := fe.Err(); err != nil {
		return persistence.Group{}, err
	}
	return h.store.CreateGroup(ctx, acct, name, desc)
}

func (h *Handler) deleteGroup(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	if err := h.DeleteGroup(ctx, api.Principal(rc).AccountID, id); err != nil {
		return err
	}
	rc.SetStatusCode(http.StatusNoContent)
	return nil
}

// DeleteGroup deletes one of the account's groups; its contacts stay, in no group. Another
// account's is persistence.ErrNotFound.
func (h *Handler) DeleteGroup(ctx context.Context, acct, id uuid.UUID) error {
	return h.store.DeleteGroup(ctx, acct, id)
}
