package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
)

// notificationsListed is how many recent notifications the list shows (spec).
const notificationsListed = 20

type notificationJSON struct {
	ID        uuid.UUID `json:"id"`
	Type      string    `json:"type"`
	Title     string    `json:"title"`
	Message   string    `json:"message"`
	IsRead    bool      `json:"is_read"`
	CreatedAt timestamp `json:"created_at"`
}

func newNotificationJSON(n persistence.Notification) notificationJSON {
	return notificationJSON{ID: n.ID, Type: n.Type, Title: n.Title, Message: n.Message, IsRead: n.Read, CreatedAt: timestamp(n.CreatedAt)}
}

func (s *Server) notifications(ctx context.Context, rc *fasthttp.RequestCtx) error {
	ns, err := s.Queries.Notifications(ctx, principal(rc).AccountID, notificationsListed)
	if err != nil {
		return err
	}
	out := make([]notificationJSON, len(ns))
	for i, n := range ns {
		out[i] = newNotificationJSON(n)
	}
	return writeJSON(rc, http.StatusOK, out)
}

func (s *Server) unreadCount(ctx context.Context, rc *fasthttp.RequestCtx) error {
	n, err := s.Queries.UnreadCount(ctx, principal(rc).AccountID)
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, struct {
		Count int64 `json:"count"`
	}{n})
}

func (s *Server) markRead(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := pathID(rc, "id")
	if err != nil {
		return err
	}
	n, err := s.Queries.MarkRead(ctx, principal(rc).AccountID, id)
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, newNotificationJSON(n))
}

func (s *Server) markAllRead(ctx context.Context, rc *fasthttp.RequestCtx) error {
	n, err := s.Queries.MarkAllRead(ctx, principal(rc).AccountID)
	if err != nil {
		return err
	}
	return writeJSON(rc, http.StatusOK, struct {
		Updated int64 `json:"updated"`
	}{n})
}
