// Dashboard sessions: a signed-in browser, kept in PostgreSQL so every node sees it and a
// sign-out or a new password ends it everywhere.

package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// WebSession is one signed-in browser. ID is the hash of the cookie's token.
type WebSession struct {
	ID           []byte
	AccountID    uuid.UUID
	CSRF         []byte // the secret every state-changing request must carry
	TokenVersion int64  // the account's at sign-in; a newer one ends the session
	CreatedAt    time.Time
	LastSeenAt   time.Time
	UserAgent    string
	IP           string
}

// CreateWebSession stores a new session, and drops the account's sessions that expired by
// the bounds given (idle since before idleBefore, or created before createdBefore), so the
// table holds live sessions and a little more.
func (s *Store) CreateWebSession(ctx context.Context, ws WebSession, idleBefore, createdBefore time.Time) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM web_sessions WHERE account_id = $1 AND (last_seen_at < $2 OR created_at < $3)`,
			ws.AccountID, idleBefore, createdBefore); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO web_sessions (id, account_id, csrf, token_version, created_at, last_seen_at, user_agent, ip)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			ws.ID, ws.AccountID, ws.CSRF, ws.TokenVersion, ws.CreatedAt, ws.LastSeenAt, ws.UserAgent, ws.IP)
		return err
	})
	if err != nil {
		return fmt.Errorf("create web session: %w", err)
	}
	return nil
}

// WebSessionByID returns a session by the hash of its token (ErrNotFound when there is none).
func (s *Store) WebSessionByID(ctx context.Context, id []byte) (WebSession, error) {
	var ws WebSession
	err := s.pool.QueryRow(ctx, `SELECT id, account_id, csrf, token_version, created_at, last_seen_at, user_agent, ip
		FROM web_sessions WHERE id = $1`, id).
		Scan(&ws.ID, &ws.AccountID, &ws.CSRF, &ws.TokenVersion, &ws.CreatedAt, &ws.LastSeenAt, &ws.UserAgent, &ws.IP)
	if errors.Is(err, pgx.ErrNoRows) {
		return WebSession{}, ErrNotFound
	}
	if err != nil {
		return WebSession{}, fmt.Errorf("web session: %w", err)
	}
	return ws, nil
}

// TouchWebSession records that the session was used at at.
func (s *Store) TouchWebSession(ctx context.Context, id []byte, at time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE web_sessions SET last_seen_at = $2 WHERE id = $1 AND last_seen_at < $2`, id, at); err != nil {
		return fmt.Errorf("touch web session: %w", err)
	}
	return nil
}

// DeleteWebSession ends one session (signing out; a session found expired).
func (s *Store) DeleteWebSession(ctx context.Context, id []byte) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM web_sessions WHERE id = $1`, id); err != nil {
		return fmt.Errorf("delete web session: %w", err)
	}
	return nil
}

// deleteAccountWebSessions ends every session of the account (a new password).
func deleteAccountWebSessions(ctx context.Context, db execer, accountID uuid.UUID) error {
	_, err := db.Exec(ctx, `DELETE FROM web_sessions WHERE account_id = $1`, accountID)
	return err
}
