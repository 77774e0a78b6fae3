// The provider's word on a payment: the payer's return from the checkout, and the webhook.

package wallet

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/payments"
	"github.com/tuma-sms/tuma/transport/strictjson"
)

// callback is the payer's return from the checkout: confirm with the provider, then
// send them to the dashboard with ?topup=success|failed (and why, when it failed).
func (h *Handler) callback(ctx context.Context, rc *fasthttp.RequestCtx) error {
	ref := string(rc.QueryArgs().Peek("reference"))
	if ref == "" {
		ref = string(rc.QueryArgs().Peek("trxref")) // Paystack sends both
	}
	q := url.Values{}
	if !payments.ValidReference(ref) {
		q.Set("topup", "failed")
		q.Set("reason", "unknown_reference")
		return h.redirectDashboard(rc, q)
	}
	q.Set("reference", ref)
	out, err := h.confirmer.Confirm(ctx, ref, "callback")
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		q.Set("topup", "failed")
		q.Set("reason", "unknown_reference")
	case errors.Is(err, payments.ErrUnavailable):
		// Not confirmed yet: the webhook or the reconciler will credit it.
		h.log.Warn("payment provider unavailable on return", slog.String("reference", ref), slog.Any("error", err))
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
	return h.redirectDashboard(rc, q)
}

// redirectDashboard answers 303 to the dashboard with q added to its query.
func (h *Handler) redirectDashboard(rc *fasthttp.RequestCtx, q url.Values) error {
	return api.SeeOther(rc, api.WithQuery(h.opts.DashboardURL, q.Encode()))
}

// webhook receives the provider's charge events. The signature is checked over the
// raw body before anything is read from it; the event only names a reference, which is then
// verified with the provider before anything is credited.
func (h *Handler) webhook(ctx context.Context, rc *fasthttp.RequestCtx) error {
	body := rc.PostBody()
	header := func(name string) string { return string(rc.Request.Header.Peek(name)) }
	if _, err := h.webhooks.Verify(header, body); err != nil {
		h.log.Warn("payment webhook refused", slog.String("ip", h.opts.Proxies.ClientIP(rc)), slog.Any("error", err))
		return api.NewProblem("invalid_signature", "the webhook signature is missing or does not match the body")
	}
	if name, nul := strictjson.NulMember(body); nul { // the store could not hold it
		return api.NewProblem("malformed_webhook", "the event has the NUL character in "+name)
	}
	ev, err := payments.ParseEvent(body)
	if err != nil {
		return api.NewProblem("malformed_webhook", err.Error())
	}
	provider := h.opts.Provider
	record := func(outcome string) {
		if err := h.store.RecordWebhook(context.WithoutCancel(ctx), provider, ev.Event, ev.Data.Reference,
			append([]byte(nil), body...), outcome); err != nil {
			h.log.Error("record payment webhook", slog.Any("error", err))
		}
	}
	if ev.Event != payments.EventChargeSuccess {
		record("ignored")
		return api.WriteJSON(rc, http.StatusOK, webhookReply{Status: "ignored"})
	}
	out, err := h.confirmer.Confirm(ctx, ev.Data.Reference, "webhook")
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		h.log.Warn("payment webhook for an unknown reference ignored", slog.String("reference", ev.Data.Reference))
		record("unknown_reference")
		return api.WriteJSON(rc, http.StatusOK, webhookReply{Status: "ignored"})
	case err != nil:
		record("error")
		return err // 503 when the provider is down: it will deliver again
	}
	outcome := string(out.Status)
	if out.Reason != "" {
		outcome += ": " + out.Reason
	}
	record(outcome)
	return api.WriteJSON(rc, http.StatusOK, webhookReply{Status: string(out.Status)})
}

type webhookReply struct {
	Status string `json:"status"`
}
