// Notifications: in-app messages to an account, written with what caused them.

package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// NewNotification is an in-app notification written in the same transaction as what caused it.
type NewNotification struct {
	Type, Title, Message string
}

// Notification is an in-app notification.
type Notification struct {
	ID        uuid.UUID
	Type      string
	Title     string
	Message   string
	Read      bool
	CreatedAt time.Time
}

const notificationColumns = `id, type, title, message, is_read, created_at`

func scanNotification(row pgx.Row) (Notification, error) {
	var n Notification
	err := row.Scan(&n.ID, &n.Type, &n.Title, &n.Message, &n.Read, &n.CreatedAt)
	return n, err
}

// Notifications returns the account's most recent notifications, newest first.
func (s *Store) Notifications(ctx context.Context, accountID uuid.UUID, limit int) ([]Notification, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+notificationColumns+` FROM notifications
		WHERE account_id = $1 ORDER BY account_id, id DESC LIMIT $2`, accountID, limit)
	if err != nil {
		return nil, fmt.Errorf("notifications: %w", err)
	}
	defer rows.Close()
	out := []Notification{}
	for rows.Next() {
		n, err := scanNotification(rows)
		if err != nil {
			return nil, fmt.Errorf("notifications: %w", err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// UnreadCount counts the account's unread notifications.
func (s *Store) UnreadCount(ctx context.Context, accountID uuid.UUID) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM notifications WHERE account_id = $1 AND NOT is_read`, accountID).Scan(&n); err != nil {
		return 0, fmt.Errorf("unread count: %w", err)
	}
	return n, nil
}

// MarkRead marks one of the account's notifications read and returns it.
func (s *Store) MarkRead(ctx context.Context, accountID, id uuid.UUID) (Notification, error) {
	n, err := scanNotification(s.pool.QueryRow(ctx, `UPDATE notifications SET is_read = true
		WHERE id = $1 AND account_id = $2 RETURNING `+notificationColumns, id, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Notification{}, ErrNotFound
	}
	if err != nil {
		return Notification{}, fmt.Errorf("mark read: %w", err)
	}
	return n, nil
}

// MarkAllRead marks every notification of the account read and says how many changed.
func (s *Store) MarkAllRead(ctx context.Context, accountID uuid.UUID) (int64, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE notifications SET is_read = true WHERE account_id = $1 AND NOT is_read`, accountID)
	if err != nil {
		return 0, fmt.Errorf("mark all read: %w", err)
	}
	return tag.RowsAffected(), nil
}

// AddNotification records a notification for one account.
func (s *Store) AddNotification(ctx context.Context, accountID uuid.UUID, n NewNotification) error {
	if err := addNotification(ctx, s.pool, accountID, n); err != nil {
		return fmt.Errorf("add notification: %w", err)
	}
	return nil
}

// addNotification records a notification, in a transaction when db is one: with the change
// it announces.
func addNotification(ctx context.Context, db execer, accountID uuid.UUID, n NewNotification) error {
	_, err := db.Exec(ctx, `INSERT INTO notifications (id, account_id, type, title, message) VALUES ($1, $2, $3, $4, $5)`,
		NewID(), accountID, n.Type, n.Title, n.Message)
	return err
}

// Broadcast records a notification for the given accounts, or for every account when ids is
// empty; it returns how many were written. Unknown ids are skipped.
func (s *Store) Broadcast(ctx context.Context, ids []uuid.UUID, n NewNotification) (int64, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO notifications (id, account_id, type, title, message)
		SELECT tuma_uuidv7(), a.id, $2, $3, $4 FROM accounts a
		WHERE coalesce(cardinality($1::uuid[]), 0) = 0 OR a.id = ANY($1)`, ids, n.Type, n.Title, n.Message)
	if err != nil {
		return 0, fmt.Errorf("broadcast notification: %w", err)
	}
	return tag.RowsAffected(), nil
}
