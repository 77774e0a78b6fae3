// An endpoint's deliveries: the log, redelivery, test events, and its secret's roll.

package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
)

type deliveryJSON struct {
	ID             uuid.UUID                  `json:"id"`
	Status         persistence.DeliveryStatus `json:"status"`
	EventIDs       []string                   `json:"event_ids"`
	EventTypes     []persistence.EventType    `json:"event_types"`
	Attempts       int                        `json:"attempts"`
	LastStatusCode *int                       `json:"last_status_code"`
	LastError      *string                    `json:"last_error"`
	NextAttemptAt  *api.Timestamp             `json:"next_attempt_at"`
	CreatedAt      api.Timestamp              `json:"created_at"`
	SucceededAt    *api.Timestamp             `json:"succeeded_at"`
}

func newDeliveryJSON(d persistence.DeliveryRecord) deliveryJSON {
	out := deliveryJSON{ID: d.ID, Status: d.Status, EventIDs: d.EventIDs, EventTypes: d.EventTypes, Attempts: d.Attempts,
		LastStatusCode: d.LastStatusCode, LastError: d.LastError, NextAttemptAt: api.TimestampOf(d.NextAttemptAt),
		CreatedAt: api.Timestamp(d.CreatedAt), SucceededAt: api.TimestampOf(d.SucceededAt)}
	if out.EventIDs == nil {
		out.EventIDs = []string{}
	}
	if out.EventTypes == nil {
		out.EventTypes = []persistence.EventType{}
	}
	return out
}

// Deliveries is a page of an endpoint's delivery log, newest first, of one status or all
// (""); another account's endpoint is persistence.ErrNotFound.
func (h *Handler) Deliveries(ctx context.Context, accountID, endpointID uuid.UUID, status persistence.DeliveryStatus, p persistence.Page) ([]persistence.DeliveryRecord, error) {
	return h.store.WebhookDeliveries(ctx, accountID, endpointID, status, p)
}

// DeliveryList is the list a delivery log's cursors belong to: the endpoint's, of a status.
func (h *Handler) DeliveryList(accountID, endpointID uuid.UUID, status persistence.DeliveryStatus) api.List {
	return h.lists.Of(api.WebhookDeliveryList, accountID, "endpoint="+endpointID.String(), "status="+string(status))
}

// Delivery is one of the endpoint's deliveries with its latest attempts, newest first (the
// dashboard's page of a delivery); an unknown delivery, or another account's, is
// persistence.ErrNotFound.
func (h *Handler) Delivery(ctx context.Context, accountID, endpointID, deliveryID uuid.UUID) (persistence.DeliveryRecord, []persistence.AttemptRecord, error) {
	return h.store.WebhookDelivery(ctx, accountID, endpointID, deliveryID)
}

// Retry makes one of the endpoint's deliveries due now, whatever its status; an unknown
// delivery, or another account's, is persistence.ErrNotFound.
func (h *Handler) Retry(ctx context.Context, accountID, endpointID, deliveryID uuid.UUID) error {
	if err := h.store.RetryWebhookDelivery(ctx, accountID, endpointID, deliveryID); err != nil {
		return err
	}
	h.wake()
	return nil
}

// Test queues a webhook.test event to the endpoint, due now, and returns its delivery's id.
func (h *Handler) Test(ctx context.Context, accountID, endpointID uuid.UUID) (uuid.UUID, error) {
	id, err := h.store.TestWebhook(ctx, accountID, endpointID)
	if err != nil {
		return uuid.Nil, err
	}
	h.wake()
	return id, nil
}

// DefaultSecretOverlap is how long a rolled secret keeps signing when the roll does not say.
const DefaultSecretOverlap = 24 * time.Hour

// RollSecret gives the endpoint a new secret and returns it; the old one keeps signing beside
// it for expiresIn seconds (nil: a day; 0: not at all; at most a week, else a 422).
func (h *Handler) RollSecret(ctx context.Context, accountID, endpointID uuid.UUID, expiresIn *int) (string, error) {
	overlap := DefaultSecretOverlap
	if expiresIn != nil {
		maxSeconds := int(persistence.MaxSecretOverlap / time.Second)
		if *expiresIn < 0 || *expiresIn > maxSeconds {
			return "", api.Invalid(api.FieldError{Field: "expires_in_seconds", Message: fmt.Sprintf("must be an integer from 0 to %d", maxSeconds)})
		}
		overlap = time.Duration(*expiresIn) * time.Second
	}
	secret, err := h.store.RollWebhookSecret(ctx, accountID, endpointID, overlap)
	return secret, storeProblem(err)
}

func (h *Handler) deliveries(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	acct := api.Principal(rc).AccountID
	q := api.NewQuery(rc)
	status := api.Enum(q, "status", persistence.DeliveryStatuses()...)
	if q.Text("page") != "" {
		q.Malformed("page", "the delivery log pages by cursor: page_size, then the next_cursor each page returns")
	}
	l := h.DeliveryList(acct, id, status)
	p := q.Page(l)
	if err := q.Err(); err != nil {
		return err
	}
	list, err := h.Deliveries(ctx, acct, id, status, p)
	if err != nil {
		return err
	}
	out := struct {
		Data       []deliveryJSON `json:"data"`
		NextCursor *string        `json:"next_cursor"`
	}{Data: make([]deliveryJSON, len(list))}
	for i, d := range list {
		out.Data[i] = newDeliveryJSON(d)
	}
	if len(list) == p.Size {
		c := l.Cursor(list[len(list)-1].ID)
		out.NextCursor = &c
	}
	return api.WriteJSON(rc, http.StatusOK, out)
}

// queued is the answer of a delivery made due: its id.
type queued struct {
	DeliveryID uuid.UUID `json:"delivery_id"`
}

func (h *Handler) retry(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	delivery, err := api.PathID(rc, "delivery_id")
	if err != nil {
		return err
	}
	if err := h.Retry(ctx, api.Principal(rc).AccountID, id, delivery); err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusAccepted, queued{delivery})
}

func (h *Handler) test(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	delivery, err := h.Test(ctx, api.Principal(rc).AccountID, id)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusAccepted, queued{delivery})
}

func (h *Handler) rollSecret(ctx context.Context, rc *fasthttp.RequestCtx) error {
	id, err := api.PathID(rc, "id")
	if err != nil {
		return err
	}
	var in struct {
		ExpiresInSeconds *int `json:"expires_in_seconds"`
	}
	// The body may be left out altogether; one labelled JSON must be JSON, even when empty.
	if len(rc.PostBody()) > 0 || len(rc.Request.Header.ContentType()) > 0 {
		if err := api.DecodeJSON(rc, &in); err != nil {
			return err
		}
	}
	secret, err := h.RollSecret(ctx, api.Principal(rc).AccountID, id, in.ExpiresInSeconds)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusOK, struct {
		Secret string `json:"secret"`
	}{secret})
}
