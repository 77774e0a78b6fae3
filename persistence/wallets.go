package persistence

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
)

// Sender is an approved, active sender ID of an account.
type Sender struct {
	ID      uuid.UUID
	Name    string
	Network string // safaricom | airtel | telkom | all
}

// Covers reports whether the sender is registered on network.
func (s Sender) Covers(n carriers.Network) bool { return s.Network == "all" || s.Network == n.String() }

// TenantState is what a tenant actor loads when it starts.
type TenantState struct {
	AccountID     uuid.UUID
	CompanyName   string
	Wallet        WalletSnapshot
	LifetimeSMS   int64
	PricingTier   *string // operator override
	Internal      bool
	DefaultSender *Sender
	// LowBalanceAlerted: the account was told its balance is low and has not recovered since.
	LowBalanceAlerted bool
}

// TenantState loads an account's wallet, pricing and default sender.
func (s *Store) TenantState(ctx context.Context, id uuid.UUID) (TenantState, error) {
	st := TenantState{AccountID: id, Wallet: WalletSnapshot{AccountID: id}}
	var (
		sid             *uuid.UUID
		sname, snetwork *string
	)
	err := s.pool.QueryRow(ctx, `
		SELECT a.company_name, w.balance_cents, w.version, w.lifetime_sms, w.pricing_tier, w.is_internal,
			w.low_balance_alerted, d.id, d.name, d.network
		FROM accounts a JOIN wallets w ON w.account_id = a.id
		LEFT JOIN sender_ids d ON d.account_id = a.id AND d.is_default AND d.status = 'approved' AND d.is_active
		WHERE a.id = $1`, id).Scan(&st.CompanyName, &st.Wallet.BalanceCents, &st.Wallet.Version, &st.LifetimeSMS,
		&st.PricingTier, &st.Internal, &st.LowBalanceAlerted, &sid, &sname, &snetwork)
	if errors.Is(err, pgx.ErrNoRows) {
		return TenantState{}, ErrNotFound
	}
	if err != nil {
		return TenantState{}, fmt.Errorf("tenant state: %w", err)
	}
	if sid != nil {
		st.DefaultSender = &Sender{ID: *sid, Name: *sname, Network: *snetwork}
	}
	return st, nil
}

// ApprovedSender finds an approved, active sender of the account by id or by name.
func (s *Store) ApprovedSender(ctx context.Context, accountID uuid.UUID, idOrName string) (Sender, error) {
	var snd Sender
	id, idErr := uuid.Parse(idOrName)
	var err error
	if idErr == nil {
		err = s.pool.QueryRow(ctx, `SELECT id, name, network FROM sender_ids
			WHERE account_id = $1 AND id = $2 AND status = 'approved' AND is_active`, accountID, id).
			Scan(&snd.ID, &snd.Name, &snd.Network)
	} else {
		err = s.pool.QueryRow(ctx, `SELECT id, name, network FROM sender_ids
			WHERE account_id = $1 AND name = $2 AND status = 'approved' AND is_active
			ORDER BY (network = 'all') DESC, created_at LIMIT 1`, accountID, idOrName).
			Scan(&snd.ID, &snd.Name, &snd.Network)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return Sender{}, ErrNotFound
	}
	if err != nil {
		return Sender{}, fmt.Errorf("approved sender: %w", err)
	}
	return snd, nil
}

// NewCredit is money added to a wallet outside a payment: operator credits, bonuses.
type NewCredit struct {
	AccountID   uuid.UUID
	Cents       int64
	Type        string // topup
	Reference   string // "" for none
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
			WHERE account_id = $1 RETURNING account_id, balance_cents, version`, c.AccountID, c.Cents).
			Scan(&w.AccountID, &w.BalanceCents, &w.Version)
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
