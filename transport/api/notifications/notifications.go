// Package notifications is the account's inbox of notifications, and the operators'
// announcements to it.
package notifications

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

// Store is what the endpoints need from the store.
type Store interface {
	Notifications(ctx context.Context, accountID uuid.UUID, limit int) ([]persistence.Notification, error)
	UnreadCount(ctx context.Context, accountID uuid.UUID) (int64, error)
	MarkRead(ctx context.Context, accountID, id uuid.UUID) (persistence.Notification, error)
	MarkAllRead(ctx context.Context, accountID uuid.UUID) (int64, error)
	Broadcast(ctx context.Context, ids []uuid.UUID, n persistence.NewNotification) (int64, error)
}

// Handler serves the endpoints.
type Handler struct {
	store Store
}

// New returns the endpoints.
func New(store Store) *Handler { return &Handler{store: store} }

// Register adds the routes.
func (h *Handler) Register(r *api.Router) {
	r.Handle("GET", "/notifications", api.Account, h.notifications)
	r.Handle("GET", "/notifications/unread-count", api.Account, h.unreadCount)
	r.Handle("PATCH", "/notifications/read-all", api.Account, h.markAllRead)
	r.Handle("PATCH", "/notifications/{id}/read", api.Account, h.markRead)
	r.Handle("POST", "/admin/notifications/promo", api.Operator, h.promo)
}

// notificationsListed is how many recent notifications the list shows (spec).
const notificationsListed = 20

type notificationJSON struct {
	ID        uuid.UUID     `json:"id"`
	Type      string        `json:"type"`
	Title     string        `json:"title"`
	Message   string        `json:"message"`
	IsRead    bool          `json:"is_read"`
	CreatedAt api.Timestamp `json:"created_at"`
}

func newNotificationJSON(n persistence.Notification) notificationJSON {
	return notificationJSON{ID: n.ID, Type: n.Type, Title: n.Title, Message: n.Message, IsRead: n.Read, CreatedAt: api.Timestamp(n.CreatedAt)}
}

func (h *Handler) notifications(ctx context.Context, rc *fasthttp.RequestCtx) error {
	ns, err := h.store.Notifications(ctx, api.Principal(rc).AccountID, notificationsListed)
	if err != nil {
		return err
	}
	out := make([]notificationJSON, len(ns))
	for i, n := range ns {
		out[i] = newNotificationJSON(n)
	}
	return api.WriteJSON(rc, http.StatusOK, out)
}

func (h *Handler) unreadCount(ctx context.Context, rc *fasthttp.RequestCtx) error {
	n, err := h.store.UnreadCount(ctx, api.Principal(rc).AccountID)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, struct {
		Count int64 `json:"count"`
	}{n})
}

func (h *Handler) markRead(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	n, err := h.store.MarkRead(ctx, api.Principal(rc).AccountID, id)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, newNotificationJSON(n))
}

func (h *Handler) markAllRead(ctx context.Context, rc *fasthttp.RequestCtx) error {
	n, err := h.store.MarkAllRead(ctx, api.Principal(rc).AccountID)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, struct {
		Updated int64 `json:"updated"`
	}{n})
}

func (h *Handler) promo(ctx context.Context, rc *fasthttp.RequestCtx) error {
	var in struct {
		Title      string      `json:"title"`
		Message    string      `json:"message"`
		AccountIDs []uuid.UUID `json:"account_ids"`
	}
	if err := api.DecodeJSON(rc, &in); err != nil {
		return err
	}
	var fe api.FieldErrors
	title := api.CheckText(&fe, "title", in.Title, 1, 120)
	msg := api.CheckText(&fe, "message", in.Message, 1, 2000)
	if err := fe.Err(); err != nil {
		return err
	}
	n, err := h.store.Broadcast(ctx, in.AccountIDs, persistence.NewNotification{Type: "promo", Title: title, Message: msg})
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusCreated, struct {
		Created int64 `json:"created"`
	}{n})
}
