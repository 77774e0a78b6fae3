package persistence

import (
	"context"
	"encoding/base32"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ErrPaymentClosed is a payment that can no longer be paid (failed), or was already paid.
var ErrPaymentClosed = errors.New("payment is closed")

// Payment is one checkout we started with a provider.
type Payment struct {
	ID               uuid.UUID
	AccountID        uuid.UUID
	Reference        string
	Purpose          PaymentPurpose
	SenderID         *uuid.UUID
	AmountCents      int64
	Currency         string
	Email            string
	Provider         string
	Status           PaymentStatus
	AccessCode       *string
	AuthorizationURL *string
	FailureReason    *string
	PaidAt           *time.Time
	CreatedAt        time.Time
}

// NewPayment is a checkout about to be started.
type NewPayment struct {
	AccountID   uuid.UUID
	Purpose     PaymentPurpose
	SenderID    *uuid.UUID
	AmountCents int64
	Email       string
	Provider    string
}

// referenceEncoding renders a payment id as the reference: upper-case letters and digits,
// which every provider accepts.
var referenceEncoding = base32.NewEncoding("0123456789ABCDEFGHJKMNPQRSTVWXYZ").WithPadding(base32.NoPadding)

// PaymentReference is the reference of the payment with this id: "TUMA-" and 26 characters.
func PaymentReference(id uuid.UUID) string { return "TUMA-" + referenceEncoding.EncodeToString(id[:]) }

const paymentColumns = `id, account_id, reference, purpose, sender_id, amount_cents, currency, email, provider,
	status, access_code, authorization_url, failure_reason, paid_at, created_at`

func scanPayment(row pgx.Row) (Payment, error) {
	var p Payment
	err := row.Scan(&p.ID, &p.AccountID, &p.Reference, &p.Purpose, &p.SenderID, &p.AmountCents, &p.Currency, &p.Email,
		&p.Provider, &p.Status, &p.AccessCode, &p.AuthorizationURL, &p.FailureReason, &p.PaidAt, &p.CreatedAt)
	return p, err
}

// CreatePayment records a pending payment and its reference, before the provider hears of it.
func (s *Store) CreatePayment(ctx context.Context, np NewPayment) (Payment, error) {
	id := NewID()
	p, err := scanPayment(s.pool.QueryRow(ctx, `INSERT INTO payments
		(id, account_id, reference, purpose, sender_id, amount_cents, email, provider)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+paymentColumns,
		id, np.AccountID, PaymentReference(id), np.Purpose, np.SenderID, np.AmountCents, np.Email, np.Provider))
	if err != nil {
		return Payment{}, fmt.Errorf("create payment: %w", err)
	}
	return p, nil
}

// StartedPayment is what the provider answered to a checkout we started.
type StartedPayment struct {
	ID               uuid.UUID
	AccessCode       string
	AuthorizationURL string
	Idempotency      *IdempotencyKey // completed with Response in the same transaction
	Response         StoredResponse
}

// PaymentStarted stores the provider's checkout of a pending payment and, in the same
// transaction, the response an Idempotency-Key replays.
func (s *Store) PaymentStarted(ctx context.Context, sp StartedPayment) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE payments SET access_code = $2, authorization_url = $3, updated_at = now() WHERE id = $1`,
			sp.ID, sp.AccessCode, sp.AuthorizationURL); err != nil {
			return err
		}
		if sp.Idempotency == nil {
			return nil
		}
		return completeIdempotencyKey(ctx, tx, *sp.Idempotency, sp.Response)
	})
	if err != nil {
		return fmt.Errorf("payment started: %w", err)
	}
	return nil
}

// PaymentByReference finds a payment by our reference.
func (s *Store) PaymentByReference(ctx context.Context, reference string) (Payment, error) {
	p, err := scanPayment(s.pool.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE reference = $1`, reference))
	if errors.Is(err, pgx.ErrNoRows) {
		return Payment{}, ErrNotFound
	}
	if err != nil {
		return Payment{}, fmt.Errorf("payment by reference: %w", err)
	}
	return p, nil
}

// MarkPayment moves an unpaid payment to abandoned or failed, with the reason. It reports
// whether the payment changed: a paid or failed payment stays as it is.
func (s *Store) MarkPayment(ctx context.Context, reference string, status PaymentStatus, reason string) (bool, error) {
	if status != PaymentAbandoned && status != PaymentFailed {
		return false, fmt.Errorf("mark payment %s: status %q is not abandoned or failed", reference, status)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE payments SET status = $2, failure_reason = $3, updated_at = now()
		WHERE reference = $1 AND status IN ('pending', 'abandoned')`, reference, status, reason)
	if err != nil {
		return false, fmt.Errorf("mark payment %s: %w", reference, err)
	}
	return tag.RowsAffected() > 0, nil
}

// OpenPayments takes up to limit payments still pending or abandoned that were started between
// the two times, the ones the provider may have settled without telling us: those asked about
// longest ago first (never asked, then oldest), each marked asked now. Every open payment has
// its turn however many stay open, and several nodes reconciling at once take different ones.
func (s *Store) OpenPayments(ctx context.Context, from, to time.Time, limit int) ([]Payment, error) {
	rows, err := s.pool.Query(ctx, `UPDATE payments p SET checked_at = now()
		FROM (SELECT id FROM payments WHERE status IN ('pending', 'abandoned') AND created_at >= $1 AND created_at < $2
			ORDER BY checked_at NULLS FIRST, created_at LIMIT $3 FOR UPDATE SKIP LOCKED) due
		WHERE p.id = due.id
		RETURNING p.id, p.account_id, p.reference, p.purpose, p.sender_id, p.amount_cents, p.currency, p.email, p.provider,
			p.status, p.access_code, p.authorization_url, p.failure_reason, p.paid_at, p.created_at`, from, to, limit)
	if err != nil {
		return nil, fmt.Errorf("open payments: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Payment, error) { return scanPayment(r) })
	if err != nil {
		return nil, fmt.Errorf("open payments: %w", err)
	}
	return out, nil
}

// ExpirePayments gives up on payments still open that were started before `before`.
func (s *Store) ExpirePayments(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE payments SET status = 'abandoned', failure_reason = 'expired', updated_at = now()
		WHERE status = 'pending' AND created_at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("expire payments: %w", err)
	}
	return tag.RowsAffected(), nil
}

// PaymentConfirmation is a settled payment, as the provider reported it.
type PaymentConfirmation struct {
	Reference string
	PaidAt    time.Time
	// Notice is the notification to add when this confirmation credits a wallet top-up.
	Notice func(amountCents, balanceCents int64) NewNotification
}

// ConfirmedPayment is the outcome of ConfirmPayment.
type ConfirmedPayment struct {
	Payment Payment
	// Applied is true for the one confirmation that moved the payment to paid; repeats are
	// false and change nothing.
	Applied bool
	// Wallet is the wallet after a top-up was credited (Applied top-ups only).
	Wallet *WalletSnapshot
}

// ConfirmPayment marks a payment paid and does what it pays for, all in one transaction: a
// top-up credits the wallet (a topup ledger entry with the reference); a sender fee marks the
// sender's fee paid (a sender_id_fee entry for the record; the balance does not change).
// Only the statement that moves the payment from pending or abandoned to paid does this, and
// the ledger allows one entry per reference, so a payment is applied at most once however
// often and concurrently it is confirmed. A failed payment is ErrPaymentClosed.
func (s *Store) ConfirmPayment(ctx context.Context, c PaymentConfirmation) (ConfirmedPayment, error) {
	var out ConfirmedPayment
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		p, err := scanPayment(tx.QueryRow(ctx, `UPDATE payments SET status = 'paid', paid_at = $2, failure_reason = NULL, updated_at = now()
			WHERE reference = $1 AND status IN ('pending', 'abandoned') RETURNING `+paymentColumns, c.Reference, c.PaidAt))
		if errors.Is(err, pgx.ErrNoRows) {
			cur, err := scanPayment(tx.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE reference = $1`, c.Reference))
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				return ErrNotFound
			case err != nil:
				return err
			case cur.Status == PaymentFailed:
				return ErrPaymentClosed
			}
			out.Payment = cur // already paid: nothing to do
			return nil
		}
		if err != nil {
			return err
		}
		out.Payment, out.Applied = p, true
		switch p.Purpose {
		case PurposeTopup:
			w, err := creditPayment(ctx, tx, p, "Wallet top-up via "+p.Provider)
			if err != nil {
				return err
			}
			out.Wallet = w
			if c.Notice != nil {
				if err := addNotification(ctx, tx, p.AccountID, c.Notice(p.AmountCents, w.BalanceCents)); err != nil {
					return err
				}
			}
			if err := queueAccountEvent(ctx, tx, p.AccountID, EventTopupSucceeded, map[string]any{
				"reference": p.Reference, "amount_kes": kes(p.AmountCents), "balance_kes": kes(w.BalanceCents),
				"provider": p.Provider, "paid_at": c.PaidAt.UTC(),
			}); err != nil {
				return err
			}
		case PurposeSenderFee:
			name, toWallet, err := feePaid(ctx, tx, p.AccountID, *p.SenderID)
			if err != nil {
				return err
			}
			if toWallet != "" {
				// Paid already through another checkout (two tabs), or for an application since
				// cancelled: the money is the account's, credited to its wallet.
				w, err := creditPayment(ctx, tx, p, toWallet)
				if err != nil {
					return err
				}
				out.Wallet = w
				return nil
			}
			if _, err := tx.Exec(ctx, `INSERT INTO wallet_transactions (id, account_id, type, amount_cents, reference, description)
				VALUES ($1, $2, 'sender_id_fee', $3, $4, $5)`, NewID(), p.AccountID, p.AmountCents, p.Reference,
				"Registration fee of sender ID "+name); err != nil {
				return err
			}
		default:
			return fmt.Errorf("payment %s has unknown purpose %q", p.Reference, p.Purpose)
		}
		return nil
	})
	switch {
	case err == nil:
		return out, nil
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrPaymentClosed):
		return ConfirmedPayment{}, err
	case isUniqueViolation(err, "wallet_transactions_one_per_payment"):
		// Unreachable while the status guard holds; if it ever does not, the ledger still wins.
		return ConfirmedPayment{}, fmt.Errorf("confirm payment %s: ledger already has it: %w", c.Reference, err)
	}
	return ConfirmedPayment{}, fmt.Errorf("confirm payment %s: %w", c.Reference, err)
}

// RecordWebhook keeps a verified webhook as received.
func (s *Store) RecordWebhook(ctx context.Context, provider, event, reference string, body []byte, outcome string) error {
	var ref *string
	if reference != "" {
		ref = &reference
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO payment_webhooks (id, provider, event, reference, body, outcome) VALUES ($1, $2, $3, $4, $5, $6)`,
		NewID(), provider, event, ref, body, outcome); err != nil {
		return fmt.Errorf("record webhook: %w", err)
	}
	return nil
}

// LowBalanceAlert records that an account was told its balance is low, and adds the
// notification, unless it was already told since the balance last recovered. It reports
// whether the notification was added. The caller (the tenant actor) decides when the balance
// is low; the store only keeps that decision once across restarts and nodes.
func (s *Store) LowBalanceAlert(ctx context.Context, accountID uuid.UUID, n NewNotification) (bool, error) {
	added := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The tenant actor decided from the balances it saw, in order; the balance now may
		// already be another send's. The flag only keeps the decision across restarts.
		var balance int64
		err := tx.QueryRow(ctx, `UPDATE wallets SET low_balance_alerted = true
			WHERE account_id = $1 AND NOT low_balance_alerted RETURNING balance_cents`, accountID).Scan(&balance)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		added = true
		if err := addNotification(ctx, tx, accountID, n); err != nil {
			return err
		}
		return queueAccountEvent(ctx, tx, accountID, EventLowBalance, map[string]any{"balance_kes": kes(balance)})
	})
	if err != nil {
		return false, fmt.Errorf("low balance alert: %w", err)
	}
	return added, nil
}

// LowBalanceRecovered re-arms the low-balance notification: the tenant actor saw the balance
// back at or above the threshold.
func (s *Store) LowBalanceRecovered(ctx context.Context, accountID uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, `UPDATE wallets SET low_balance_alerted = false
		WHERE account_id = $1 AND low_balance_alerted`, accountID); err != nil {
		return fmt.Errorf("low balance recovered: %w", err)
	}
	return nil
}

// creditPayment adds a paid payment's amount to its account's wallet, with its ledger entry
// (a top-up, one per payment).
func creditPayment(ctx context.Context, tx pgx.Tx, p Payment, description string) (*WalletSnapshot, error) {
	var w WalletSnapshot
	if err := tx.QueryRow(ctx, `UPDATE wallets SET balance_cents = balance_cents + $2, version = version + 1, updated_at = now()
		WHERE account_id = $1 RETURNING `+snapshotColumns, p.AccountID, p.AmountCents).Scan(w.fields()...); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO wallet_transactions (id, account_id, type, amount_cents, reference, description)
		VALUES ($1, $2, 'topup', $3, $4, $5)`, NewID(), p.AccountID, p.AmountCents, p.Reference, description); err != nil {
		return nil, err
	}
	return &w, nil
}

// PendingSenderFee returns the open checkout of a sender ID's fee started in the last day, or
// nil: a second pay is given the same checkout, so one fee is rarely paid twice (and a fee
// paid twice is credited to the wallet). Open is a checkout not yet ended, or one whose last
// attempt was declined (the payer tries again on the same page); one the payer cancelled or
// left is not given again (the sandbox's, cancelled, can no longer be paid at all), and the
// next pay starts a new checkout.
func (s *Store) PendingSenderFee(ctx context.Context, accountID, senderID uuid.UUID) (*Payment, error) {
	p, err := scanPayment(s.pool.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments
		WHERE account_id = $1 AND sender_id = $2 AND purpose = 'sender_id_fee'
			AND (status = 'pending' OR status = 'abandoned' AND failure_reason = 'declined')
			AND access_code IS NOT NULL AND created_at > now() - interval '1 day'
		ORDER BY id DESC LIMIT 1`, accountID, senderID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pending sender fee: %w", err)
	}
	return &p, nil
}
