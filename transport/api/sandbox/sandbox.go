// Package sandbox is a payment provider Tuma serves itself, for development: the Paystack
// transaction API under /sandbox/paystack (what the Paystack client calls when
// TUMA_PAYMENT_PROVIDER=sandbox), the hosted checkout pages under /checkout, and the sender of
// its signed webhooks. Its routes answer 404 when another provider is configured. Its books
// are kept by the store (persistence/sandbox.go).
package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/auth"
	"github.com/tuma-sms/tuma/transport/payments"
	"github.com/tuma-sms/tuma/transport/strictjson"
)

// Options configure the provider.
type Options struct {
	On           bool   // the sandbox is the payment provider (TUMA_PAYMENT_PROVIDER=sandbox)
	Secret       string // the secret key its API accepts (TUMA_PAYMENT_SECRET_KEY)
	PublicURL    string // where its checkout pages are reached
	DashboardURL string // where a payer returns when the merchant named no callback
}

// Store is the provider's books.
type Store interface {
	SandboxCreate(ctx context.Context, t persistence.SandboxTx) (persistence.SandboxTx, error)
	SandboxByAccessCode(ctx context.Context, code string) (persistence.SandboxTx, error)
	SandboxByReference(ctx context.Context, reference string) (persistence.SandboxTx, error)
	SandboxSettle(ctx context.Context, code, status string, at time.Time) (persistence.SandboxTx, error)
}

// Waker wakes the webhook sender's worker after a payment.
type Waker interface{ Wake() }

// Deps are the collaborators of the provider's endpoints.
type Deps struct {
	Store Store
	Hooks Waker
	Now   func() time.Time
}

// Handler serves the provider's API and checkout pages.
type Handler struct {
	opts  Options
	store Store
	hooks Waker
	now   func() time.Time
}

// New returns the provider's endpoints.
func New(opts Options, d Deps) *Handler {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Handler{opts: opts, store: d.Store, hooks: d.Hooks, now: d.Now}
}

// Register adds the routes, absent unless the sandbox is the provider.
func (h *Handler) Register(r *api.Router) {
	r.HandleIf(h.opts.On, "GET", "/checkout/{access_code}", api.Public, h.checkoutPage)
	r.HandleIf(h.opts.On, "POST", "/checkout/{access_code}", api.Public, h.checkoutAction)
	r.HandleIf(h.opts.On, "POST", "/sandbox/paystack/transaction/initialize", api.Public, h.keyed(h.initialize))
	r.HandleIf(h.opts.On, "GET", "/sandbox/paystack/transaction/verify/{reference}", api.Public, h.keyed(h.verify))
}

// paystackReply writes a Paystack-style envelope.
func paystackReply(rc *fasthttp.RequestCtx, status int, ok bool, message string, data any) error {
	return api.WriteJSON(rc, status, struct {
		Status  bool   `json:"status"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}{ok, message, data})
}

// keyed guards the provider API: only callers presenting its secret key, as Paystack demands.
func (h *Handler) keyed(next api.Handler) api.Handler {
	return func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		tok, ok := auth.ParseBearer(string(rc.Request.Header.Peek("Authorization")))
		if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(h.opts.Secret)) != 1 {
			return paystackReply(rc, http.StatusUnauthorized, false, "Invalid key", nil)
		}
		return next(ctx, rc)
	}
}

func (h *Handler) initialize(ctx context.Context, rc *fasthttp.RequestCtx) error {
	var in struct {
		Email       string          `json:"email"`
		Amount      json.RawMessage `json:"amount"` // Paystack takes a number or a string of digits
		Currency    string          `json:"currency"`
		Reference   string          `json:"reference"`
		CallbackURL string          `json:"callback_url"`
		Metadata    json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(rc.PostBody(), &in); err != nil {
		return paystackReply(rc, http.StatusBadRequest, false, "Invalid JSON body", nil)
	}
	if name, nul := strictjson.NulMember(rc.PostBody()); nul { // the store could not hold it
		return paystackReply(rc, http.StatusBadRequest, false, "Invalid character in "+name, nil)
	}
	amount, err := strconv.ParseInt(strings.Trim(string(in.Amount), `"`), 10, 64)
	var problem string
	switch {
	case err != nil || amount <= 0:
		problem = "Invalid Amount Sent"
	case in.Email == "" || !strings.Contains(in.Email, "@"):
		problem = "Invalid Email Address Passed"
	case in.Currency != "" && in.Currency != "KES":
		problem = "Currency not supported by merchant"
	case in.Reference != "" && !payments.ValidReference(in.Reference):
		problem = "Invalid transaction reference"
	}
	if problem != "" {
		return paystackReply(rc, http.StatusBadRequest, false, problem, nil)
	}
	if in.Currency == "" {
		in.Currency = "KES"
	}
	if in.Reference == "" {
		in.Reference = "SBX-" + randomCode(12)
	}
	if in.CallbackURL == "" {
		in.CallbackURL = h.opts.DashboardURL
	}
	if len(in.Metadata) == 0 || !json.Valid(in.Metadata) {
		in.Metadata = json.RawMessage(`{}`)
	}
	t, err := h.store.SandboxCreate(ctx, persistence.SandboxTx{AccessCode: randomCode(16), Reference: in.Reference,
		Amount: amount, Currency: in.Currency, Email: in.Email, CallbackURL: in.CallbackURL, Metadata: in.Metadata})
	if errors.Is(err, persistence.ErrDuplicateReference) {
		return paystackReply(rc, http.StatusBadRequest, false, "Duplicate Transaction Reference", nil)
	}
	if err != nil {
		return err
	}
	return paystackReply(rc, http.StatusOK, true, "Authorization URL created", payments.Checkout{
		AuthorizationURL: h.opts.PublicURL + "/checkout/" + t.AccessCode, AccessCode: t.AccessCode, Reference: t.Reference})
}

func (h *Handler) verify(ctx context.Context, rc *fasthttp.RequestCtx) error {
	ref, _ := rc.UserValue("reference").(string)
	t, err := h.store.SandboxByReference(ctx, ref)
	if errors.Is(err, persistence.ErrNotFound) {
		return paystackReply(rc, http.StatusBadRequest, false, "Transaction reference not found", nil)
	}
	if err != nil {
		return err
	}
	return paystackReply(rc, http.StatusOK, true, "Verification successful", Transaction(t))
}

// randomCode is n random lower-case letters and digits (access codes, references).
func randomCode(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
