// The account's messages: listed, one by one, their live delivery status, and their counts.

package sms

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

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
	Reference         *string                   `json:"reference"` // its job's, as the send or campaign gave it
}

func newMessageJSON(m persistence.Message) messageJSON {
	return messageJSON{
		ID: m.ID, JobID: m.JobID, CampaignID: m.CampaignID, Recipient: m.Recipient, Network: m.Network.String(),
		SenderID: m.Sender, Message: m.Text, Parts: m.Parts, Encoding: m.Encoding.String(), CostKES: api.KES(m.CostCents),
		Status: m.Status, ProviderStatus: m.ProviderStatus, ProviderMessageID: m.ProviderMessageID, Source: m.Source,
		CreatedAt: api.Timestamp(m.CreatedAt), SentAt: api.TimestampOf(m.SentAt), DeliveredAt: api.TimestampOf(m.DeliveredAt),
		Reference: m.Reference,
	}
}

func (h *Handler) listMessages(ctx context.Context, rc *fasthttp.RequestCtx) error {
	e, err := h.Messages(ctx, rc, api.Principal(rc).AccountID)
	if err != nil {
		return err
	}
	out := make([]messageJSON, len(e.Data))
	for i, m := range e.Data {
		out[i] = newMessageJSON(m)
	}
	return api.WriteJSON(rc, http.StatusOK, api.Envelope[messageJSON]{Data: out, Total: e.Total, Page: e.Page,
		PageSize: e.PageSize, Pages: e.Pages, NextCursor: e.NextCursor})
}

// Messages is a page of the account's messages, newest first, as GET /sms/messages lists
// them: the filters and the page come from the request's query (status, job_id, campaign_id,
// network, from and to (UTC days, both included), reference; page, page_size or cursor). A bad value is a 422 naming it, a forged cursor 400.
func (h *Handler) Messages(ctx context.Context, rc *fasthttp.RequestCtx, acct uuid.UUID) (api.Envelope[persistence.Message], error) {
	q := api.NewQuery(rc)
	f := persistence.MessageFilter{Status: api.Enum(q, "status", persistence.MessageStatuses()...),
		JobID: q.UUID("job_id"), CampaignID: q.UUID("campaign_id")}
	filters := []string{"status=" + string(f.Status), "job_id=" + api.OptID(f.JobID), "campaign_id=" + api.OptID(f.CampaignID)}
	// Only when given, so cursors issued without them stay valid.
	if net := api.Enum(q, "network", "safaricom", "airtel", "telkom"); net != "" {
		f.Network, _ = carriers.ParseNetwork(net)
		filters = append(filters, "network="+net)
	}
	f.From, f.To = day(q, "from"), day(q, "to")
	if f.From != nil {
		filters = append(filters, "from="+f.From.Format(time.DateOnly))
	}
	if f.To != nil {
		if f.From != nil && f.To.Before(*f.From) {
			q.Invalid("to", "must not be before from")
		}
		filters = append(filters, "to="+f.To.Format(time.DateOnly))
		end := f.To.AddDate(0, 0, 1) // to is a whole day: the messages before the next one
		f.To = &end
	}
	if ref := q.Text("reference"); ref != "" {
		if !actors.ValidReference(ref) {
			q.Invalid("reference", fmt.Sprintf("must be 1 to %d printable ASCII characters (space to ~)", actors.MaxReferenceLen))
		}
		// Last, and only when given: the other filters' values hold no "&", so the scope names
		// the filters unambiguously, and cursors issued without a reference stay valid.
		f.Reference = &ref
		filters = append(filters, "reference="+ref)
	}
	l := h.lists.Of(api.MessageList, acct, filters...)
	page := q.Page(l)
	if err := q.Err(); err != nil {
		return api.Envelope[persistence.Message]{}, err
	}
	msgs, total, err := h.store.ListMessages(ctx, acct, f, page)
	if err != nil {
		return api.Envelope[persistence.Message]{}, err
	}
	return api.NewEnvelope(msgs, total, page, l, func(m persistence.Message) uuid.UUID { return m.ID }), nil
}

// day reads a date parameter (YYYY-MM-DD, a UTC day); another form is malformed.
func day(q *api.Query, name string) *time.Time {
	v := q.Text(name)
	if v == "" {
		return nil
	}
	d, err := time.Parse(time.DateOnly, v)
	if err != nil {
		q.Malformed(name, "must be a date, YYYY-MM-DD")
		return nil
	}
	return &d
}

// Message is one of the account's messages (GET /sms/messages/{id}); another account's is
// not found.
func (h *Handler) Message(ctx context.Context, acct, id uuid.UUID) (persistence.Message, error) {
	return h.store.MessageByID(ctx, acct, id)
}

func (h *Handler) getMessage(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	m, err := h.Message(ctx, api.Principal(rc).AccountID, id)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, newMessageJSON(m))
}

// delivery answers GET /sms/delivery/{provider_message_id}: CheckDelivery.
func (h *Handler) delivery(ctx context.Context, rc *fasthttp.RequestCtx) error {
	providerID, _ := rc.UserValue("provider_message_id").(string)
	m, err := h.CheckDelivery(ctx, api.Principal(rc).AccountID, providerID)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, newMessageJSON(m))
}

// CheckDelivery checks a message's status with its network now, records what the network
// says, and returns the stored record. Each check asks a carrier: they are bounded per
// account (429 too_many_status_checks past the budget).
func (h *Handler) CheckDelivery(ctx context.Context, acct uuid.UUID, providerID string) (persistence.Message, error) {
	if d := h.limiter.Allow(ctx, "delivery:"+acct.String(), h.opts.DeliveryRate); !d.Allowed {
		return persistence.Message{}, api.TooManyRequests("too_many_status_checks",
			"too many live status checks for this account; GET /sms/messages/{id} has the stored status", d.RetryAfter)
	}
	m, err := h.store.MessageByProviderID(ctx, acct, providerID)
	if err != nil {
		return persistence.Message{}, err
	}
	if m.Status != "sent" {
		return m, nil
	}
	st, err := h.engine.LiveStatus(ctx, m.Network, providerID)
	switch {
	case errors.Is(err, actors.ErrUnknownMessage):
		// The network has forgotten it; the stored record is all there is.
		return m, nil
	case err != nil:
		p := api.NewProblem("carrier_unavailable", "the "+m.Network.String()+" network did not answer the status check; try again shortly")
		p.RetryAfter = 5
		return persistence.Message{}, p
	}
	if err := h.engine.Sync(ctx, m.Network, providerID, st); err != nil {
		return persistence.Message{}, err
	}
	return h.store.MessageByID(ctx, acct, m.ID)
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
