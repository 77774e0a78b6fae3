// Package sms is the sending endpoints: a send, the account's messages and their live
// delivery status, and its message counts.
package sms

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

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

// Engine is the actor engine: it sends, and asks networks about their messages.
type Engine interface {
	Send(ctx context.Context, req actors.SendRequest) (actors.SendResult, error)
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
	r.Handle("GET", "/sms/messages", api.Account, h.listMessages)
	r.Handle("GET", "/sms/messages/{id}", api.Account, h.getMessage)
	r.Handle("GET", "/sms/delivery/{provider_message_id}", api.Account, h.delivery)
	r.Handle("GET", "/sms/stats", api.Account, h.stats)
}

type sendResponse struct {
	JobID           uuid.UUID `json:"job_id"`
	RecipientsCount int       `json:"recipients_count"`
	CostKES         api.KES   `json:"cost_kes"`
	Status          string    `json:"status"`
}

func (h *Handler) send(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := api.CheckJSON(rc); err != nil {
		return err
	}
	p := api.Principal(rc)
	return h.keys.Run(ctx, rc, api.Op{Scope: p.AccountID, FromResource: h.replaySend},
		func(key *persistence.IdempotencyKey) error {
			res, err := h.sendOnce(ctx, rc, p, key)
			if err != nil {
				return err
			}
			return api.WriteJSON(rc, http.StatusAccepted, sendResponse{JobID: res.JobID, RecipientsCount: res.Recipients,
				CostKES: api.KES(res.CostCents), Status: "sent"})
		})
}

// replaySend renders the answer of a send from the job it created.
func (h *Handler) replaySend(ctx context.Context, accountID, jobID uuid.UUID) (any, error) {
	j, err := h.store.JobByID(ctx, accountID, jobID)
	if err != nil {
		return nil, err
	}
	return sendResponse{JobID: j.ID, RecipientsCount: j.RecipientsCount, CostKES: api.KES(j.CostCents), Status: "sent"}, nil
}

func (h *Handler) sendOnce(ctx context.Context, rc *fasthttp.RequestCtx, p auth.Principal, key *persistence.IdempotencyKey) (actors.SendResult, error) {
	in, err := parseSend(rc.PostBody(), h.plan)
	if err != nil {
		return actors.SendResult{}, err
	}
	req := actors.SendRequest{AccountID: p.AccountID, Recipients: in.recipients, Message: in.message,
		Source: string(p.Source), Idempotency: key}
	if in.senderID != "" {
		snd, err := h.store.ApprovedSender(ctx, p.AccountID, in.senderID)
		if errors.Is(err, persistence.ErrNotFound) {
			return actors.SendResult{}, api.InvalidAs("sender_not_approved",
				api.FieldError{Field: "sender_id", Message: "is not an approved, active sender ID of this account"})
		}
		if err != nil {
			return actors.SendResult{}, err
		}
		req.Sender = &snd
	}
	return h.engine.Send(ctx, req)
}

// messageJSON is the message object (CONTRACT §4).
type messageJSON struct {
	ID                uuid.UUID                 `json:"id"`
	JobID             uuid.UUID                 `json:"job_id"`
	CampaignID        *uuid.UUID                `json:"campaign_id"`
	Recipient         string                    `json:"recipient"`
	Network           string                    `json:"network"`
	SenderID          string                    `json:"sender_id"`
	Message           string                    `json:"message"`
	Parts             int                       `json:"parts"`
	Encoding          string                    `json:"encoding"`
	CostKES           api.KES                   `json:"cost_kes"`
	Status            persistence.MessageStatus `json:"status"`
	ProviderStatus    string                    `json:"provider_status"`
	ProviderMessageID *string                   `json:"provider_message_id"`
	Source            string                    `json:"source"`
	CreatedAt         api.Timestamp             `json:"created_at"`
	SentAt            *api.Timestamp            `json:"sent_at"`
	DeliveredAt       *api.Timestamp            `json:"delivered_at"`
}

func newMessageJSON(m persistence.Message) messageJSON {
	return messageJSON{
		ID: m.ID, JobID: m.JobID, CampaignID: m.CampaignID, Recipient: m.Recipient, Network: m.Network.String(),
		SenderID: m.Sender, Message: m.Text, Parts: m.Parts, Encoding: m.Encoding.String(), CostKES: api.KES(m.CostCents),
		Status: m.Status, ProviderStatus: m.ProviderStatus, ProviderMessageID: m.ProviderMessageID, Source: m.Source,
		CreatedAt: api.Timestamp(m.CreatedAt), SentAt: api.TimestampOf(m.SentAt), DeliveredAt: api.TimestampOf(m.DeliveredAt),
	}
}

func (h *Handler) listMessages(ctx context.Context, rc *fasthttp.RequestCtx) error {
	q := api.NewQuery(rc)
	acct := api.Principal(rc).AccountID
	f := persistence.MessageFilter{Status: api.Enum(q, "status", persistence.MessageStatuses()...),
		JobID: q.UUID("job_id"), CampaignID: q.UUID("campaign_id")}
	l := h.lists.Of(api.MessageList, acct, "status="+string(f.Status), "job_id="+api.OptID(f.JobID), "campaign_id="+api.OptID(f.CampaignID))
	page := q.Page(l)
	if err := q.Err(); err != nil {
		return err
	}
	msgs, total, err := h.store.ListMessages(ctx, acct, f, page)
	if err != nil {
		return err
	}
	out := make([]messageJSON, len(msgs))
	for i, m := range msgs {
		out[i] = newMessageJSON(m)
	}
	return api.WriteJSON(rc, http.StatusOK, api.NewEnvelope(out, total, page, l, func(m messageJSON) uuid.UUID { return m.ID }))
}

func (h *Handler) getMessage(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	m, err := h.store.MessageByID(ctx, api.Principal(rc).AccountID, id)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, newMessageJSON(m))
}

// delivery checks a message's status with its network now, records what the network says,
// and returns the stored record. Each check asks a carrier: they are bounded per account.
func (h *Handler) delivery(ctx context.Context, rc *fasthttp.RequestCtx) error {
	acct := api.Principal(rc).AccountID
	if d := h.limiter.Allow(ctx, "delivery:"+acct.String(), h.opts.DeliveryRate); !d.Allowed {
		return api.TooManyRequests("too_many_status_checks",
			"too many live status checks for this account; GET /sms/messages/{id} has the stored status", d.RetryAfter)
	}
	providerID, _ := rc.UserValue("provider_message_id").(string)
	m, err := h.store.MessageByProviderID(ctx, acct, providerID)
	if err != nil {
		return err
	}
	if m.Status == "sent" {
		st, err := h.engine.LiveStatus(ctx, m.Network, providerID)
		switch {
		case errors.Is(err, actors.ErrUnknownMessage):
			// The network has forgotten it; the stored record is all there is.
		case err != nil:
			p := api.NewProblem("carrier_unavailable", "the "+m.Network.String()+" network did not answer the status check; try again shortly")
			p.RetryAfter = 5
			return p
		default:
			if err := h.engine.Sync(ctx, m.Network, providerID, st); err != nil {
				return err
			}
			if m, err = h.store.MessageByID(ctx, acct, m.ID); err != nil {
				return err
			}
		}
	}
	return api.WriteJSON(rc, http.StatusOK, newMessageJSON(m))
}

func (h *Handler) stats(ctx context.Context, rc *fasthttp.RequestCtx) error {
	c, err := h.store.MessageCounts(ctx, api.Principal(rc).AccountID)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, struct {
		Total     int64 `json:"total"`
		Delivered int64 `json:"delivered"`
		Sent      int64 `json:"sent"`
		Failed    int64 `json:"failed"`
		Queued    int64 `json:"queued"`
	}{c.Total(), c.Delivered, c.Sent, c.Failed, c.Queued})
}
