package payments

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
)

// HookStore is where the sandbox keeps the webhooks it owes.
type HookStore interface {
	ClaimSandboxHooks(ctx context.Context, lease time.Duration, limit int) ([]persistence.SandboxTx, error)
	SandboxHookDone(ctx context.Context, code string) error
	SandboxHookFailed(ctx context.Context, code, cause string, after time.Duration, giveUp bool) error
}

// SandboxTransaction renders a sandbox transaction in the provider's wire format (verify
// data and webhook data alike).
func SandboxTransaction(t persistence.SandboxTx) Transaction {
	tx := Transaction{
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

// SandboxHooks delivers the sandbox's charge.success webhooks to Tuma's webhook endpoint,
// signed as Paystack signs them, retrying with back-off (as Paystack does) until answered 200.
type SandboxHooks struct {
	store  HookStore
	url    string
	signer PaystackHMAC
	http   *http.Client
	log    *slog.Logger
	wake   chan struct{}
	retry  time.Duration
}

// maxHookAttempts is how many deliveries a webhook gets before the sandbox gives up.
const maxHookAttempts = 12

// NewSandboxHooks returns a sender posting to url (Tuma's /payments/webhook); the first retry
// waits retry, doubling up to an hour.
func NewSandboxHooks(store HookStore, url string, secret []byte, retry time.Duration, log *slog.Logger) *SandboxHooks {
	if retry <= 0 {
		retry = time.Second
	}
	return &SandboxHooks{store: store, url: url, signer: PaystackHMAC{Secret: secret},
		http: &http.Client{Timeout: 10 * time.Second}, log: log, wake: make(chan struct{}, 1), retry: retry}
}

// Wake makes the sender look for owed webhooks now.
func (h *SandboxHooks) Wake() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends.
func (h *SandboxHooks) Run(ctx context.Context) {
	t := time.NewTicker(max(h.retry, 100*time.Millisecond))
	defer t.Stop()
	for {
		for h.deliverDue(ctx) {
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-h.wake:
		}
	}
}

func (h *SandboxHooks) deliverDue(ctx context.Context) bool {
	const batch = 20
	due, err := h.store.ClaimSandboxHooks(ctx, time.Minute, batch)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Error("sandbox: claim webhooks", slog.Any("error", err))
		}
		return false
	}
	for _, t := range due {
		err := h.post(ctx, t)
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if err == nil {
			err = h.store.SandboxHookDone(bctx, t.AccessCode)
		} else {
			attempt := t.HookAttempt + 1
			after := time.Duration(min(float64(h.retry)*math.Pow(2, float64(attempt-1)), float64(time.Hour)))
			h.log.Warn("sandbox: webhook not delivered", slog.String("reference", t.Reference), slog.Int("attempt", attempt),
				slog.Duration("retry_in", after), slog.Any("error", err))
			err = h.store.SandboxHookFailed(bctx, t.AccessCode, err.Error(), after, attempt >= maxHookAttempts)
		}
		cancel()
		if err != nil {
			h.log.Error("sandbox: record webhook delivery", slog.Any("error", err))
		}
	}
	return len(due) == batch && ctx.Err() == nil
}

func (h *SandboxHooks) post(ctx context.Context, t persistence.SandboxTx) error {
	body, err := json.Marshal(Event{Event: EventChargeSuccess, Data: SandboxTransaction(t)})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(PaystackSignatureHeader, h.signer.Sign(body))
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
