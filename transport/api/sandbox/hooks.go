// The sandbox's webhooks: after a payment it posts charge.success to Tuma's webhook endpoint,
// signed as Paystack signs them, as a real provider would.

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/payments"
)

// HookStore is where the sandbox keeps the webhooks it owes.
type HookStore interface {
	ClaimSandboxHooks(ctx context.Context, lease time.Duration, limit int) ([]persistence.SandboxTx, error)
	SandboxHookDone(ctx context.Context, code string) error
	SandboxHookFailed(ctx context.Context, code, cause string, after time.Duration, giveUp bool) error
}

// Transaction renders a sandbox transaction in the provider's wire format (verify data and
// webhook data alike).
func Transaction(t persistence.SandboxTx) payments.Transaction {
	tx := payments.Transaction{
		ID: sandboxID(t), Domain: "test", Status: t.Status, Reference: t.Reference, Amount: t.Amount,
		RequestedAmount: t.Amount, Currency: t.Currency, Channel: "card", CreatedAt: t.CreatedAt.UTC().Format(time.RFC3339),
		Metadata: t.Metadata,
	}
	tx.Customer.Email = t.Email
	switch t.Status {
	case "success":
		tx.GatewayResponse = "Successful"
	case "abandoned":
		tx.GatewayResponse = "The transaction was cancelled by the payer"
	default:
		tx.GatewayResponse = "Awaiting payment"
	}
	if t.PaidAt != nil {
		at := t.PaidAt.UTC().Format(time.RFC3339)
		tx.PaidAt = &at
	}
	return tx
}

// sandboxID is a stable numeric id for a transaction, as providers give.
func sandboxID(t persistence.SandboxTx) int64 { return t.CreatedAt.UnixMicro() }

// Hooks is the sandbox's side of an outbox of webhooks (actors.Outbox runs its rounds): it
// posts each owed charge.success webhook to Tuma's webhook endpoint, signed as Paystack signs
// them, and retries with back-off (as Paystack does) until answered 200.
type Hooks struct {
	store  HookStore
	url    string
	signer payments.PaystackHMAC
	http   *http.Client
	log    *slog.Logger
	retry  time.Duration
}

// maxHookAttempts is how many deliveries a webhook gets before the sandbox gives up.
const maxHookAttempts = 12

// NewHooks returns a sender posting to url (Tuma's /payments/webhook); the first retry waits
// retry, doubling up to an hour.
func NewHooks(store HookStore, url string, secret []byte, retry time.Duration, log *slog.Logger) *Hooks {
	if retry <= 0 {
		retry = time.Second
	}
	return &Hooks{store: store, url: url, signer: payments.PaystackHMAC{Secret: secret},
		http: &http.Client{Timeout: 10 * time.Second}, log: log, retry: retry}
}

// Poll is how often the sender's worker looks for owed webhooks when nobody wakes it.
func (h *Hooks) Poll() time.Duration { return max(h.retry, 100*time.Millisecond) }

// Claim leases up to limit webhooks that are due.
func (h *Hooks) Claim(ctx context.Context, limit int) ([]persistence.SandboxTx, error) {
	due, err := h.store.ClaimSandboxHooks(ctx, time.Minute, limit)
	if err != nil {
		return nil, fmt.Errorf("sandbox: claim webhooks: %w", err)
	}
	return due, nil
}

// Deliver posts one webhook.
func (h *Hooks) Deliver(ctx context.Context, t persistence.SandboxTx) error {
	return h.post(ctx, t)
}

// Delivered records a webhook answered 200.
func (h *Hooks) Delivered(ctx context.Context, t persistence.SandboxTx) error {
	if err := h.store.SandboxHookDone(ctx, t.AccessCode); err != nil {
		return fmt.Errorf("sandbox: record webhook delivery: %w", err)
	}
	return nil
}

// Failed schedules the next attempt, or gives up after maxHookAttempts.
func (h *Hooks) Failed(ctx context.Context, t persistence.SandboxTx, cause error) error {
	attempt := t.HookAttempt + 1
	after := time.Duration(min(float64(h.retry)*math.Pow(2, float64(attempt-1)), float64(time.Hour)))
	h.log.Warn("sandbox: webhook not delivered", slog.String("reference", t.Reference), slog.Int("attempt", attempt),
		slog.Duration("retry_in", after), slog.Any("error", cause))
	if err := h.store.SandboxHookFailed(ctx, t.AccessCode, cause.Error(), after, attempt >= maxHookAttempts); err != nil {
		return fmt.Errorf("sandbox: record webhook failure: %w", err)
	}
	return nil
}

func (h *Hooks) post(ctx context.Context, t persistence.SandboxTx) error {
	body, err := json.Marshal(payments.Event{Event: payments.EventChargeSuccess, Data: Transaction(t)})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(payments.PaystackSignatureHeader, h.signer.Sign(body))
	resp, err := h.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("webhook answered HTTP %d", resp.StatusCode)
	}
	return nil
}
