package payments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

// Verifier asks a provider about a transaction.
type Verifier interface {
	Verify(ctx context.Context, reference string) (Transaction, error)
}

// Store is what confirming needs from the system of record.
type Store interface {
	PaymentByReference(ctx context.Context, reference string) (persistence.Payment, error)
	MarkPayment(ctx context.Context, reference string, status persistence.PaymentStatus, reason string) (bool, error)
	OpenPayments(ctx context.Context, from, to time.Time, limit int) ([]persistence.Payment, error)
	ExpirePayments(ctx context.Context, before time.Time) (int64, error)
}

// Applier applies a confirmed payment (the engine, through the account's tenant actor).
type Applier interface {
	ConfirmPayment(ctx context.Context, accountID uuid.UUID, c persistence.PaymentConfirmation) (persistence.ConfirmedPayment, error)
	// SyncWallet hands the account's stored wallet to its tenant actor.
	SyncWallet(ctx context.Context, accountID uuid.UUID) error
}

// Outcome is what a confirmation found.
type Outcome struct {
	Payment persistence.Payment
	Status  persistence.PaymentStatus
	Reason  string // why it is not paid: cancelled, declined, amount_mismatch, currency_mismatch, …
	// Applied is true for the one confirmation that credited (or marked the fee paid).
	Applied bool
}

// Confirmer settles payments on the provider's word: webhooks and the payer's return both
// come here, as does the reconciler for checkouts nobody told us about.
type Confirmer struct {
	verifier Verifier
	store    Store
	applier  Applier
	log      *slog.Logger
	now      func() time.Time
}

// NewConfirmer returns a Confirmer.
func NewConfirmer(v Verifier, st Store, ap Applier, log *slog.Logger, now func() time.Time) *Confirmer {
	if now == nil {
		now = time.Now
	}
	return &Confirmer{verifier: v, store: st, applier: ap, log: log, now: now}
}

// Confirm finds out from the provider whether the payment with this reference is paid and, if
// it is, applies it (at most once, whoever calls). An unknown reference is
// persistence.ErrNotFound; a provider that cannot be reached is ErrUnavailable. via says who
// asked (webhook, callback, reconciler), for the log.
func (c *Confirmer) Confirm(ctx context.Context, reference, via string) (Outcome, error) {
	p, err := c.store.PaymentByReference(ctx, reference)
	if err != nil {
		return Outcome{}, err
	}
	switch p.Status {
	case persistence.PaymentPaid:
		// Paid already, and told again: the confirmation that paid it may have failed at its
		// commit (and so been retried) after the account's tenant had read the wallet, which
		// would otherwise keep refusing sends this money pays for.
		if err := c.applier.SyncWallet(ctx, p.AccountID); err != nil {
			c.log.Warn("hand a paid top-up's wallet to the account's tenant", slog.String("reference", reference),
				slog.Any("error", err))
		}
		return Outcome{Payment: p, Status: p.Status}, nil
	case persistence.PaymentFailed:
		return Outcome{Payment: p, Status: p.Status, Reason: deref(p.FailureReason)}, nil
	}
	tx, err := c.verifier.Verify(ctx, reference)
	if errors.Is(err, ErrUnknownReference) {
		// We made the reference but the provider never heard of it: its initialize failed.
		return Outcome{Payment: p, Status: p.Status, Reason: "unknown_to_provider"}, nil
	}
	if err != nil {
		return Outcome{}, err
	}
	log := c.log.With(slog.String("reference", reference), slog.String("via", via), slog.String("account_id", p.AccountID.String()))
	switch tx.Status {
	case "success":
		if reason := mismatch(p, tx); reason != "" {
			log.Error("payment not credited: the provider's transaction does not match what we priced",
				slog.String("reason", reason), slog.Int64("priced_cents", p.AmountCents), slog.Int64("paid_cents", tx.Amount),
				slog.Int64("requested_cents", tx.RequestedAmount), slog.String("currency", tx.Currency),
				slog.String("provider_reference", tx.Reference))
			if _, err := c.store.MarkPayment(ctx, reference, persistence.PaymentFailed, reason); err != nil {
				return Outcome{}, err
			}
			p.Status = persistence.PaymentFailed
			return Outcome{Payment: p, Status: p.Status, Reason: reason}, nil
		}
		res, err := c.applier.ConfirmPayment(ctx, p.AccountID, persistence.PaymentConfirmation{Reference: reference, PaidAt: tx.PaidTime(c.now())})
		if errors.Is(err, persistence.ErrPaymentClosed) {
			return Outcome{Payment: p, Status: persistence.PaymentFailed}, nil
		}
		if err != nil {
			return Outcome{}, fmt.Errorf("apply payment %s: %w", reference, err)
		}
		if res.Applied {
			log.Info("payment confirmed", slog.String("purpose", string(p.Purpose)), slog.Int64("amount_cents", p.AmountCents))
		}
		return Outcome{Payment: res.Payment, Status: persistence.PaymentPaid, Applied: res.Applied}, nil
	case "abandoned":
		// Paystack says abandoned until a checkout is paid: not final, still creditable later.
		if _, err := c.store.MarkPayment(ctx, reference, persistence.PaymentAbandoned, "cancelled"); err != nil {
			return Outcome{}, err
		}
		p.Status = persistence.PaymentAbandoned
		return Outcome{Payment: p, Status: p.Status, Reason: "cancelled"}, nil
	case "failed":
		// The last attempt failed (a card declined, an M-Pesa prompt not answered), not the
		// checkout: Paystack counts attempts per reference, and the payer may try again on the
		// same page and pay. Still open, and credited if it is paid later.
		if _, err := c.store.MarkPayment(ctx, reference, persistence.PaymentAbandoned, "declined"); err != nil {
			return Outcome{}, err
		}
		log.Info("payment attempt failed at the provider", slog.String("gateway_response", tx.GatewayResponse))
		p.Status = persistence.PaymentAbandoned
		return Outcome{Payment: p, Status: p.Status, Reason: "declined"}, nil
	case "reversed": // refunded or charged back: final
		if _, err := c.store.MarkPayment(ctx, reference, persistence.PaymentFailed, "reversed"); err != nil {
			return Outcome{}, err
		}
		log.Info("payment reversed at the provider", slog.String("gateway_response", tx.GatewayResponse))
		p.Status = persistence.PaymentFailed
		return Outcome{Payment: p, Status: p.Status, Reason: "reversed"}, nil
	}
	return Outcome{Payment: p, Status: persistence.PaymentPending, Reason: "pending"}, nil // ongoing, processing, queued, …
}

// mismatch says why a successful transaction cannot pay for p, or "" when it can: it must be
// the same reference, in KES, for at least the amount we priced.
func mismatch(p persistence.Payment, tx Transaction) string {
	switch {
	case tx.Reference != p.Reference:
		return "reference_mismatch"
	case tx.Currency != p.Currency:
		return "currency_mismatch"
	case tx.Amount < p.AmountCents, tx.RequestedAmount != 0 && tx.RequestedAmount < p.AmountCents:
		return "amount_mismatch"
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ReconcileOptions tunes the reconciler.
type ReconcileOptions struct {
	Every  time.Duration // how often to look (1m)
	After  time.Duration // ask about checkouts older than this (2m): webhooks usually come first
	Expire time.Duration // give up on checkouts older than this (48h)
}

// WithDefaults fills the options left zero.
func (o ReconcileOptions) WithDefaults() ReconcileOptions {
	if o.Every <= 0 {
		o.Every = time.Minute
	}
	if o.After <= 0 {
		o.After = 2 * time.Minute
	}
	if o.Expire <= o.After {
		o.Expire = 48 * time.Hour
	}
	return o
}

// Reconcile asks the provider about up to a hundred open checkouts, so a payment whose
// webhook and return were both lost is still credited, and gives up on checkouts older than
// o.Expire. A worker runs it every o.Every; checkouts still pending wait for the next round
// (more is always false: asking again at once would ask the same ones).
func (c *Confirmer) Reconcile(ctx context.Context, o ReconcileOptions) (more bool, err error) {
	o = o.WithDefaults()
	const page = 100
	now := c.now()
	open, err := c.store.OpenPayments(ctx, now.Add(-o.Expire), now.Add(-o.After), page)
	if err != nil {
		return false, fmt.Errorf("reconcile payments: %w", err)
	}
	for _, p := range open {
		if _, err := c.Confirm(ctx, p.Reference, "reconciler"); err != nil {
			if ctx.Err() == nil {
				c.log.Warn("reconcile payment", slog.String("reference", p.Reference), slog.Any("error", err))
			}
			if errors.Is(err, ErrUnavailable) {
				return false, nil // try the rest next time
			}
		}
	}
	n, err := c.store.ExpirePayments(ctx, now.Add(-o.Expire))
	if err != nil {
		return false, fmt.Errorf("expire payments: %w", err)
	}
	if n > 0 {
		c.log.Info("gave up on unpaid checkouts", slog.Int64("payments", n))
	}
	return false, nil
}
