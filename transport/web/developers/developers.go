// Package developers is the dashboard's Developers page (/app/developers): the account's API
// key as far as it is kept (its first characters and date), its rotation with a confirm
// step, how to make a first call, and where webhooks will be. The rotation is the JSON API's
// operation (transport/api/accounts).
//
// A new key is written into the answer of the POST that made it and nowhere else: not the
// session, not a flash, not an address. The answer is no-store, and the confirm form names
// the key it replaces, so a reload (which posts again) does not rotate a second time.
package developers

import (
	"context"
	"embed"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api/accounts"
	"github.com/tuma-sms/tuma/transport/web"
)

//go:embed templates/*.html
var templates embed.FS

// Operations are the key operations the JSON API runs too (accounts.Handler).
type Operations interface {
	RotateAPIKey(ctx context.Context, accountID uuid.UUID) (accounts.NewKey, error)
}

// Store is what the page reads.
type Store interface {
	LiveAPIKey(ctx context.Context, accountID uuid.UUID) (persistence.APIKey, error)
}

// Options configure the page.
type Options struct {
	BaseURL string // the API's public address, for the examples (TUMA_PUBLIC_URL)
}

// Pages serve the Developers page.
type Pages struct {
	views *web.Views
	ops   Operations
	store Store
	base  string
}

// New returns the pages.
func New(site *web.Site, ops Operations, store Store, opts Options) (*Pages, error) {
	v, err := site.Views(templates)
	if err != nil {
		return nil, err
	}
	return &Pages{views: v, ops: ops, store: store, base: strings.TrimRight(opts.BaseURL, "/")}, nil
}

// RegisterPages adds the routes.
func (p *Pages) RegisterPages(r *web.Router) {
	r.Page("GET", "/app/developers", p.show)
	r.Page("GET", "/app/developers/rotate", p.confirm)
	r.Page("POST", "/app/developers/rotate", p.rotate)
}

// key is the live key as the page shows it.
type key struct {
	ID        string // the form names the key it replaces
	Prefix    string
	CreatedAt time.Time
}

// data is what the pages show.
type data struct {
	Key     *key   // nil: the account has no live key
	NewKey  string // only on the answer of the rotation
	BaseURL string
}

func (p *Pages) liveKey(ctx context.Context, accountID uuid.UUID) (*key, error) {
	k, err := p.store.LiveAPIKey(ctx, accountID)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &key{ID: k.ID.String(), Prefix: k.Prefix, CreatedAt: k.CreatedAt}, nil
}

func (p *Pages) render(ctx context.Context, rc *fasthttp.RequestCtx, status int, name, title string, d data, banners ...web.Banner) error {
	d.BaseURL = p.base
	page := &web.Page{Title: title, Nav: "/app/developers", Data: d, Banners: banners}
	return p.views.Render(ctx, rc, status, name, page)
}

func (p *Pages) show(ctx context.Context, rc *fasthttp.RequestCtx) error {
	k, err := p.liveKey(ctx, web.AccountID(rc))
	if err != nil {
		return err
	}
	return p.render(ctx, rc, http.StatusOK, "developers", "Developers", data{Key: k})
}

// confirm asks before rotating: the old key stops working the moment the new one is made.
func (p *Pages) confirm(ctx context.Context, rc *fasthttp.RequestCtx) error {
	k, err := p.liveKey(ctx, web.AccountID(rc))
	if err != nil {
		return err
	}
	return p.render(ctx, rc, http.StatusOK, "rotate", "Rotate the API key", data{Key: k})
}

// rotate makes a new key and shows it in this answer only. A form naming a key that is no
// longer the live one (a reload, a second tab) rotates nothing and says so.
func (p *Pages) rotate(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id := web.AccountID(rc)
	k, err := p.liveKey(ctx, id)
	if err != nil {
		return err
	}
	live := ""
	if k != nil {
		live = k.ID
	}
	if web.ReadForm(rc).Get("replaces") != live {
		return p.render(ctx, rc, http.StatusConflict, "developers", "Developers", data{Key: k}, web.Banner{Kind: "warning",
			Text: "That key was already replaced, so nothing was changed. A new key is shown only once, on the page that made it: " +
				"if you did not copy it, rotate the key again."})
	}
	nk, err := p.ops.RotateAPIKey(ctx, id)
	if err != nil {
		return err
	}
	k, err = p.liveKey(ctx, id)
	if err != nil {
		return err
	}
	return p.render(ctx, rc, http.StatusOK, "rotated", "Your new API key", data{Key: k, NewKey: nk.Key})
}
