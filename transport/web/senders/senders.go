// Package senders is the dashboard's sender ID pages (/app/senders): the account's
// applications with their status, fee and rejection reason; applying for a name; each
// application's four documents, fee, default mark and cancellation; and the letters to
// sign. Each action is the JSON API's operation (transport/api/senders).
package senders

import (
	"context"
	"embed"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	sendersapi "github.com/tuma-sms/tuma/transport/api/senders"
	"github.com/tuma-sms/tuma/transport/web"
)

//go:embed templates/*.html
var templates embed.FS

// Operations are the sender ID operations the JSON API runs too (senders.Handler).
type Operations interface {
	SharedSender() string
	Fees() []sendersapi.Fee
	Apply(ctx context.Context, accountID uuid.UUID, in sendersapi.Application) (persistence.SenderID, error)
	SubmitDocuments(ctx context.Context, accountID, id uuid.UUID, reapply bool, parts sendersapi.Parts) (persistence.SenderID, error)
	PayFee(ctx context.Context, rc *fasthttp.RequestCtx, accountID, id uuid.UUID) ([]byte, error)
	SetDefault(ctx context.Context, accountID, id uuid.UUID) (persistence.SenderID, error)
	Cancel(ctx context.Context, accountID, id uuid.UUID) error
	WriteLetter(ctx context.Context, rc *fasthttp.RequestCtx, kind string, account uuid.UUID) error
}

// Store is what the pages read: the same reads as GET /senders.
type Store interface {
	SenderIDs(ctx context.Context, accountID uuid.UUID) ([]persistence.SenderID, error)
	SenderIDByID(ctx context.Context, accountID, id uuid.UUID) (persistence.SenderID, error)
}

// Pages serve the sender IDs.
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
	r.Page("GET", "/app/senders", p.list)
	r.Page("POST", "/app/senders", p.apply)
	r.Page("GET", "/app/senders/letters/{kind}", p.letter)
	r.Page("GET", "/app/senders/{id}", p.detail)
	r.Upload("POST", "/app/senders/{id}/documents", sendersapi.MaxDocumentsBody, p.documents(false))
	r.Upload("POST", "/app/senders/{id}/re-apply", sendersapi.MaxDocumentsBody, p.documents(true))
	r.Page("POST", "/app/senders/{id}/pay", p.pay)
	r.Page("POST", "/app/senders/{id}/default", p.setDefault)
	r.Page("POST", "/app/senders/{id}/cancel", p.cancel)
}

// listData is what the list shows.
type listData struct {
	Shared  string
	Default *sender // the account's own default sender ID, if any
	Senders []sender
	Fees    []fee
}

type fee struct {
	Network, Label, Amount string
}

func (p *Pages) fees() []fee {
	var out []fee
	for _, f := range p.Ops.Fees() {
		out = append(out, fee{Network: f.Network, Label: networkName(f.Network), Amount: web.KES(f.Cents)})
	}
	return out
}

func (p *Pages) list(ctx context.Context, rc *fasthttp.RequestCtx) error {
	return p.renderList(ctx, rc, http.StatusOK, web.NewForm(), nil)
}

// renderList draws the list with the apply form, showing err's problem in it when it has one.
func (p *Pages) renderList(ctx context.Context, rc *fasthttp.RequestCtx, status int, f *web.Form, err error) error {
	list, lerr := p.Store.SenderIDs(ctx, web.AccountID(rc))
	if lerr != nil {
		return lerr
	}
	d := listData{Shared: p.Ops.SharedSender(), Fees: p.fees()}
	for _, s := range list {
		d.Senders = append(d.Senders, newSender(s))
	}
	for i := range d.Senders {
		if d.Senders[i].Default {
			d.Default = &d.Senders[i]
		}
	}
	page := &web.Page{Title: "Sender IDs", Nav: "/app/senders", Data: d, Form: f}
	if err != nil {
		return p.Views.RenderForm(ctx, rc, "senders", page, err)
	}
	return p.Views.Render(ctx, rc, status, "senders", page)
}

// apply makes an application, then shows it: its documents come next.
func (p *Pages) apply(ctx context.Context, rc *fasthttp.RequestCtx) error {
	f := web.ReadForm(rc)
	snd, err := p.Ops.Apply(ctx, web.AccountID(rc), sendersapi.Application{
		Name: given(f, "name"), Network: given(f, "network"), Purpose: given(f, "purpose")})
	if err != nil {
		return p.renderList(ctx, rc, 0, f, err)
	}
	p.Site.Flash(rc, "success", "You applied for "+snd.Name+". Next, upload its four documents.")
	return api.SeeOther(rc, senderPath(snd.ID))
}

// given is a form field as the API reads it: a field left empty is one not given.
func given(f *web.Form, name string) *string {
	v := strings.TrimSpace(f.Get(name))
	if v == "" {
		return nil
	}
	return &v
}

func (p *Pages) letter(ctx context.Context, rc *fasthttp.RequestCtx) error {
	kind, _ := rc.UserValue("kind").(string)
	return p.Ops.WriteLetter(ctx, rc, kind, web.AccountID(rc))
}

func senderPath(id uuid.UUID) string { return "/app/senders/" + id.String() }

func networkName(n string) string {
	switch n {
	case "safaricom":
		return "Safaricom"
	case "airtel":
		return "Airtel"
	case "telkom":
		return "Telkom"
	case "all":
		return "All networks"
	}
	return n
}
