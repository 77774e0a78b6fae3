package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Account is a tenant: one customer with its credentials and profile.
type Account struct {
	ID           uuid.UUID
	Email        string
	PasswordHash string
	FullName     string
	CompanyName  string
	Phone        string
	BusinessType string
	Country      string
	Status       AccountStatus
	Verified     bool
	CreatedAt    time.Time
	BalanceCents int64       // from the wallet, for the user object
	TokenVersion int64       // access tokens must carry it; a new password bumps it
	OptOutText   string      // appended to its promotional messages
	Quiet        *QuietHours // when its promotional messages wait; nil: never
}

// Access is what authenticating a request needs to know about an account: whether it may use
// the API, and which access tokens are still good.
type Access struct {
	Status       AccountStatus
	TokenVersion int64
}

// Active reports whether the account may use the API.
func (a Account) Active() bool { return a.Status == StatusActive }

// NewAccount is what registration stores.
type NewAccount struct {
	Email        string // already lower-cased and validated
	PasswordHash string
	FullName     string
	CompanyName  string
	Phone        string
	BusinessType string
	Country      string
	APIKeyHash   []byte
	APIKeyPrefix string
	Verification *NewLink // the verification link to store and mail with the account
}

const accountColumns = `a.id, a.email, a.password_hash, a.full_name, a.company_name, a.phone, a.business_type,
	a.country, a.status, a.is_verified, a.created_at, coalesce(w.balance_cents, 0), a.token_version, a.opt_out_text,
	a.quiet_start, a.quiet_end`

func scanAccount(row pgx.Row) (Account, error) {
	var (
		a          Account
		start, end *int16
	)
	err := row.Scan(&a.ID, &a.Email, &a.PasswordHash, &a.FullName, &a.CompanyName, &a.Phone,
		&a.BusinessType, &a.Country, &a.Status, &a.Verified, &a.CreatedAt, &a.BalanceCents, &a.TokenVersion, &a.OptOutText,
		&start, &end)
	if errors.Is(err, pgx.ErrNoRows) {
		return Account{}, ErrNotFound
	}
	a.Quiet = quietHours(start, end)
	return a, err
}

// CreateAccount stores a new account with its empty wallet and first API key, atomically.
// A duplicate email (in any case) is ErrEmailTaken.
func (s *Store) CreateAccount(ctx context.Context, na NewAccount) (Account, error) {
	id := NewID()
	var (
		a            Account
		qstart, qend *int16
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			INSERT INTO accounts (id, email, password_hash, full_name, company_name, phone, business_type, country)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			RETURNING created_at, opt_out_text, quiet_start, quiet_end`,
			id, na.Email, na.PasswordHash, na.FullName, na.CompanyName, na.Phone, na.BusinessType, na.Country,
		).Scan(&a.CreatedAt, &a.OptOutText, &qstart, &qend)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO wallets (account_id) VALUES ($1)`, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO message_counts (account_id) VALUES ($1)`, id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO api_keys (id, account_id, key_hash, prefix) VALUES ($1, $2, $3, $4)`,
			NewID(), id, na.APIKeyHash, na.APIKeyPrefix)
		if err != nil || na.Verification == nil {
			return err
		}
		return addLink(ctx, tx, id, *na.Verification)
	})
	if isUniqueViolation(err, "accounts_email_key") {
		return Account{}, ErrEmailTaken
	}
	if err != nil {
		return Account{}, fmt.Errorf("create account: %w", err)
	}
	a.ID, a.Email, a.PasswordHash = id, na.Email, na.PasswordHash
	a.FullName, a.CompanyName, a.Phone = na.FullName, na.CompanyName, na.Phone
	a.BusinessType, a.Country = na.BusinessType, na.Country
	a.Status, a.Quiet = StatusActive, quietHours(qstart, qend)
	return a, nil
}

// AccountByID returns the account with its wallet balance.
func (s *Store) AccountByID(ctx context.Context, id uuid.UUID) (Account, error) {
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountColumns+`
		FROM accounts a LEFT JOIN wallets w ON w.account_id = a.id WHERE a.id = $1`, id))
	if err != nil && !errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("account by id: %w", err)
	}
	return a, err
}

// AccountByEmail looks an account up by its (lower-case) email.
func (s *Store) AccountByEmail(ctx context.Context, email string) (Account, error) {
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountColumns+`
		FROM accounts a LEFT JOIN wallets w ON w.account_id = a.id WHERE a.email = $1`, email))
	if err != nil && !errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("account by email: %w", err)
	}
	return a, err
}

// AccountByKeyHash resolves a live API key (by its SHA-256) to its account id and access.
func (s *Store) AccountByKeyHash(ctx context.Context, keyHash []byte) (uuid.UUID, Access, error) {
	var (
		id  uuid.UUID
		acc Access
	)
	err := s.pool.QueryRow(ctx, `
		SELECT a.id, a.status, a.token_version FROM api_keys k JOIN accounts a ON a.id = k.account_id
		WHERE k.key_hash = $1 AND k.revoked_at IS NULL`, keyHash).Scan(&id, &acc.Status, &acc.TokenVersion)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, Access{}, ErrNotFound
	}
	if err != nil {
		return uuid.Nil, Access{}, fmt.Errorf("account by key hash: %w", err)
	}
	return id, acc, nil
}

// AccountAccess returns an account's status and token version.
func (s *Store) AccountAccess(ctx context.Context, id uuid.UUID) (Access, error) {
	var acc Access
	err := s.pool.QueryRow(ctx, `SELECT status, token_version FROM accounts WHERE id = $1`, id).Scan(&acc.Status, &acc.TokenVersion)
	if errors.Is(err, pgx.ErrNoRows) {
		return Access{}, ErrNotFound
	}
	if err != nil {
		return Access{}, fmt.Errorf("account access: %w", err)
	}
	return acc, nil
}

// ProfileUpdate holds the profile fields to change; nil fields stay as they are.
type ProfileUpdate struct {
	FullName     *string
	CompanyName  *string
	Phone        *string
	BusinessType *string
	Country      *string
	OptOutText   *string
	// SetQuiet: change the quiet hours to Quiet (nil turns them off).
	SetQuiet bool
	Quiet    *QuietHours
}

// UpdateProfile changes the given profile fields and returns the updated account.
func (s *Store) UpdateProfile(ctx context.Context, id uuid.UUID, u ProfileUpdate) (Account, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE accounts SET
			full_name     = coalesce($2, full_name),
			company_name  = coalesce($3, company_name),
			phone         = coalesce($4, phone),
			business_type = coalesce($5, business_type),
			country       = coalesce($6, country),
			opt_out_text  = coalesce($7, opt_out_text),
			quiet_start   = CASE WHEN $8 THEN $9::smallint ELSE quiet_start END,
			quiet_end     = CASE WHEN $8 THEN $10::smallint ELSE quiet_end END,
			updated_at    = now()
		WHERE id = $1`, id, u.FullName, u.CompanyName, u.Phone, u.BusinessType, u.Country, u.OptOutText,
		u.SetQuiet, quietStart(u.Quiet), quietEnd(u.Quiet))
	if err != nil {
		return Account{}, fmt.Errorf("update profile: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return Account{}, ErrNotFound
	}
	return s.AccountByID(ctx, id)
}

// SetPassword replaces the password hash, bumps the token version and revokes every refresh
// token of the account, so sessions started with the old password end; it returns the
// account's access to publish to the caches.
func (s *Store) SetPassword(ctx context.Context, id uuid.UUID, hash string) (Access, error) {
	var acc Access
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if acc, err = setPassword(ctx, tx, id, hash); err != nil {
			return err
		}
		return revokeAccountTokens(ctx, tx, id)
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("set password: %w", err)
	}
	return acc, err
}

// setPassword stores a new password hash, bumps the token version and ends the account's
// dashboard sessions.
func setPassword(ctx context.Context, tx pgx.Tx, id uuid.UUID, hash string) (Access, error) {
	var acc Access
	err := tx.QueryRow(ctx, `UPDATE accounts SET password_hash = $2, token_version = token_version + 1, updated_at = now()
		WHERE id = $1 RETURNING status, token_version`, id, hash).Scan(&acc.Status, &acc.TokenVersion)
	if errors.Is(err, pgx.ErrNoRows) {
		return Access{}, ErrNotFound
	}
	if err != nil {
		return Access{}, err
	}
	return acc, deleteAccountWebSessions(ctx, tx, id)
}

// RotateAPIKey revokes the account's live key and stores a new one, returning the old key's
// hash so caches can drop it.
func (s *Store) RotateAPIKey(ctx context.Context, id uuid.UUID, newHash []byte, prefix string) (oldHash []byte, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Lock the account row so two concurrent rotations serialise.
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, id).Scan(&one); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNotFound
			}
			return err
		}
		err := tx.QueryRow(ctx, `UPDATE api_keys SET revoked_at = now()
			WHERE account_id = $1 AND revoked_at IS NULL RETURNING key_hash`, id).Scan(&oldHash)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO api_keys (id, account_id, key_hash, prefix) VALUES ($1, $2, $3, $4)`,
			NewID(), id, newHash, prefix)
		return err
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("rotate api key: %w", err)
	}
	return oldHash, err
}

// LiveKeyHash returns the hash of the account's current API key (nil when it has none).
func (s *Store) LiveKeyHash(ctx context.Context, id uuid.UUID) ([]byte, error) {
	var h []byte
	err := s.pool.QueryRow(ctx, `SELECT key_hash FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL`, id).Scan(&h)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("live key hash: %w", err)
	}
	return h, nil
}

// APIKey is what is kept of an account's key besides its hash: the first characters, to
// recognise it by, and when it was made. The key itself is never stored.
type APIKey struct {
	ID        uuid.UUID
	Prefix    string
	CreatedAt time.Time
}

// LiveAPIKey returns the account's current API key's prefix and date; ErrNotFound when it
// has none.
func (s *Store) LiveAPIKey(ctx context.Context, accountID uuid.UUID) (APIKey, error) {
	var k APIKey
	err := s.pool.QueryRow(ctx, `SELECT id, prefix, created_at FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL`,
		accountID).Scan(&k.ID, &k.Prefix, &k.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return APIKey{}, ErrNotFound
	}
	if err != nil {
		return APIKey{}, fmt.Errorf("live api key: %w", err)
	}
	return k, nil
}

// SetStatus suspends or reactivates an account. Suspension also ends its sessions.
func (s *Store) SetStatus(ctx context.Context, id uuid.UUID, status AccountStatus) (Account, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE accounts SET status = $2, updated_at = now() WHERE id = $1`, id, status)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		if status == StatusSuspended {
			return revokeAccountTokens(ctx, tx, id)
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return Account{}, err
	}
	if err != nil {
		return Account{}, fmt.Errorf("set account status: %w", err)
	}
	return s.AccountByID(ctx, id)
}

// quietHours reads an account's quiet hours columns (both null: none).
func quietHours(start, end *int16) *QuietHours {
	if start == nil || end == nil {
		return nil
	}
	return &QuietHours{Start: int(*start), End: int(*end)}
}

func quietStart(q *QuietHours) *int16 {
	if q == nil {
		return nil
	}
	v := int16(q.Start)
	return &v
}

func quietEnd(q *QuietHours) *int16 {
	if q == nil {
		return nil
	}
	v := int16(q.End)
	return &v
}
