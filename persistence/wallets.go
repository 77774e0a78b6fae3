// Wallets and their ledger: balances in cents, credits, and the transactions the API lists.

package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// NewCredit is money added to a wallet outside a payment: operator credits, bonuses.
type NewCredit struct {
	AccountID   uuid.UUID
	Cents       int64
	Type        TransactionType // topup
	Reference   string          // "" for none
	Description string
	// Idempotency, when set, completes with the credit (status 200, the ledger entry as its
	// resource), so a repeated request can never credit twice.
	Idempotency *IdempotencyKey
}

// Credit adds to a wallet with a ledger entry.
func (s *Store) Credit(ctx context.Context, c NewCredit) (WalletSnapshot, error) {
	var w WalletSnapshot
	err := pgx.BeginFunc(ctx, s.accept, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE wallets SET balance_cents = balance_cents + $2, version = version + 1, updated_at = now()
			WHERE account_id = $1 RETURNING `+snapshotColumns, c.AccountID, c.Cents).
			Scan(w.fields()...)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		var ref *string
		if c.Reference != "" {
			ref = &c.Reference
		}
		entry := NewID()
		_, err = tx.Exec(ctx, `INSERT INTO wallet_transactions (id, account_id, type, amount_cents, reference, description)
			VALUES ($1, $2, $3, $4, $5, $6)`, entry, c.AccountID, c.Type, c.Cents, ref, c.Description)
		if err != nil || c.Idempotency == nil {
			return err
		}
		return completeIdempotencyKey(ctx, tx, *c.Idempotency, StoredResponse{Status: 200, ResourceID: &entry})
	})
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrIdempotencyLost) {
		return WalletSnapshot{}, err
	}
	if err != nil {
		return WalletSnapshot{}, fmt.Errorf("credit wallet: %w", err)
	}
	return w, nil
}

// SetPricing pins an account to a tier (nil: back to volume pricing) and sets internal.
func (s *Store) SetPricing(ctx context.Context, accountID uuid.UUID, tier *string, internal bool) error {
	tag, err := s.pool.Exec(ctx, `UPDATE wallets SET pricing_tier = $2, is_internal = $3, updated_at = now() WHERE account_id = $1`,
		accountID, tier, internal)
	if err != nil {
		return fmt.Errorf("set pricing: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Wallet is the wallet as the API shows it.
type Wallet struct {
	BalanceCents    int64
	TotalSpentCents int64
	TotalSMSSent    int64
	LifetimeSMS     int64
	PricingTier     *string
	Internal        bool
}

// Wallet reads an account's wallet.
func (s *Store) Wallet(ctx context.Context, accountID uuid.UUID) (Wallet, error) {
	var w Wallet
	err := s.pool.QueryRow(ctx, `SELECT balance_cents, total_spent_cents, total_sms_sent, lifetime_sms, pricing_tier, is_internal
		FROM wallets WHERE account_id = $1`, accountID).
		Scan(&w.BalanceCents, &w.TotalSpentCents, &w.TotalSMSSent, &w.LifetimeSMS, &w.PricingTier, &w.Internal)
	if errors.Is(err, pgx.ErrNoRows) {
		return Wallet{}, ErrNotFound
	}
	if err != nil {
		return Wallet{}, fmt.Errorf("wallet: %w", err)
	}
	return w, nil
}

// WalletNow reads an account's wallet as the last committed change left it: for an actor that
// does not know whether its own change committed.
func (s *Store) WalletNow(ctx context.Context, accountID uuid.UUID) (WalletSnapshot, error) {
	var w WalletSnapshot
	err := s.pool.QueryRow(ctx, `SELECT `+snapshotColumns+` FROM wallets WHERE account_id = $1`, accountID).
		Scan(&w.AccountID, &w.BalanceCents, &w.Version, &w.LifetimeSMS)
	if errors.Is(err, pgx.ErrNoRows) {
		return WalletSnapshot{}, ErrNotFound
	}
	if err != nil {
		return WalletSnapshot{}, fmt.Errorf("wallet now: %w", err)
	}
	return w, nil
}

// WalletSnapshot is a wallet as one committed transaction left it. Version orders snapshots.
type WalletSnapshot struct {
	AccountID    uuid.UUID
	BalanceCents int64
	Version      int64
	LifetimeSMS  int64 // SMS parts billed and not refunded: the volume pricing tiers count
}

// snapshotColumns are what a statement changing a wallet returns, scanned by fields.
const snapshotColumns = `account_id, balance_cents, version, lifetime_sms`

// walletsReturning reads back the wallets an UPDATE … FROM unnest changed (qualified: the
// unnest has an account_id of its own).
const walletsReturning = ` RETURNING w.account_id, w.balance_cents, w.version, w.lifetime_sms`

// scanWallets reads the rows of walletsReturning, handing each wallet to add.
func scanWallets(rows pgx.Rows, add func(WalletSnapshot)) error {
	defer rows.Close()
	for rows.Next() {
		var w WalletSnapshot
		if err := rows.Scan(w.fields()...); err != nil {
			return err
		}
		add(w)
	}
	return rows.Err()
}

func (w *WalletSnapshot) fields() []any {
	return []any{&w.AccountID, &w.BalanceCents, &w.Version, &w.LifetimeSMS}
}

// Transaction is a ledger entry.
type Transaction struct {
	ID          uuid.UUID
	Type        TransactionType
	AmountCents int64
	SMSCount    int64
	Reference   *string
	Description string
	CreatedAt   time.Time
}

// ListTransactions returns a page of the account's ledger, newest first (txType "" = all).
func (s *Store) ListTransactions(ctx context.Context, accountID uuid.UUID, txType TransactionType, p Page) ([]Transaction, int64, error) {
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM wallet_transactions WHERE account_id = $1 AND ($2 = '' OR type = $2)`,
		accountID, txType).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count transactions: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, type, amount_cents, sms_count, reference, description, created_at
		FROM wallet_transactions WHERE account_id = $1 AND ($2 = '' OR type = $2) AND ($5::uuid IS NULL OR id < $5)
		ORDER BY account_id, id DESC LIMIT $3 OFFSET $4`, accountID, txType, p.Size, p.offset(), p.After)
	if err != nil {
		return nil, 0, fmt.Errorf("list transactions: %w", err)
	}
	defer rows.Close()
	out := make([]Transaction, 0, p.Size)
	for rows.Next() {
		var t Transaction
		if err := rows.Scan(&t.ID, &t.Type, &t.AmountCents, &t.SMSCount, &t.Reference, &t.Description, &t.CreatedAt); err != nil {
			return nil, 0, fmt.Errorf("list transactions: %w", err)
		}
		out = append(out, t)
	}
	return out, total, rows.Err()
}

// TransactionByID returns one of the account's ledger entries.
func (s *Store) TransactionByID(ctx context.Context, accountID, id uuid.UUID) (Transaction, error) {
	var t Transaction
	err := s.pool.QueryRow(ctx, `SELECT id, type, amount_cents, sms_count, reference, description, created_at
		FROM wallet_transactions WHERE account_id = $1 AND id = $2`, accountID, id).
		Scan(&t.ID, &t.Type, &t.AmountCents, &t.SMSCount, &t.Reference, &t.Description, &t.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Transaction{}, ErrNotFound
	}
	if err != nil {
		return Transaction{}, fmt.Errorf("transaction by id: %w", err)
	}
	return t, nil
}
