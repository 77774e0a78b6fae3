package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/auth"
	"github.com/tuma-sms/tuma/transport/payments"
	"github.com/tuma-sms/tuma/transport/strictjson"
)

// Top-up limits (CONTRACT §5), in cents.
const (
	minTopupCents = 50_00
	maxTopupCents = 1_000_000_00
)

// PaymentProvider starts hosted checkouts.
type PaymentProvider interface {
	Name() string
	Initialize(ctx context.Context, in payments.Init) (payments.Checkout, error)
}

// PaymentConfirmer settles a payment on the provider's word.
type PaymentConfirmer interface {
	Confirm(ctx context.Context, reference, via string) (payments.Outcome, error)
}

// Payments is what the payment endpoints need from the store.
type Payments interface {
	CreatePayment(ctx context.Context, np persistence.NewPayment) (persistence.Payment, error)
	PaymentStarted(ctx context.Context, sp persistence.StartedPayment) error
	MarkPayment(ctx context.Context, reference string, status persistence.PaymentStatus, reason string) (bool, error)
	RecordWebhook(ctx context.Context, provider, event, reference string, body []byte, outcome string) error
}

type checkoutJSON struct {
	AuthorizationURL string `json:"authorization_url"`
	AccessCode       string `json:"access_code"`
	Reference        string `json:"reference"`
	Message          string `json:"message"`
}

func (s *Server) topup(ctx context.Context, rc *fasthttp.RequestCtx) error {
	if err := checkJSONContentType(rc); err != nil {
		return err
	}
	p := principal(rc)
	return s.idempotent(ctx, rc, idempotentOp{scope: p.AccountID}, func(key *persistence.IdempotencyKey) error {
		body, err := s.topupOnce(ctx, rc, p, key)
		if err != nil {
			return err
		}
		rc.Response.Header.SetContentType("application/json; charset=utf-8")
		rc.SetStatusCode(http.StatusOK)
		rc.SetBody(body)
		return nil
	})
}

// topupOnce starts a top-up's checkout.
func (s *Server) topupOnce(ctx context.Context, rc *fasthttp.RequestCtx, p auth.Principal, key *persistence.IdempotencyKey) ([]byte, error) {
	cents, email, err := parseTopup(rc.PostBody())
	if err != nil {
		return nil, err
	}
	return s.startCheckout(ctx, p, key, persistence.NewPayment{AccountID: p.AccountID, Purpose: persistence.PurposeTopup,
		AmountCents: cents, Email: email}, "Send the payer to authorization_url; the wallet is credited once the payment is confirmed.")
}

// startCheckout starts a payment's checkout at the provider and returns the answer's body:
// the payment and its reference are stored before the provider hears of them, and a provider
// that fails leaves the payment failed, not half-open. A payment without an email is the
// account's.
func (s *Server) startCheckout(ctx context.Context, p auth.Principal, key *persistence.IdempotencyKey, np persistence.NewPayment, message string) ([]byte, error) {
	if np.Email == "" {
		a, err := s.Accounts.AccountByID(ctx, p.AccountID)
		if err != nil {
			return nil, err
		}
		np.Email = a.Email
	}
	np.Provider = s.Provider.Name()
	pay, err := s.PaymentStore.CreatePayment(ctx, np)
	if err != nil {
		return nil, err
	}
	co, err := s.Provider.Initialize(ctx, payments.Init{AmountCents: np.AmountCents, Currency: pay.Currency, Email: np.Email,
		Reference: pay.Reference, CallbackURL: s.opts.PublicURL + "/wallet/callback",
		Metadata: map[string]string{"purpose": string(pay.Purpose), "account_id": p.AccountID.String()}})
	if err != nil {
		s.Log.Warn("payment provider failed to start a checkout", slog.String("reference", pay.Reference),
			slog.String("provider", s.Provider.Name()), slog.Any("error", err))
		if _, merr := s.PaymentStore.MarkPayment(context.WithoutCancel(ctx), pay.Reference, persistence.PaymentFailed,
			"provider_unavailable"); merr != nil {
			s.Log.Error("mark payment failed", slog.String("reference", pay.Reference), slog.Any("error", merr))
		}
		return nil, errors.Join(payments.ErrUnavailable, err)
	}
	body, err := json.Marshal(checkoutJSON{AuthorizationURL: co.AuthorizationURL, AccessCode: co.AccessCode, Reference: pay.Reference,
		Message: message})
	if err != nil {
		return nil, err
	}
	err = s.PaymentStore.PaymentStarted(ctx, persistence.StartedPayment{ID: pay.ID, AccessCode: co.AccessCode,
		AuthorizationURL: co.AuthorizationURL, Idempotency: key, Response: persistence.StoredResponse{Status: http.StatusOK, Body: body}})
	if err != nil {
		return nil, err
	}
	return body, nil
}

// parseTopup reads {"amount_kes": 500, "email": "…"}; email may be left out (the account's).
func parseTopup(body []byte) (cents int64, email string, err error) {
	var in struct {
		AmountKES json.RawMessage `json:"amount_kes"`
		Email     *string         `json:"email"`
	}
	if err := decodeJSONBytes(body, &in); err != nil {
		return 0, "", err
	}
	var fe fieldErrors
	if len(in.AmountKES) == 0 || string(in.AmountKES) == "null" {
		fe.add("amount_kes", "is required")
	} else if c, msg := parseKES(in.AmountKES, minTopupCents, maxTopupCents); msg != "" {
		fe.add("amount_kes", msg)
	} else {
		cents = c
	}
	if in.Email != nil {
		var ok bool
		if email, ok = normalizeEmail(*in.Email); !ok {
			fe.add("email", "must be a valid email address")
		}
	}
	return cents, email, fe.err()
}

// walletCallback is the payer's return from the checkout: confirm with the provider, then
// send them to the dashboard with ?topup=success|failed (and why, when it failed).
func (s *Server) walletCallback(ctx context.Context, rc *fasthttp.RequestCtx) error {
	ref := string(rc.QueryArgs().Peek("reference"))
	if ref == "" {
		ref = string(rc.QueryArgs().Peek("trxref")) // Paystack sends both
	}
	q := url.Values{}
	// References are Paystack's alphabet (ours are TUMA- and base32): anything else is no
	// reference of ours, and may be text the store cannot even look up (NUL, invalid UTF-8).
	if !referenceRE.MatchString(ref) {
		q.Set("topup", "failed")
		q.Set("reason", "unknown_reference")
		return s.redirectDashboard(rc, q)
	}
	q.Set("reference", ref)
	out, err := s.Confirmer.Confirm(ctx, ref, "callback")
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		q.Set("topup", "failed")
		q.Set("reason", "unknown_reference")
	case errors.Is(err, payments.ErrUnavailable):
		// Not confirmed yet: the webhook or the reconciler will credit it.
		s.Log.Warn("payment provider unavailable on return", slog.String("reference", ref), slog.Any("error", err))
		q.Set("topup", "failed")
		q.Set("reason", "pending")
	case err != nil:
		return err
	case out.Status == persistence.PaymentPaid:
		q.Set("topup", "success")
	default:
		q.Set("topup", "failed")
		q.Set("reason", out.Reason)
	}
	return s.redirectDashboard(rc, q)
}

// redirectDashboard answers 303 to the dashboard with q added to its query.
func (s *Server) redirectDashboard(rc *fasthttp.RequestCtx, q url.Values) error {
	return seeOther(rc, withQuery(s.opts.DashboardURL, q.Encode()))
}

// withQuery adds an encoded query to a URL, after any query it already has.
func withQuery(base, query string) string {
	if strings.Contains(base, "?") {
		return base + "&" + query
	}
	return base + "?" + query
}

// seeOther answers 303 to target: where browser flows (verification, checkout, the payer's
// return) send the browser on.
func seeOther(rc *fasthttp.RequestCtx, target string) error {
	rc.Response.Header.Set("Location", target)
	rc.Response.Header.SetContentType("text/plain; charset=utf-8")
	rc.SetStatusCode(http.StatusSeeOther)
	rc.SetBodyString("See " + target + "\n")
	return nil
}

// paymentWebhook receives the provider's charge events. The signature is checked over the
// raw body before anything is read from it; the event only names a reference, which is then
// verified with the provider before anything is credited.
func (s *Server) paymentWebhook(ctx context.Context, rc *fasthttp.RequestCtx) error {
	body := rc.PostBody()
	header := func(name string) string { return string(rc.Request.Header.Peek(name)) }
	if _, err := s.WebhookSchemes.Verify(header, body); err != nil {
		s.Log.Warn("payment webhook refused", slog.String("ip", s.clientIP(rc)), slog.Any("error", err))
		return problem("invalid_signature", "the webhook signature is missing or does not match the body")
	}
	if name, nul := strictjson.NulMember(body); nul { // the store could not hold it
		return problem("malformed_webhook", "the event has the NUL character in "+name)
	}
	ev, err := payments.ParseEvent(body)
	if err != nil {
		return problem("malformed_webhook", err.Error())
	}
	provider := s.Provider.Name()
	record := func(outcome string) {
		if err := s.PaymentStore.RecordWebhook(context.WithoutCancel(ctx), provider, ev.Event, ev.Data.Reference,
			append([]byte(nil), body...), outcome); err != nil {
			s.Log.Error("record payment webhook", slog.Any("error", err))
		}
	}
	if ev.Event != payments.EventChargeSuccess {
		record("ignored")
		return writeJSON(rc, http.StatusOK, webhookReply{Status: "ignored"})
	}
	out, err := s.Confirmer.Confirm(ctx, ev.Data.Reference, "webhook")
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		s.Log.Warn("payment webhook for an unknown reference ignored", slog.String("reference", ev.Data.Reference))
		record("unknown_reference")
		return writeJSON(rc, http.StatusOK, webhookReply{Status: "ignored"})
	case err != nil:
		record("error")
		return err // 503 when the provider is down: it will deliver again
	}
	outcome := string(out.Status)
	if out.Reason != "" {
		outcome += ": " + out.Reason
	}
	record(outcome)
	return writeJSON(rc, http.StatusOK, webhookReply{Status: string(out.Status)})
}

type webhookReply struct {
	Status string `json:"status"`
}
