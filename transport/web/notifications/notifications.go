// Package notifications is the dashboard's inbox (/app/notifications): the account's latest
// notifications, marking one or all of them read, with the store's calls the JSON API makes.
package notifications

import (
	"context"
	"embed"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/web"
)

//go:embed templates/*.html
var templates embed.FS

// Store is what the page needs: the same calls as GET /notifications and PATCH
// /notifications/{id}/read and /notifications/read-all.
type Store interface {
	Notifications(ctx context.Context, accountID uuid.UUID, limit int) ([]persistence.Notification, error)
	UnreadCount(ctx context.Context, accountID uuid.UUID) (int64, error)
	MarkRead(ctx context.Context, accountID, id uuid.UUID) (persistence.Notification, error)
	MarkAllRead(ctx context.Context, accountID uuid.UUID) (int64, error)
}

// listed is how many of the latest notifications the page shows.
const listed = 50

// Page serves the inbox.
type Page struct {
	site  *web.Site
	views *web.Views
	store Store
}

// New returns the page.
func New(site *web.Site, store Store) (*Page, error) {
	v, err := site.Views(templates)
	if err != nil {
		return nil, err
	}
	return &Page{site: site, views: v, store: store}, nil
}

// RegisterPages adds the routes.
func (p *Page) RegisterPages(r *web.Router) {
	r.Page("GET", "/app/notifications", p.list)
	r.Page("POST", "/app/notifications/read-all", p.markAllRead)
	r.Page("POST", "/app/notifications/{id}/read", p.markRead)
}

type data struct {
	Notifications []persistence.Notification
	Unread        int64
}

func (p *Page) list(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id := web.AccountID(rc)
	var (
		d   data
		err error
	)
	if d.Notifications, err = p.store.Notifications(ctx, id, listed); err != nil {
		return err
	}
	if d.Unread, err = p.store.UnreadCount(ctx, id); err != nil {
		return err
	}
	return p.views.Render(ctx, rc, http.StatusOK, "notifications", &web.Page{Title: "Notifications", Nav: "/app/notifications", Data: d})
}

// markRead marks one notification read; another account's, or none, is a 404 page.
func (p *Page) markRead(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	if _, err := p.store.MarkRead(ctx, web.AccountID(rc), id); err != nil {
		return err
	}
	return api.SeeOther(rc, "/app/notifications")
}

func (p *Page) markAllRead(ctx context.Context, rc *fasthttp.RequestCtx) error {
	n, err := p.store.MarkAllRead(ctx, web.AccountID(rc))
	if err != nil {
		return err
	}
	if n > 0 {
		p.site.Flash(rc, "success", "Marked "+web.Thousands(n)+" as read.")
	}
	return api.SeeOther(rc, "/app/notifications")
}
