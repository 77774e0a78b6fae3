// Package webhooks is the webhook endpoints of the API (CONTRACT §14): an account's endpoints,
// their secrets, their delivery log, redelivery and test events. The deliveries themselves
// are transport/webhooks' (the workers).
package webhooks

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	hooks "github.com/tuma-sms/tuma/transport/webhooks"
)

// Store is what the endpoints need from the store.
type Store interface {
	CreateWebhook(ctx context.Context, n persistence.NewWebhook) (persistence.Webhook, string, error)
	Webhooks(ctx context.Context, accountID uuid.UUID) ([]persistence.Webhook, error)
	WebhookByID(ctx context.Context, accountID, id uuid.UUID) (persistence.Webhook, error)
	UpdateWebhook(ctx context.Context, accountID, id uuid.UUID, p persistence.WebhookPatch) (persistence.Webhook, error)
	DeleteWebhook(ctx context.Context, accountID, id uuid.UUID) error
	RollWebhookSecret(ctx context.Context, accountID, id uuid.UUID, overlap time.Duration) (string, error)
	WebhookDeliveries(ctx context.Context, accountID, endpointID uuid.UUID, status persistence.DeliveryStatus, p persistence.Page) ([]persistence.DeliveryRecord, error)
	RetryWebhookDelivery(ctx context.Context, accountID, endpointID, deliveryID uuid.UUID) error
	WebhookDelivery(ctx context.Context, accountID, endpointID, deliveryID uuid.UUID) (persistence.DeliveryRecord, []persistence.AttemptRecord, error)
	TestWebhook(ctx context.Context, accountID, endpointID uuid.UUID) (uuid.UUID, error)
}

// URLs checks an endpoint's URL as it is saved (transport/webhooks.Policy): an error that is
// transport/webhooks.ErrURLNotAllowed refuses it.
type URLs interface {
	CheckURL(ctx context.Context, raw string) error
}

// Wake asks the deliverer for a round at once (a test event or a redelivery is due now).
type Wake func()

// Deps are the collaborators of the endpoints.
type Deps struct {
	Log   *slog.Logger
	Store Store
	URLs  URLs
	Lists api.Lists
	Wake  Wake      // nil: the deliverer's next round finds the work
	Keys  *api.Keys // the dashboard form's keys (CreateOnce); nil: none
}

// Handler serves the endpoints.
type Handler struct {
	log   *slog.Logger
	store Store
	urls  URLs
	lists api.Lists
	wake  Wake
	keys  *api.Keys
}

// New returns the endpoints.
func New(d Deps) *Handler {
	if d.Wake == nil {
		d.Wake = func() {}
	}
	return &Handler{log: d.Log, store: d.Store, urls: d.URLs, lists: d.Lists, wake: d.Wake, keys: d.Keys}
}

// Register adds the routes.
func (h *Handler) Register(r *api.Router) {
	r.Handle("POST", "/webhooks", api.Account, h.create)
	r.Handle("GET", "/webhooks", api.Account, api.ListOwned(h.List, newWebhookJSON))
	r.Handle("GET", "/webhooks/{id}", api.Account, api.GetOwned(h.Get, newWebhookJSON))
	r.Handle("PATCH", "/webhooks/{id}", api.Account, api.UpdateOwned(h.Update, newWebhookJSON))
	r.Handle("DELETE", "/webhooks/{id}", api.Account, api.DeleteOwned(h.Delete))
	r.Handle("POST", "/webhooks/{id}/roll-secret", api.Account, h.rollSecret)
	r.Handle("POST", "/webhooks/{id}/test", api.Account, h.test)
	r.Handle("GET", "/webhooks/{id}/deliveries", api.Account, h.deliveries)
	r.Handle("POST", "/webhooks/{id}/deliveries/{delivery_id}/retry", api.Account, h.retry)
}

type webhookJSON struct {
	ID             uuid.UUID     `json:"id"`
	URL            string        `json:"url"`
	Events         []string      `json:"events"`
	Description    string        `json:"description"`
	BatchSize      int           `json:"batch_size"`
	Enabled        bool          `json:"enabled"`
	DisabledReason *string       `json:"disabled_reason"`
	CreatedAt      api.Timestamp `json:"created_at"`
}

func newWebhookJSON(w persistence.Webhook) webhookJSON {
	events := w.Events
	if events == nil {
		events = []string{}
	}
	return webhookJSON{ID: w.ID, URL: w.URL, Events: events, Description: w.Description, BatchSize: w.BatchSize,
		Enabled: w.Enabled, DisabledReason: w.DisabledReason, CreatedAt: api.Timestamp(w.CreatedAt)}
}

// Endpoint is an endpoint's fields as POST and PATCH /webhooks read them (nil: absent).
type Endpoint struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Description *string   `json:"description"`
	BatchSize   *int      `json:"batch_size"`
	Enabled     *bool     `json:"enabled"` // PATCH only
}

// Limits of an endpoint's fields.
const (
	maxURLLen         = 2000
	maxDescriptionLen = 500
)

// check validates the fields that are set: a 422 naming every invalid one, of the code
// url_not_allowed when the URL is among them for where it points (the policy's rule).
func (h *Handler) check(ctx context.Context, in Endpoint) error {
	var fe api.FieldErrors
	urlRefused := false
	if in.URL != nil {
		switch u := *in.URL; {
		case strings.TrimSpace(u) == "":
			fe.Add("url", "is required")
		case utf8.RuneCountInString(u) > maxURLLen:
			fe.Add("url", fmt.Sprintf("must be at most %d characters", maxURLLen))
		default:
			if err := h.urls.CheckURL(ctx, u); errors.Is(err, hooks.ErrURLNotAllowed) {
				fe.Add("url", strings.TrimPrefix(err.Error(), "url "))
				urlRefused = true
			} else if err != nil {
				return err
			}
		}
	}
	if in.Events != nil {
		if msg := checkEvents(*in.Events); msg != "" {
			fe.Add("events", msg)
		}
	}
	if in.BatchSize != nil && (*in.BatchSize < 1 || *in.BatchSize > persistence.MaxWebhookBatch) {
		fe.Add("batch_size", fmt.Sprintf("must be an integer from 1 to %d", persistence.MaxWebhookBatch))
	}
	if in.Description != nil && utf8.RuneCountInString(*in.Description) > maxDescriptionLen {
		fe.Add("description", fmt.Sprintf("must be at most %d characters", maxDescriptionLen))
	}
	if len(fe) == 0 {
		return nil
	}
	if urlRefused {
		return api.InvalidAs("url_not_allowed", fe...)
	}
	return fe.Err()
}

// checkEvents says what is wrong with a subscription list ("" when nothing is): known types,
// or "*" alone.
func checkEvents(events []string) string {
	if len(events) == 0 {
		return `must name at least one event type, or "*" for all`
	}
	known := persistence.EventTypes()
	for _, e := range events {
		switch {
		case e == "*" && len(events) > 1:
			return `"*" must be alone`
		case e == "*":
		case !slices.Contains(known, persistence.EventType(e)):
			names := make([]string, len(known))
			for i, t := range known {
				names[i] = string(t)
			}
			return fmt.Sprintf("has an unknown event type %q (known: %s, or \"*\")", e, strings.Join(names, ", "))
		}
	}
	return ""
}

// storeProblem turns the store's refusals into problems: what the handler's checks let
// through and the store still refuses (the two must agree), and the account's limit.
func storeProblem(err error) error {
	var fe *persistence.WebhookFieldError
	switch {
	case errors.As(err, &fe):
		return api.Invalid(api.FieldError{Field: fe.Field, Message: fe.Message})
	case errors.Is(err, persistence.ErrWebhookLimit):
		return api.NewProblem("limit_reached", fmt.Sprintf("an account may have at most %d webhook endpoints; delete one first", persistence.MaxWebhooks))
	}
	return err
}

// Create checks a new endpoint and stores it for the account; it returns the endpoint and
// its secret, shown only now. Bad fields are a 422 (url_not_allowed for the URL's target), an
// eleventh endpoint a 422 limit_reached; nothing is stored then.
func (h *Handler) Create(ctx context.Context, accountID uuid.UUID, in Endpoint) (persistence.Webhook, string, error) {
	var fe api.FieldErrors
	if in.URL == nil {
		fe.Add("url", "is required")
	}
	if in.Events == nil {
		fe.Add("events", `is required: event types, or ["*"] for all`)
	}
	if in.Enabled != nil {
		fe.Add("enabled", "is set by PATCH; a new endpoint is enabled")
	}
	if err := fe.Err(); err != nil {
		return persistence.Webhook{}, "", err
	}
	if err := h.check(ctx, in); err != nil {
		return persistence.Webhook{}, "", err
	}
	n := persistence.NewWebhook{AccountID: accountID, URL: *in.URL, Events: *in.Events, BatchSize: 1}
	if in.Description != nil {
		n.Description = *in.Description
	}
	if in.BatchSize != nil {
		n.BatchSize = *in.BatchSize
	}
	w, secret, err := h.store.CreateWebhook(ctx, n)
	return w, secret, storeProblem(err)
}

// CreateOnce is Create for the dashboard's form, under its key (one per render; "": none): a
// form sent again (a reload of its answer, a double click) creates no second endpoint, and
// gets the first one, replayed true, without its secret (shown once, with the first answer).
func (h *Handler) CreateOnce(ctx context.Context, accountID uuid.UUID, in Endpoint, key string) (w persistence.Webhook, secret string, replayed bool, err error) {
	if key == "" || h.keys == nil {
		w, secret, err = h.Create(ctx, accountID, in)
		return w, secret, false, err
	}
	id, replayed, err := h.keys.CreateOnce(ctx, accountID, "webhook-form:", key, in.fingerprint(), func() (uuid.UUID, error) {
		var err error
		w, secret, err = h.Create(ctx, accountID, in)
		return w.ID, err
	})
	if err != nil || !replayed {
		return w, secret, replayed, err
	}
	w, err = h.store.WebhookByID(ctx, accountID, id)
	return w, "", true, err
}

// fingerprint tells one create form's input from another's.
func (in Endpoint) fingerprint() []byte {
	h := sha256.New()
	for _, s := range []*string{in.URL, in.Description} {
		if s != nil {
			h.Write([]byte(*s))
		}
		h.Write([]byte{0})
	}
	if in.Events != nil {
		h.Write([]byte(strings.Join(*in.Events, ",")))
	}
	if in.BatchSize != nil {
		fmt.Fprintf(h, "\x00%d", *in.BatchSize)
	}
	return h.Sum(nil)
}

// List is the account's endpoints, oldest first (no secrets).
func (h *Handler) List(ctx context.Context, accountID uuid.UUID) ([]persistence.Webhook, error) {
	return h.store.Webhooks(ctx, accountID)
}

// Get is one of the account's endpoints; another account's is persistence.ErrNotFound.
func (h *Handler) Get(ctx context.Context, accountID, id uuid.UUID) (persistence.Webhook, error) {
	return h.store.WebhookByID(ctx, accountID, id)
}

// Update changes the fields that are set, checked as Create checks them.
func (h *Handler) Update(ctx context.Context, accountID, id uuid.UUID, in Endpoint) (persistence.Webhook, error) {
	// An unknown id is a 404 before any field is judged (and before a URL is resolved).
	if _, err := h.store.WebhookByID(ctx, accountID, id); err != nil {
		return persistence.Webhook{}, err
	}
	if err := h.check(ctx, in); err != nil {
		return persistence.Webhook{}, err
	}
	w, err := h.store.UpdateWebhook(ctx, accountID, id, persistence.WebhookPatch{URL: in.URL, Events: in.Events,
		Description: in.Description, BatchSize: in.BatchSize, Enabled: in.Enabled})
	return w, storeProblem(err)
}

// Delete removes an endpoint with its waiting events and its delivery log.
func (h *Handler) Delete(ctx context.Context, accountID, id uuid.UUID) error {
	return h.store.DeleteWebhook(ctx, accountID, id)
}

func (h *Handler) create(ctx context.Context, rc *fasthttp.RequestCtx) error {
	var in Endpoint
	if err := api.DecodeJSON(rc, &in); err != nil {
		return err
	}
	w, secret, err := h.Create(ctx, api.Principal(rc).AccountID, in)
	if err != nil {
		return err
	}
	return api.WriteJSON(rc, http.StatusCreated, struct {
		webhookJSON
		Secret string `json:"secret"`
	}{newWebhookJSON(w), secret})
}
