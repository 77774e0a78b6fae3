package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SandboxTx is a transaction in the books of the sandbox payment provider.
type SandboxTx struct {
	AccessCode  string
	Reference   string
	Amount      int64 // subunits
	Currency    string
	Email       string
	CallbackURL string
	Metadata    json.RawMessage
	Status      string // ongoing | success | abandoned
	PaidAt      *time.Time
	CreatedAt   time.Time
	HookAttempt int // webhook deliveries tried so far (claims only)
}

// ErrDuplicateReference is a sandbox transaction whose reference is already taken.
var ErrDuplicateReference = errors.New("duplicate transaction reference")

const sandboxColumns = `access_code, reference, amount, currency, email, callback_url, metadata, status, paid_at, created_at, hook_attempts`

func scanSandbox(row pgx.Row) (SandboxTx, error) {
	var t SandboxTx
	err := row.Scan(&t.AccessCode, &t.Reference, &t.Amount, &t.Currency, &t.Email, &t.CallbackURL, &t.Metadata,
		&t.Status, &t.PaidAt, &t.CreatedAt, &t.HookAttempt)
	return t, err
}

// SandboxCreate opens a sandbox transaction. A reused reference is ErrDuplicateReference, as
// at a real provider.
func (s *Store) SandboxCreate(ctx context.Context, t SandboxTx) (SandboxTx, error) {
	if len(t.Metadata) == 0 {
		t.Metadata = json.RawMessage(`{}`)
	}
	out, err := scanSandbox(s.pool.QueryRow(ctx, `INSERT INTO sandbox_transactions
		(access_code, reference, amount, currency, email, callback_url, metadata) VALUES ($1, $2, $3, $4, $5, $6, $7)
		RETURNING `+sandboxColumns, t.AccessCode, t.Reference, t.Amount, t.Currency, t.Email, t.CallbackURL, []byte(t.Metadata)))
	if isUniqueViolation(err, "sandbox_transactions_reference_key") {
		return SandboxTx{}, ErrDuplicateReference
	}
	if err != nil {
		return SandboxTx{}, fmt.Errorf("sandbox create: %w", err)
	}
	return out, nil
}

// SandboxByAccessCode finds a sandbox transaction by its checkout code.
func (s *Store) SandboxByAccessCode(ctx context.Context, code string) (SandboxTx, error) {
	return s.sandboxBy(ctx, "access_code", code)
}

// SandboxByReference finds a sandbox transaction by the merchant's reference.
func (s *Store) SandboxByReference(ctx context.Context, reference string) (SandboxTx, error) {
	return s.sandboxBy(ctx, "reference", reference)
}

func (s *Store) sandboxBy(ctx context.Context, column, v string) (SandboxTx, error) {
	t, err := scanSandbox(s.pool.QueryRow(ctx, `SELECT `+sandboxColumns+` FROM sandbox_transactions WHERE `+column+` = $1`, v))
	if errors.Is(err, pgx.ErrNoRows) {
		return SandboxTx{}, ErrNotFound
	}
	if err != nil {
		return SandboxTx{}, fmt.Errorf("sandbox transaction: %w", err)
	}
	return t, nil
}

// SandboxSettle ends an ongoing sandbox transaction as success (owing a webhook) or
// abandoned. Settling one that has already ended changes nothing and returns it as it is.
func (s *Store) SandboxSettle(ctx context.Context, code, status string, at time.Time) (SandboxTx, error) {
	if status != "success" && status != "abandoned" {
		return SandboxTx{}, fmt.Errorf("sandbox settle: status %q", status)
	}
	t, err := scanSandbox(s.pool.QueryRow(ctx, `UPDATE sandbox_transactions SET status = $2,
			paid_at = CASE WHEN $2 = 'success' THEN $3::timestamptz END,
			hook_due_at = CASE WHEN $2 = 'success' THEN now() END
		WHERE access_code = $1 AND status = 'ongoing' RETURNING `+sandboxColumns, code, status, at))
	if errors.Is(err, pgx.ErrNoRows) {
		return s.SandboxByAccessCode(ctx, code)
	}
	if err != nil {
		return SandboxTx{}, fmt.Errorf("sandbox settle: %w", err)
	}
	return t, nil
}

// ClaimSandboxHooks takes up to limit webhooks that are due, leasing them for `lease` (as the
// email outbox does).
func (s *Store) ClaimSandboxHooks(ctx context.Context, lease time.Duration, limit int) ([]SandboxTx, error) {
	rows, err := s.pool.Query(ctx, `UPDATE sandbox_transactions t SET hook_due_at = now() + $1::interval
		FROM (SELECT access_code FROM sandbox_transactions WHERE hook_due_at <= now()
			ORDER BY hook_due_at LIMIT $2 FOR UPDATE SKIP LOCKED) due
		WHERE t.access_code = due.access_code RETURNING t.access_code, t.reference, t.amount, t.currency, t.email, t.callback_url, t.metadata, t.status,
			t.paid_at, t.created_at, t.hook_attempts`, lease, limit)
	if err != nil {
		return nil, fmt.Errorf("claim sandbox webhooks: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SandboxTx, error) { return scanSandbox(r) })
	if err != nil {
		return nil, fmt.Errorf("claim sandbox webhooks: %w", err)
	}
	return out, nil
}

// SandboxHookDone records a webhook delivered (the merchant answered 200).
func (s *Store) SandboxHookDone(ctx context.Context, code string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE sandbox_transactions SET hook_due_at = NULL, hook_attempts = hook_attempts + 1,
		hook_last_error = NULL WHERE access_code = $1`, code); err != nil {
		return fmt.Errorf("sandbox webhook done: %w", err)
	}
	return nil
}

// SandboxHookFailed records a failed delivery; the next is due after `after`, unless the
// attempts are used up.
func (s *Store) SandboxHookFailed(ctx context.Context, code, cause string, after time.Duration, giveUp bool) error {
	if _, err := s.pool.Exec(ctx, `UPDATE sandbox_transactions SET hook_attempts = hook_attempts + 1, hook_last_error = $2,
		hook_due_at = CASE WHEN $4 THEN NULL ELSE now() + $3::interval END WHERE access_code = $1`,
		code, cause, after, giveUp); err != nil {
		return fmt.Errorf("sandbox webhook failed: %w", err)
	}
	return nil
}
