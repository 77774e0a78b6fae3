// Checkouts: payments the payer completes at the provider's hosted page, top-ups first.

package wallet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/payments"
)

// Top-up limits (CONTRACT §5), in cents.
const (
	minTopupCents = 50_00
	maxTopupCents = 1_000_000_00
)

// Provider starts hosted checkouts.
type Provider interface {
	Name() string
	Initialize(ctx context.Context, in payments.Init) (payments.Checkout, error)
}

// CheckoutStore is what starting a checkout records.
type CheckoutStore interface {
	AccountByID(ctx context.Context, id uuid.UUID) (persistence.Account, error)
	CreatePayment(ctx context.Context, np persistence.NewPayment) (persistence.Payment, error)
	PaymentStarted(ctx context.Context, sp persistence.StartedPayment) error
	MarkPayment(ctx context.Context, reference string, status persistence.PaymentStatus, reason string) (bool, error)
}

// Checkouts start payments at the provider: top-ups, and sender ID fees (senders).
type Checkouts struct {
	store     CheckoutStore
	provider  Provider
	log       *slog.Logger
	publicURL string // the payer returns to PublicURL/wallet/callback
}

// NewCheckouts returns Checkouts through provider.
func NewCheckouts(store CheckoutStore, provider Provider, publicURL string, log *slog.Logger) *Checkouts {
	return &Checkouts{store: store, provider: provider, log: log, publicURL: publicURL}
}

type checkoutJSON struct {
	AuthorizationURL string `json:"authorization_url"`
	AccessCode       string `json:"access_code"`
	Reference        string `json:"reference"`
	Message          string `json:"message"`
}

// Start starts a payment's checkout at the provider and returns the answer's body: the
// payment and its reference are stored before the provider hears of them, and a provider that
// fails leaves the payment failed, not half-open. A payment without an email is the account's.
func (c *Checkouts) Start(ctx context.Context, key *persistence.IdempotencyKey, np persistence.NewPayment, message string) ([]byte, error) {
	if np.Email == "" {
		a, err := c.store.AccountByID(ctx, np.AccountID)
		if err != nil {
			return nil, err
		}
		np.Email = a.Email
	}
	np.Provider = c.provider.Name()
	pay, err := c.store.CreatePayment(ctx, np)
	if err != nil {
		return nil, err
	}
	co, err := c.provider.Initialize(ctx, payments.Init{AmountCents: np.AmountCents, Currency: pay.Currency, Email: np.Email,
		Reference: pay.Reference, CallbackURL: c.publicURL + "/wallet/callback",
		Metadata: map[string]string{"purpose": string(pay.Purpose), "account_id": np.AccountID.String()}})
	if err != nil {
		c.log.Warn("payment provider failed to start a checkout", slog.String("reference", pay.Reference),
			slog.String("provider", c.provider.Name()), slog.Any("error", err))
		if _, merr := c.store.MarkPayment(context.WithoutCancel(ctx), pay.Reference, persistence.PaymentFailed,
			"provider_unavailable"); merr != nil {
			c.log.Error("mark payment failed", slog.String("reference", pay.Reference), slog.Any("error", merr))
		}
		return nil, errors.Join(payments.ErrUnavailable, err)
	}
	body, err := json.Marshal(checkoutJSON{AuthorizationURL: co.AuthorizationURL, AccessCode: co.AccessCode, Reference: pay.Reference,
		Message: message})
	if err != nil {
		return nil, err
	}
	err = c.store.PaymentStarted(ctx, persistence.StartedPayment{ID: pay.ID, AccessCode: co.AccessCode,
		AuthorizationURL: co.AuthorizationURL, Idempotency: key, Response: persistence.StoredResponse{Status: http.StatusOK, Body: body}})
	if err != nil {
		return nil, err
	}
	return body, nil
}

// Reopen is the answer's body for a checkout opened before and still open: the payer can
// never pay the same thing twice through two tabs.
func (c *Checkouts) Reopen(p persistence.Payment, message string) ([]byte, error) {
	out := checkoutJSON{Reference: p.Reference, Message: message}
	if p.AuthorizationURL != nil {
		out.AuthorizationURL = *p.AuthorizationURL
	}
	if p.AccessCode != nil {
		out.AccessCode = *p.AccessCode
	}
	return json.Marshal(out)
}

func (h *Handler) topup(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := api.CheckJSON(rc); err != nil {
		return err
	}
	body, err := h.Topup(ctx, rc, api.Principal(rc).AccountID, func() (TopupRequest, error) {
		var in TopupRequest
		return in, api.ParseJSON(rc.PostBody(), &in)
	})
	if err != nil {
		return err
	}
	api.WriteJSONBody(rc, http.StatusOK, body)
	return nil
}

// TopupRequest is a top-up as POST /wallet/topup reads it: amount_kes a JSON number of
// shillings (at most two decimals), and the payer's email, the account's when left out.
type TopupRequest struct {
	AmountKES json.RawMessage `json:"amount_kes"`
	Email     *string         `json:"email"`
}

// topupMessage says what the answer of a top-up's checkout is for.
const topupMessage = "Send the payer to authorization_url; the wallet is credited once the payment is confirmed."

// Topup opens the checkout of a top-up and returns the answer of POST /wallet/topup
// ({authorization_url, access_code, reference, message}). It runs once per Idempotency-Key
// header: read gives the request once the key is claimed, and a replay is answered as the
// first time (on rc as well) without reading or opening anything.
func (h *Handler) Topup(ctx context.Context, rc *fasthttp.RequestCtx, accountID uuid.UUID, read func() (TopupRequest, error)) ([]byte, error) {
	var body []byte
	err := h.keys.Run(ctx, rc, api.Op{Scope: accountID}, func(key *persistence.IdempotencyKey) error {
		in, err := read()
		if err != nil {
			return err
		}
		cents, email, err := in.validate()
		if err != nil {
			return err
		}
		body, err = h.checkouts.Start(ctx, key, persistence.NewPayment{AccountID: accountID, Purpose: persistence.PurposeTopup,
			AmountCents: cents, Email: email}, topupMessage)
		return err
	})
	if err == nil && body == nil { // a replay: Run answered with the first checkout's body
		body = append([]byte(nil), rc.Response.Body()...)
	}
	return body, err
}

// validate checks a top-up: the amount within the limits, the email (when given) valid.
func (in TopupRequest) validate() (cents int64, email string, err error) {
	var fe api.FieldErrors
	if len(in.AmountKES) == 0 || string(in.AmountKES) == "null" {
		fe.Add("amount_kes", "is required")
	} else if c, msg := parseKES(in.AmountKES, minTopupCents, maxTopupCents); msg != "" {
		fe.Add("amount_kes", msg)
	} else {
		cents = c
	}
	if in.Email != nil {
		var ok bool
		if email, ok = api.NormalizeEmail(*in.Email); !ok {
			fe.Add("email", "must be a valid email address")
		}
	}
	return cents, email, fe.Err()
}

// ReadCheckout reads the answer of a checkout (Checkouts.Start or Reopen): where it sends
// the payer, and the payment's reference.
func ReadCheckout(body []byte) (authorizationURL, reference string, err error) {
	var co checkoutJSON
	if err := json.Unmarshal(body, &co); err != nil {
		return "", "", fmt.Errorf("read a checkout: %w", err)
	}
	if co.AuthorizationURL == "" || co.Reference == "" {
		return "", "", errors.New("read a checkout: no authorization_url or reference")
	}
	return co.AuthorizationURL, co.Reference, nil
}
