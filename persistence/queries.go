package persistence

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
)

// Page selects a page of a list (1-based).
type Page struct {
	Number, Size int
}

func (p Page) offset() int { return (p.Number - 1) * p.Size }

// Message is a stored message as the API shows it.
type Message struct {
	ID, JobID         uuid.UUID
	AccountID         uuid.UUID
	CampaignID        *uuid.UUID
	Recipient         string
	Network           carriers.Network
	Sender            string
	Text              string
	Parts             int
	Encoding          carriers.Encoding
	CostCents         int64
	Status            string
	ProviderStatus    string
	ProviderMessageID *string
	Source            string
	CreatedAt         time.Time
	SentAt            *time.Time
	DeliveredAt       *time.Time
	FailedAt          *time.Time
}

const messageColumns = `m.id, m.job_id, m.account_id, m.campaign_id, m.recipient, m.network, m.sender,
	coalesce(m.body, CASE WHEN m.prefixed THEN j.shared_prefix ELSE '' END || j.message),
	m.parts, m.encoding, m.cost_cents, m.status, m.provider_status, m.provider_message_id, j.source,
	m.created_at, m.sent_at, m.delivered_at, m.failed_at`

func scanMessage(row pgx.Row) (Message, error) {
	var (
		m                        Message
		network, parts, encoding int16
		cost                     int32
	)
	err := row.Scan(&m.ID, &m.JobID, &m.AccountID, &m.CampaignID, &m.Recipient, &network, &m.Sender, &m.Text,
		&parts, &encoding, &cost, &m.Status, &m.ProviderStatus, &m.ProviderMessageID, &m.Source,
		&m.CreatedAt, &m.SentAt, &m.DeliveredAt, &m.FailedAt)
	m.Network, m.Parts, m.Encoding, m.CostCents = carriers.Network(network), int(parts), carriers.Encoding(encoding), int64(cost)
	return m, err
}

// MessageFilter narrows a message list; zero fields do not filter.
type MessageFilter struct {
	Status     string
	JobID      *uuid.UUID
	CampaignID *uuid.UUID
}

// ListMessages returns a page of the account's messages, newest first, and the total.
func (s *Store) ListMessages(ctx context.Context, accountID uuid.UUID, f MessageFilter, p Page) ([]Message, int64, error) {
	where := []string{"m.account_id = $1"}
	args := []any{accountID}
	if f.Status != "" {
		args = append(args, f.Status)
		where = append(where, fmt.Sprintf("m.status = $%d", len(args)))
	}
	if f.JobID != nil {
		args = append(args, *f.JobID)
		where = append(where, fmt.Sprintf("m.job_id = $%d", len(args)))
	}
	if f.CampaignID != nil {
		args = append(args, *f.CampaignID)
		where = append(where, fmt.Sprintf("m.campaign_id = $%d", len(args)))
	}
	cond := strings.Join(where, " AND ")

	var total int64
	var err error
	if f.JobID == nil && f.CampaignID == nil {
		// The live counts answer without scanning a large account's messages.
		total, err = s.countFromCounters(ctx, accountID, f.Status)
	} else {
		err = s.pool.QueryRow(ctx, `SELECT count(*) FROM messages m WHERE `+cond, args...).Scan(&total)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("count messages: %w", err)
	}
	args = append(args, p.Size, p.offset())
	rows, err := s.pool.Query(ctx, `SELECT `+messageColumns+` FROM messages m JOIN jobs j ON j.id = m.job_id
		WHERE `+cond+fmt.Sprintf(` ORDER BY m.account_id, m.id DESC LIMIT $%d OFFSET $%d`, len(args)-1, len(args)), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list messages: %w", err)
	}
	defer rows.Close()
	out := make([]Message, 0, p.Size)
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list messages: %w", err)
		}
		out = append(out, m)
	}
	return out, total, rows.Err()
}

func (s *Store) countFromCounters(ctx context.Context, accountID uuid.UUID, status string) (int64, error) {
	c, err := s.MessageCounts(ctx, accountID)
	if err != nil {
		return 0, err
	}
	switch status {
	case "queued":
		return c.Queued, nil
	case "sent":
		return c.Sent, nil
	case "delivered":
		return c.Delivered, nil
	case "failed":
		return c.Failed, nil
	}
	return c.Total(), nil
}

// MessageByID returns one of the account's messages. Another account's id is ErrNotFound.
func (s *Store) MessageByID(ctx context.Context, accountID, id uuid.UUID) (Message, error) {
	m, err := scanMessage(s.pool.QueryRow(ctx, `SELECT `+messageColumns+` FROM messages m JOIN jobs j ON j.id = m.job_id
		WHERE m.id = $1 AND m.account_id = $2`, id, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Message{}, ErrNotFound
	}
	if err != nil {
		return Message{}, fmt.Errorf("message by id: %w", err)
	}
	return m, nil
}

// MessageByProviderID returns the account's message a carrier knows by providerID.
func (s *Store) MessageByProviderID(ctx context.Context, accountID uuid.UUID, providerID string) (Message, error) {
	m, err := scanMessage(s.pool.QueryRow(ctx, `SELECT `+messageColumns+` FROM provider_refs r
		JOIN messages m ON m.account_id = r.account_id AND m.id = r.message_id JOIN jobs j ON j.id = m.job_id
		WHERE r.provider_message_id = $1 AND r.account_id = $2 LIMIT 1`, providerID, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Message{}, ErrNotFound
	}
	if err != nil {
		return Message{}, fmt.Errorf("message by provider id: %w", err)
	}
	return m, nil
}

// MessageCounts are an account's messages by status.
type MessageCounts struct {
	Queued, Sent, Delivered, Failed int64
}

// Total is every message counted.
func (c MessageCounts) Total() int64 { return c.Queued + c.Sent + c.Delivered + c.Failed }

// MessageCounts reads the counts of an account. They trail the messages by at most one
// progress write (about a second); queued is what was accepted and is in no other state yet.
func (s *Store) MessageCounts(ctx context.Context, accountID uuid.UUID) (MessageCounts, error) {
	var c MessageCounts
	err := s.pool.QueryRow(ctx, `SELECT w.messages_accepted - c.sent - c.delivered - c.failed, c.sent, c.delivered, c.failed
		FROM message_counts c JOIN wallets w ON w.account_id = c.account_id WHERE c.account_id = $1`, accountID).
		Scan(&c.Queued, &c.Sent, &c.Delivered, &c.Failed)
	if errors.Is(err, pgx.ErrNoRows) {
		return MessageCounts{}, nil
	}
	if err != nil {
		return MessageCounts{}, fmt.Errorf("message counts: %w", err)
	}
	return c, nil
}

// Transaction is a ledger entry.
type Transaction struct {
	ID          uuid.UUID
	Type        string
	AmountCents int64
	SMSCount    int64
	Reference   *string
	Description string
	CreatedAt   time.Time
}

// ListTransactions returns a page of the account's ledger, newest first (txType "" = all).
func (s *Store) ListTransactions(ctx context.Context, accountID uuid.UUID, txType string, p Page) ([]Transaction, int64, error) {
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM wallet_transactions WHERE account_id = $1 AND ($2 = '' OR type = $2)`,
		accountID, txType).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count transactions: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, type, amount_cents, sms_count, reference, description, created_at
		FROM wallet_transactions WHERE account_id = $1 AND ($2 = '' OR type = $2)
		ORDER BY account_id, id DESC LIMIT $3 OFFSET $4`, accountID, txType, p.Size, p.offset())
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

// Job is a stored job as the API shows it.
type Job struct {
	ID              uuid.UUID
	RecipientsCount int
	CostCents       int64
	Status          string
}

// JobByID returns one of the account's jobs.
func (s *Store) JobByID(ctx context.Context, accountID, id uuid.UUID) (Job, error) {
	var j Job
	err := s.pool.QueryRow(ctx, `SELECT id, recipients_count, cost_cents, status FROM jobs WHERE id = $1 AND account_id = $2`,
		id, accountID).Scan(&j.ID, &j.RecipientsCount, &j.CostCents, &j.Status)
	if errors.Is(err, pgx.ErrNoRows) {
		return Job{}, ErrNotFound
	}
	if err != nil {
		return Job{}, fmt.Errorf("job by id: %w", err)
	}
	return j, nil
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
