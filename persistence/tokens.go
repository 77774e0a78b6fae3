package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// CreateRefreshToken stores the hash of a new refresh token, starting a new family when
// familyID is uuid.Nil, for an account whose token version is still version (the one its
// password was checked against): ErrTokenInvalid when the password has changed since, and
// the token would outlive the change. It returns the family id.
func (s *Store) CreateRefreshToken(ctx context.Context, accountID, familyID uuid.UUID, hash []byte, expiresAt time.Time, version int64) (uuid.UUID, error) {
	if familyID == uuid.Nil {
		familyID = NewID()
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO refresh_tokens (id, account_id, family_id, token_hash, expires_at, token_version)
		SELECT $1, $2, $3, $4, $5, $6 FROM accounts WHERE id = $2 AND token_version = $6`, NewID(), accountID, familyID, hash, expiresAt, version)
	if err != nil {
		return uuid.Nil, fmt.Errorf("create refresh token: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return uuid.Nil, ErrTokenInvalid
	}
	return familyID, nil
}

// RotateRefreshToken spends the refresh token with oldHash and stores newHash in its family.
//
// A token that is unknown, expired or revoked is ErrTokenInvalid. A token that was already
// spent means it leaked: the whole family is revoked (committed) and ErrTokenReused returned.
func (s *Store) RotateRefreshToken(ctx context.Context, oldHash, newHash []byte, now, expiresAt time.Time) (accountID uuid.UUID, err error) {
	var reused bool
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			familyID          uuid.UUID
			exp               time.Time
			usedAt, revokedAt *time.Time
			version           *int64
			current           int64
		)
		// FOR UPDATE: two concurrent refreshes with one token serialise; the second sees it used.
		err := tx.QueryRow(ctx, `SELECT t.account_id, t.family_id, t.expires_at, t.used_at, t.revoked_at, t.token_version, a.token_version
			FROM refresh_tokens t JOIN accounts a ON a.id = t.account_id WHERE t.token_hash = $1 FOR UPDATE OF t`, oldHash).
			Scan(&accountID, &familyID, &exp, &usedAt, &revokedAt, &version, &current)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrTokenInvalid
		}
		if err != nil {
			return err
		}
		switch {
		case revokedAt != nil:
			return ErrTokenInvalid
		case usedAt != nil:
			reused = true
			_, err := tx.Exec(ctx, `UPDATE refresh_tokens SET revoked_at = $2
				WHERE family_id = $1 AND revoked_at IS NULL`, familyID, now)
			return err // commit the revocation, then report the reuse
		case !now.Before(exp):
			return ErrTokenInvalid
		case version != nil && *version != current:
			// Issued before the password last changed (by a sign-in that overlapped the change,
			// which revoked only the tokens it found): as an access token of that version is.
			return ErrTokenInvalid
		}
		if _, err := tx.Exec(ctx, `UPDATE refresh_tokens SET used_at = $2 WHERE token_hash = $1`, oldHash, now); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO refresh_tokens (id, account_id, family_id, token_hash, expires_at, token_version)
			VALUES ($1, $2, $3, $4, $5, $6)`, NewID(), accountID, familyID, newHash, expiresAt, current)
		return err
	})
	switch {
	case reused && err == nil:
		return uuid.Nil, ErrTokenReused
	case errors.Is(err, ErrTokenInvalid):
		return uuid.Nil, err
	case err != nil:
		return uuid.Nil, fmt.Errorf("rotate refresh token: %w", err)
	}
	return accountID, nil
}

// RevokeRefreshTokens ends every session of the account.
func (s *Store) RevokeRefreshTokens(ctx context.Context, accountID uuid.UUID) error {
	if err := revokeAccountTokens(ctx, s.pool, accountID); err != nil {
		return fmt.Errorf("revoke refresh tokens: %w", err)
	}
	return nil
}

// execer is what both a pool and a transaction offer.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func revokeAccountTokens(ctx context.Context, db execer, accountID uuid.UUID) error {
	_, err := db.Exec(ctx, `UPDATE refresh_tokens SET revoked_at = now()
		WHERE account_id = $1 AND used_at IS NULL AND revoked_at IS NULL`, accountID)
	return err
}
