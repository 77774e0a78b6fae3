// Package suppressions is an account's suppression list over the API (CONTRACT §15): the
// numbers it may never message, added, listed and removed. The tenant actor holds the list
// in memory to leave them out of a send; every change is handed to it before it is answered.
package suppressions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

// Store is what the endpoints need from the store.
type Store interface {
	Suppress(ctx context.Context, accountID uuid.UUID, nsn uint32, source persistence.SuppressionSource, reason string) (persistence.Suppression, bool, error)
	Unsuppress(ctx context.Context, accountID uuid.UUID, nsn uint32, sources ...persistence.SuppressionSource) error
	Suppressions(ctx context.Context, accountID uuid.UUID, f persistence.SuppressionFilter, limit int) ([]persistence.Suppression, error)
	SuppressMany(ctx context.Context, accountID uuid.UUID, nsns []uint32, reasons []string, source persistence.SuppressionSource) (int64, error)
}

// Tenants is the engine's side: the account's tenant actor keeps the list in memory, so a
// change it has not taken could let a send through to a number just suppressed.
type Tenants interface {
	// SuppressionChanged answers once the account's tenant holds the change.
	SuppressionChanged(ctx context.Context, accountID uuid.UUID, nsn uint32, suppressed bool) error
	// SuppressionsImported answers once the account's tenant has read its whole list again, and
	// the jobs it accepted before look their recipients up before submitting them.
	SuppressionsImported(ctx context.Context, accountID uuid.UUID) error
}

// Deps are the collaborators of the endpoints.
type Deps struct {
	Store   Store
	Tenants Tenants
	Lists   api.Lists
	Plan    *carriers.Plan // nil: the embedded Kenyan plan
}

// Handler serves the endpoints.
type Handler struct {
	store   Store
	tenants Tenants
	lists   api.Lists
	plan    *carriers.Plan
}

// New returns the endpoints.
func New(d Deps) *Handler {
	if d.Plan == nil {
		d.Plan = carriers.DefaultPlan()
	}
	return &Handler{store: d.Store, tenants: d.Tenants, lists: d.Lists, plan: d.Plan}
}

// Register adds the routes.
func (h *Handler) Register(r *api.Router) {
	r.Handle("GET", "/suppressions", api.Account, h.list)
	r.Handle("POST", "/suppressions", api.Account, h.create)
	r.Handle("DELETE", "/suppressions/{phone}", api.Account, h.delete)
	r.Upload("POST", "/suppressions/import", api.Account, MaxImportBody, h.importFile)
}

// maxReasonLen is the most characters a reason may have: a note for people, not a document.
const maxReasonLen = 200

type suppressionJSON struct {
	Phone     string                        `json:"phone"`
	Source    persistence.SuppressionSource `json:"source"`
	Reason    string                        `json:"reason"`
	CreatedAt api.Timestamp                 `json:"created_at"`
}

func newSuppressionJSON(s persistence.Suppression) suppressionJSON {
	return suppressionJSON{Phone: s.E164(), Source: s.Source, Reason: s.Reason, CreatedAt: api.Timestamp(s.CreatedAt)}
}

// Input is the body of POST /suppressions.
type Input struct {
	Phone  *string `json:"phone"`
	Reason *string `json:"reason"`
}

// phoneMessage is what a number that is not one is told.
const phoneMessage = "must be a Kenyan mobile number such as 0712345678 or +254712345678"

// parsePhone reads a number in any accepted form. A number of a range no supported network
// serves is still a Kenyan number its owner may want never to be messaged at.
func (h *Handler) parsePhone(raw string) (uint32, bool) {
	nsn, _, err := h.plan.Parse([]byte(raw))
	if err != nil && !errors.Is(err, carriers.ErrUnsupportedNetwork) {
		return 0, false
	}
	return nsn, true
}

// Add suppresses a number for the account (source api) and tells its tenant; added is false
// when it was suppressed already, and then nothing changes, its source and reason included.
// A bad phone or reason is a 422 naming it; nothing is stored then.
func (h *Handler) Add(ctx context.Context, accountID uuid.UUID, in Input) (persistence.Suppression, bool, error) {
	var fe api.FieldErrors
	var nsn uint32
	switch {
	case in.Phone == nil || strings.TrimSpace(*in.Phone) == "":
		fe.Add("phone", "is required")
	default:
		n, ok := h.parsePhone(*in.Phone)
		if !ok {
			fe.Add("phone", phoneMessage)
		}
		nsn = n
	}
	reason := ""
	if in.Reason != nil {
		reason = api.CheckText(&fe, "reason", *in.Reason, 0, maxReasonLen)
	}
	if err := fe.Err(); err != nil {
		return persistence.Suppression{}, false, err
	}
	s, added, err := h.store.Suppress(ctx, accountID, nsn, persistence.SuppressedByAPI, reason)
	if err != nil {
		return s, false, err
	}
	// Told even when it was there already: a first call that stored it and then failed to
	// reach the tenant is retried, and the tenant must hold it before this one answers.
	if err := h.tenants.SuppressionChanged(ctx, accountID, nsn, true); err != nil {
		return s, false, fmt.Errorf("tell the tenant of a suppression: %w", err)
	}
	return s, added, nil
}

// Remove lifts a suppression of the account, whatever its source, and tells its tenant. A
// number not on the list (or on another account's only) is a 404; one that is not a number
// a 422 naming phone.
func (h *Handler) Remove(ctx context.Context, accountID uuid.UUID, phone string) error {
	nsn, ok := h.parsePhone(phone)
	if !ok {
		return api.Invalid(api.FieldError{Field: "phone", Message: phoneMessage})
	}
	err := h.store.Unsuppress(ctx, accountID, nsn)
	if errors.Is(err, persistence.ErrNotFound) {
		return api.NotFound("this number is not on the account's suppression list")
	}
	if err != nil {
		return err
	}
	if err := h.tenants.SuppressionChanged(ctx, accountID, nsn, false); err != nil {
		return fmt.Errorf("tell the tenant of a lifted suppression: %w", err)
	}
	return nil
}

// List is a page of the account's suppressions, newest first, of numbers in [f.From, f.To].
func (h *Handler) List(ctx context.Context, accountID uuid.UUID, f persistence.SuppressionFilter, limit int) ([]persistence.Suppression, error) {
	return h.store.Suppressions(ctx, accountID, f, limit)
}

func (h *Handler) create(ctx context.Context, rc *fasthttp.RequestCtx) error {
	var in Input
	if err := api.DecodeJSON(rc, &in); err != nil {
		return err
	}
	s, added, err := h.Add(ctx, api.Principal(rc).AccountID, in)
	if err != nil {
		return err
	}
	status := http.StatusOK // there already: as it was
	if added {
		status = http.StatusCreated
	}
	return api.WriteJSON(rc, status, newSuppressionJSON(s))
}

func (h *Handler) delete(ctx context.Context, rc *fasthttp.RequestCtx) error {
	// The router matches the path as sent: "+254%20712…" is decoded here; an escape that does
	// not decode is no number, as Remove tells.
	raw, _ := rc.UserValue("phone").(string)
	phone, err := url.PathUnescape(raw)
	if err != nil {
		phone = raw
	}
	if err := h.Remove(ctx, api.Principal(rc).AccountID, phone); err != nil {
		return err
	}
	rc.SetStatusCode(http.StatusNoContent)
	return nil
}

// Listing is one page of an account's suppressions, as GET /suppressions reads its query.
type Listing struct {
	Suppressions []persistence.Suppression
	NextCursor   *string // the next page's cursor; nil at the end of the list
}

// Suppressions reads a page of the account's list as GET /suppressions asks for it (search,
// page_size, cursor): a search no number begins with is a 422 naming search, a cursor not
// this list's a 400.
func (h *Handler) Suppressions(ctx context.Context, rc *fasthttp.RequestCtx) (Listing, error) {
	acct := api.Principal(rc).AccountID
	q := api.NewQuery(rc)
	var f persistence.SuppressionFilter
	if s := strings.TrimSpace(q.Text("search")); s != "" {
		from, to, ok := searchRange(s)
		if !ok {
			q.Invalid("search", "must be digits that begin a Kenyan mobile number, such as 0712, 254712, +254 712 or 712")
		}
		f.From, f.To = from, to
	}
	if q.Text("page") != "" {
		q.Malformed("page", "the suppression list pages by cursor: page_size, then the next_cursor each page returns")
	}
	l := h.lists.Of(api.SuppressionList, acct, fmt.Sprintf("from=%d", f.From), fmt.Sprintf("to=%d", f.To))
	p := q.Page(l)
	if err := q.Err(); err != nil {
		return Listing{}, err
	}
	if p.After != nil {
		c := decodeCursor(*p.After)
		f.After = &c
	}
	list, err := h.List(ctx, acct, f, p.Size)
	if err != nil {
		return Listing{}, err
	}
	out := Listing{Suppressions: list}
	if len(list) == p.Size {
		c := l.Cursor(encodeCursor(list[len(list)-1]))
		out.NextCursor = &c
	}
	return out, nil
}

func (h *Handler) list(ctx context.Context, rc *fasthttp.RequestCtx) error {
	l, err := h.Suppressions(ctx, rc)
	if err != nil {
		return err
	}
	out := struct {
		Data       []suppressionJSON `json:"data"`
		NextCursor *string           `json:"next_cursor"`
	}{Data: make([]suppressionJSON, len(l.Suppressions)), NextCursor: l.NextCursor}
	for i, s := range l.Suppressions {
		out.Data[i] = newSuppressionJSON(s)
	}
	return api.WriteJSON(rc, http.StatusOK, out)
}
