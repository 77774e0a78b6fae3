// Package payments talks to payment providers for hosted checkouts: a client of the Paystack
// transaction API (which Tuma's built-in sandbox, transport/api/sandbox, also speaks, so one
// code path serves both), webhook parsing and signature schemes, and the Confirmer that turns
// a provider's word into at most one credit per reference.
package payments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Errors of provider calls.
var (
	// ErrUnavailable: the provider could not be reached or failed (network, 5xx, timeout,
	// an answer we cannot read). Worth retrying later.
	ErrUnavailable = errors.New("payment provider unavailable")
	// ErrUnknownReference: the provider has no transaction with this reference.
	ErrUnknownReference = errors.New("payment provider does not know this reference")
)

// RejectedError is a provider refusing a request (a 4xx with a message).
type RejectedError struct {
	Status  int
	Message string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("payment provider refused the request (%d): %s", e.Status, e.Message)
}

// ValidReference reports whether ref is in the alphabet of Paystack's references (Tuma's are
// TUMA- and base32): anything else is no reference of ours, and may be text a store cannot
// even look up (NUL, invalid UTF-8).
func ValidReference(ref string) bool {
	if len(ref) == 0 || len(ref) > 100 {
		return false
	}
	for _, c := range []byte(ref) {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '=' || c == '-') {
			return false
		}
	}
	return true
}

// Init is a checkout to start.
type Init struct {
	AmountCents int64 // KES subunits
	Currency    string
	Email       string
	Reference   string
	CallbackURL string
	Metadata    map[string]string
}

// Checkout is where to send the payer.
type Checkout struct {
	AuthorizationURL string `json:"authorization_url"`
	AccessCode       string `json:"access_code"`
	Reference        string `json:"reference"`
}

// Transaction is a provider's record of a payment, in the Paystack wire format (verify
// responses and webhook data).
type Transaction struct {
	ID              int64           `json:"id"`
	Domain          string          `json:"domain,omitempty"`
	Status          string          `json:"status"` // success, failed, abandoned, ongoing, pending, reversed, …
	Reference       string          `json:"reference"`
	Amount          int64           `json:"amount"`                     // subunits charged
	RequestedAmount int64           `json:"requested_amount,omitempty"` // subunits asked for (verify only)
	Currency        string          `json:"currency"`
	Channel         string          `json:"channel,omitempty"`
	GatewayResponse string          `json:"gateway_response,omitempty"`
	PaidAt          *string         `json:"paid_at"` // RFC 3339; kept as text so an odd format cannot fail a payment
	CreatedAt       string          `json:"created_at,omitempty"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
	Customer        struct {
		Email string `json:"email"`
	} `json:"customer"`
}

// PaidTime is when the transaction was paid, or now when the provider did not say.
func (t Transaction) PaidTime(now time.Time) time.Time {
	if t.PaidAt != nil {
		if at, err := time.Parse(time.RFC3339Nano, *t.PaidAt); err == nil {
			return at
		}
	}
	return now
}

// Paystack is a client of the Paystack transaction API at a base URL: Paystack itself, a fake
// in tests, or Tuma's own sandbox.
type Paystack struct {
	name   string
	base   string
	secret string
	http   *http.Client
}

// NewPaystack returns a client. name says which provider it is ("paystack", "sandbox") in
// records and logs. The client's timeout bounds every call.
func NewPaystack(name, baseURL, secret string, client *http.Client) *Paystack {
	if client == nil {
		client = &http.Client{Timeout: 15 * time.Second}
	}
	return &Paystack{name: name, base: strings.TrimRight(baseURL, "/"), secret: secret, http: client}
}

// Name is the provider's name.
func (p *Paystack) Name() string { return p.name }

// envelope is every Paystack answer: status says whether the call worked.
type envelope[T any] struct {
	Status  bool   `json:"status"`
	Message string `json:"message"`
	Data    T      `json:"data"`
}

// Initialize starts a checkout: POST /transaction/initialize.
func (p *Paystack) Initialize(ctx context.Context, in Init) (Checkout, error) {
	body := map[string]any{
		"email": in.Email, "amount": in.AmountCents, "currency": in.Currency, "reference": in.Reference,
		"callback_url": in.CallbackURL,
	}
	if len(in.Metadata) > 0 {
		body["metadata"] = in.Metadata
	}
	var out envelope[Checkout]
	if err := p.call(ctx, http.MethodPost, "/transaction/initialize", body, &out); err != nil {
		return Checkout{}, fmt.Errorf("initialize %s: %w", in.Reference, err)
	}
	if out.Data.AuthorizationURL == "" || out.Data.AccessCode == "" {
		return Checkout{}, fmt.Errorf("initialize %s: answer without authorization_url or access_code: %w", in.Reference, ErrUnavailable)
	}
	return out.Data, nil
}

// Verify asks for a transaction's state: GET /transaction/verify/:reference.
func (p *Paystack) Verify(ctx context.Context, reference string) (Transaction, error) {
	var out envelope[Transaction]
	err := p.call(ctx, http.MethodGet, "/transaction/verify/"+url.PathEscape(reference), nil, &out)
	var rej *RejectedError
	if errors.As(err, &rej) && (rej.Status == http.StatusNotFound || strings.Contains(strings.ToLower(rej.Message), "not found")) {
		return Transaction{}, fmt.Errorf("verify %s: %w", reference, ErrUnknownReference)
	}
	if err != nil {
		return Transaction{}, fmt.Errorf("verify %s: %w", reference, err)
	}
	return out.Data, nil
}

// maxAnswer bounds what we read of a provider's answer.
const maxAnswer = 1 << 20

func (p *Paystack) call(ctx context.Context, method, path string, in any, out interface {
	ok() (bool, string)
}) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.secret)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("%w: reading the answer: %w", ErrUnavailable, err)
	}
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return fmt.Errorf("%w: HTTP %d", ErrUnavailable, resp.StatusCode)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		if resp.StatusCode >= 400 {
			return &RejectedError{Status: resp.StatusCode, Message: strings.TrimSpace(string(raw[:min(len(raw), 200)]))}
		}
		return fmt.Errorf("%w: unreadable answer (HTTP %d): %w", ErrUnavailable, resp.StatusCode, err)
	}
	if ok, msg := out.ok(); resp.StatusCode >= 400 || !ok {
		return &RejectedError{Status: resp.StatusCode, Message: msg}
	}
	return nil
}

func (e *envelope[T]) ok() (bool, string) { return e.Status, e.Message }
