package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Email is a message for the outbox.
type Email struct {
	ID       uuid.UUID
	To       string
	Subject  string
	Text     string
	HTML     string
	Purpose  string // verification, verification_code, password_reset, …
	Attempts int
	// Lease is the claim's: the email is this worker's while its row's lease is this time.
	// Every write of its outcome checks it (another node may have taken the email since).
	Lease time.Time
}

// queueEmail adds an email to the outbox inside a transaction, so the mail exists exactly when
// what it announces (a token, a code) does.
func queueEmail(ctx context.Context, tx pgx.Tx, e Email) error {
	_, err := tx.Exec(ctx, `INSERT INTO email_outbox (id, to_address, subject, text_body, html_body, purpose)
		VALUES ($1, $2, $3, $4, $5, $6)`, NewID(), e.To, e.Subject, e.Text, e.HTML, e.Purpose)
	if err != nil {
		return fmt.Errorf("queue email: %w", err)
	}
	return nil
}

// ClaimEmails takes up to limit due emails and leases them for `lease`: another worker (on
// this node or another) will not take them until the lease ends, and if this one dies they
// come back by themselves. Times are the database's, so nodes' clocks need not agree.
func (s *Store) ClaimEmails(ctx context.Context, lease time.Duration, limit int) ([]Email, error) {
	rows, err := s.pool.Query(ctx, `
		UPDATE email_outbox o SET next_attempt_at = now() + $1::interval
		FROM (SELECT id FROM email_outbox WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now()
			ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED) due
		WHERE o.id = due.id
		RETURNING o.id, o.to_address, o.subject, o.text_body, o.html_body, o.purpose, o.attempts, o.next_attempt_at`, lease, limit)
	if err != nil {
		return nil, fmt.Errorf("claim emails: %w", err)
	}
	defer rows.Close()
	var out []Email
	for rows.Next() {
		var e Email
		if err := rows.Scan(&e.ID, &e.To, &e.Subject, &e.Text, &e.HTML, &e.Purpose, &e.Attempts, &e.Lease); err != nil {
			return nil, fmt.Errorf("claim emails: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ErrEmailLeaseLost: the email's lease ended and another worker may have taken it.
var ErrEmailLeaseLost = errors.New("the email's lease was lost")

// RenewEmail extends a claimed email's lease just before it is delivered, and returns it with
// the new lease; ErrEmailLeaseLost when the claim no longer holds it (a round that ran past
// the lease: another worker may be delivering it).
func (s *Store) RenewEmail(ctx context.Context, e Email, lease time.Duration) (Email, error) {
	err := s.pool.QueryRow(ctx, `UPDATE email_outbox SET next_attempt_at = now() + $3::interval
		WHERE id = $1 AND next_attempt_at = $2 AND sent_at IS NULL AND failed_at IS NULL RETURNING next_attempt_at`,
		e.ID, e.Lease, lease).Scan(&e.Lease)
	if errors.Is(err, pgx.ErrNoRows) {
		return e, ErrEmailLeaseLost
	}
	if err != nil {
		return e, fmt.Errorf("renew email lease: %w", err)
	}
	return e, nil
}

// EmailSent records a delivered email, while its lease holds.
func (s *Store) EmailSent(ctx context.Context, e Email) error {
	if _, err := s.pool.Exec(ctx, `UPDATE email_outbox SET sent_at = now(), attempts = attempts + 1, last_error = NULL
		WHERE id = $1 AND next_attempt_at = $2`, e.ID, e.Lease); err != nil {
		return fmt.Errorf("mark email sent: %w", err)
	}
	return nil
}

// EmailFailed records a failed attempt and tries again after `after`, unless the email was
// queued at least giveUp ago (0: never give up): then it is marked failed and never claimed
// again, and gaveUp is true. Ages are by the database's clock, like the leases.
func (s *Store) EmailFailed(ctx context.Context, e Email, cause string, after, giveUp time.Duration) (gaveUp bool, err error) {
	err = s.pool.QueryRow(ctx, `UPDATE email_outbox SET attempts = attempts + 1, last_error = $2,
			next_attempt_at = now() + $3::interval,
			failed_at = CASE WHEN $4::interval > '0' AND created_at <= now() - $4::interval THEN now() END
		WHERE id = $1 AND next_attempt_at = $5 RETURNING failed_at IS NOT NULL`, e.ID, cause, after, giveUp, e.Lease).Scan(&gaveUp)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // gone, or its lease lost (another worker has it): nothing of ours to retry
	}
	if err != nil {
		return false, fmt.Errorf("mark email failed: %w", err)
	}
	return gaveUp, nil
}

// PendingEmails counts the emails neither delivered nor given up.
func (s *Store) PendingEmails(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM email_outbox WHERE sent_at IS NULL AND failed_at IS NULL`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending emails: %w", err)
	}
	return n, nil
}
