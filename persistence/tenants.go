// Tenants: what a tenant actor loads about its account, and the senders it may use.

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
	PricingTier   *string // operator override
	Internal      bool
	DefaultSender *Sender
	// LowBalanceAlerted: the account was told its balance is low and has not recovered since.
	LowBalanceAlerted bool
	Suppressed        []uint32    // the account's suppressed numbers (NSNs), sorted
	OptOutText        string      // appended to its promotional messages
	Quiet             *QuietHours // when its promotional messages wait; nil: never
}

// TenantState loads an account's wallet, pricing and default sender.
func (s *Store) TenantState(ctx context.Context, id uuid.UUID) (TenantState, error) {
	st := TenantState{AccountID: id, Wallet: WalletSnapshot{AccountID: id}}
	var (
		sid             *uuid.UUID
		sname, snetwork *string
		qstart, qend    *int16
	)
	err := s.pool.QueryRow(ctx, `
		SELECT a.company_name, w.balance_cents, w.version, w.lifetime_sms, w.pricing_tier, w.is_internal,
			w.low_balance_alerted, d.id, d.name, d.network, a.opt_out_text, a.quiet_start, a.quiet_end
		FROM accounts a JOIN wallets w ON w.account_id = a.id
		LEFT JOIN sender_ids d ON d.account_id = a.id AND d.is_default AND d.status = 'approved' AND d.is_active
		WHERE a.id = $1`, id).Scan(&st.CompanyName, &st.Wallet.BalanceCents, &st.Wallet.Version, &st.Wallet.LifetimeSMS,
		&st.PricingTier, &st.Internal, &st.LowBalanceAlerted, &sid, &sname, &snetwork, &st.OptOutText, &qstart, &qend)
	if errors.Is(err, pgx.ErrNoRows) {
		return TenantState{}, ErrNotFound
	}
	if err != nil {
		return TenantState{}, fmt.Errorf("tenant state: %w", err)
	}
	st.Quiet = quietHours(qstart, qend)
	if sid != nil {
		st.DefaultSender = &Sender{ID: *sid, Name: *sname, Network: *snetwork}
	}
	if st.Suppressed, err = s.SuppressedNumbers(ctx, id); err != nil {
		return TenantState{}, fmt.Errorf("tenant state: %w", err)
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
