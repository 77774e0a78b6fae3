// Package sms is the sending endpoints: a send and its quote, the account's messages and
// their live delivery status, and its message counts. The send and the quote are also
// operations (Handler.Send, Handler.SendOnce, Handler.Quote) that the dashboard's forms call
// with the same input the JSON body decodes to.
package sms

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/redis"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/auth"
)

// Options bound what a client can make the endpoints do. A zero Rate turns its limit off.
type Options struct {
	DeliveryRate redis.Rate // live carrier status checks per account
}

// Store is what the endpoints read (reads do not go through actors).
type Store interface {
	ApprovedSender(ctx context.Context, accountID uuid.UUID, idOrName string) (persistence.Sender, error)
	ListMessages(ctx context.Context, accountID uuid.UUID, f persistence.MessageFilter, p persistence.Page) ([]persistence.Message, int64, error)
	MessageByID(ctx context.Context, accountID, id uuid.UUID) (persistence.Message, error)
	MessageByProviderID(ctx context.Context, accountID uuid.UUID, providerID string) (persistence.Message, error)
	MessageCounts(ctx context.Context, accountID uuid.UUID) (persistence.MessageCounts, error)
	JobByID(ctx context.Context, accountID, id uuid.UUID) (persistence.Job, error)
}

// Engine is the actor engine: it sends and quotes, and asks networks about their messages.
type Engine interface {
	Send(ctx context.Context, req actors.SendRequest) (actors.SendResult, error)
	Quote(ctx context.Context, req actors.SendRequest) (actors.Quote, error)
	LiveStatus(ctx context.Context, network carriers.Network, providerID string) (actors.CarrierStatus, error)
	Sync(ctx context.Context, network carriers.Network, providerID string, st actors.CarrierStatus) error
}

// Limiter takes tokens from named buckets.
type Limiter interface {
	Allow(ctx context.Context, key string, r redis.Rate) redis.Decision
}

// Deps are the collaborators of the endpoints.
type Deps struct {
	Store   Store
	Engine  Engine
	Keys    *api.Keys // a send runs once per Idempotency-Key
	Limiter Limiter
	Lists   api.Lists
	Plan    *carriers.Plan // recipients' numbering
}

// Handler serves the endpoints.
type Handler struct {
	opts    Options
	store   Store
	engine  Engine
	keys    *api.Keys
	limiter Limiter
	lists   api.Lists
	plan    *carriers.Plan
}

// New returns the endpoints.
func New(opts Options, d Deps) *Handler {
	return &Handler{opts: opts, store: d.Store, engine: d.Engine, keys: d.Keys, limiter: d.Limiter, lists: d.Lists, plan: d.Plan}
}

// Register adds the routes.
func (h *Handler) Register(r *api.Router) {
	r.Handle("POST", "/sms/send", api.Account, h.send)
	r.Handle("POST", "/sms/quote", api.Account, h.quote)
	r.Handle("GET", "/sms/messages", api.Account, h.listMessages)
	r.Handle("GET", "/sms/messages/{id}", api.Account, h.getMessage)
	r.Handle("GET", "/sms/delivery/{provider_message_id}", api.Account, h.delivery)
	r.Handle("GET", "/sms/stats", api.Account, h.stats)
}

// request checks the input for a send, or for a quote (see check), and makes what the engine
// is asked to do with it: its sender resolved as a send resolves it (an explicit sender_id
// must be an approved, active sender ID of the account).
func (h *Handler) request(ctx context.Context, p auth.Principal, in SendInput, quote bool) (checkedSend, actors.SendRequest, error) {
	c, err := in.check(h.plan, quote)
	if err != nil {
		return c, actors.SendRequest{}, err
	}
	req := actors.SendRequest{AccountID: p.AccountID, Recipients: c.recipients, Message: c.message,
		Source: string(p.Source), Reference: c.reference, Promotional: c.promotional, MessageID: in.MessageID,
		Receipt: in.Receipt}
	if c.senderID == "" {
		return c, req, nil
	}
	snd, err := h.store.ApprovedSender(ctx, p.AccountID, c.senderID)
	if errors.Is(err, persistence.ErrNotFound) {
		return c, req, api.InvalidAs("sender_not_approved",
			api.FieldError{Field: "sender_id", Message: "is not an approved, active sender ID of this account"})
	}
	if err != nil {
		return c, req, err
	}
	req.Sender = &snd
	return c, req, nil
}
