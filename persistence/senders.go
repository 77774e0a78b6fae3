// Sender IDs: the applications of accounts for their own sender names, every move between
// their states (senderTransitions, the one table of them), their documents and their review.

package persistence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// SenderID is a sender ID application as its account and the operators see it.
type SenderID struct {
	ID              uuid.UUID
	AccountID       uuid.UUID
	Name            string
	Network         string // safaricom | airtel | telkom | all
	Purpose         string
	Status          SenderStatus
	Active          bool
	Default         bool
	FeeCents        int64
	FeePaid         bool
	RejectionReason *string
	DocumentsRound  int // how many times documents were submitted
	CreatedAt       time.Time
	SubmittedAt     *time.Time
	ReviewedAt      *time.Time
}

// NewSenderID is an application about to be made.
type NewSenderID struct {
	AccountID uuid.UUID
	Name      string // normalised: upper-case letters and digits
	Network   string
	Purpose   string
	FeeCents  int64
}

// SenderDocument is one stored file of an application round.
type SenderDocument struct {
	Kind        DocumentKind
	StorageKey  string
	ContentType string
	Size        int64
	SHA256      []byte
	Round       int
	CreatedAt   time.Time
}

// SenderEvent is something that happens to an application.
type SenderEvent string

const (
	EventSubmitDocuments SenderEvent = "submit_documents" // the account uploads the four documents
	EventReapply         SenderEvent = "re_apply"         // … again, after a rejection
	EventApprove         SenderEvent = "approve"          // an operator approves
	EventReject          SenderEvent = "reject"           // an operator rejects, with a reason
	EventCancel          SenderEvent = "cancel"           // the account withdraws the application
	EventSetDefault      SenderEvent = "set_default"      // the account sends with it by default
	EventPay             SenderEvent = "pay"              // the account starts paying the fee
	eventAwaitFee        SenderEvent = "await_fee"        // internal: documents in, fee unpaid
	eventFeePaid         SenderEvent = "fee_paid"         // internal: the fee's payment is confirmed
)

// senderTransition says from which states an event may happen, on what condition of the row,
// and where it leaves the application ("" keeps its status).
type senderTransition struct {
	from []SenderStatus
	to   SenderStatus
	when string // an SQL condition on the sender_ids row, "" for none
	why  string // what the condition means, when it does not hold
}

// senderTransitions is every move an application can make. Anything else is refused with
// ErrInvalidState and changes nothing.
var senderTransitions = map[SenderEvent]senderTransition{
	EventSubmitDocuments: {from: []SenderStatus{SenderApplied}, to: SenderDocumentsSubmitted},
	eventAwaitFee:        {from: []SenderStatus{SenderDocumentsSubmitted}, to: SenderPaymentPending, when: "NOT fee_paid"},
	eventFeePaid:         {from: []SenderStatus{SenderPaymentPending}, to: SenderDocumentsSubmitted, when: "fee_paid"},
	EventApprove: {from: []SenderStatus{SenderDocumentsSubmitted, SenderPaymentPending}, to: SenderApproved,
		when: "fee_paid", why: "its registration fee is not paid"},
	EventReject:  {from: []SenderStatus{SenderDocumentsSubmitted, SenderPaymentPending}, to: SenderRejected},
	EventReapply: {from: []SenderStatus{SenderRejected}, to: SenderDocumentsSubmitted},
	EventCancel: {from: []SenderStatus{SenderApplied, SenderDocumentsSubmitted, SenderPaymentPending, SenderRejected, SenderApproved},
		to: SenderCancelled, when: "NOT (status = 'approved' AND is_active)", why: "an approved, active sender ID cannot be cancelled"},
	EventSetDefault: {from: []SenderStatus{SenderApproved}, when: "is_active", why: "it is not active"},
	EventPay: {from: []SenderStatus{SenderApplied, SenderDocumentsSubmitted, SenderPaymentPending, SenderRejected},
		when: "NOT fee_paid", why: "its registration fee is paid already"},
}

// SenderTransition reports whether event may happen to an application in status (its row's
// conditions aside): the table, for documentation and tests.
func SenderTransition(event SenderEvent, status SenderStatus) (to SenderStatus, ok bool) {
	t, found := senderTransitions[event]
	if !found || !slices.Contains(t.from, status) {
		return "", false
	}
	if t.to == "" {
		return status, true
	}
	return t.to, true
}

// Errors of sender ID operations.
var (
	ErrSenderExists = errors.New("this account already has a sender ID request with this name and network")
	ErrInvalidState = errors.New("not allowed in the sender ID's current state")
)

// InvalidStateError is an event the application's state does not allow. It is ErrInvalidState.
type InvalidStateError struct {
	Event  SenderEvent
	Status SenderStatus
	Why    string // the unmet condition, "" when the status itself does not allow it
}

func (e *InvalidStateError) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("cannot %s this sender ID: %s", strings.ReplaceAll(string(e.Event), "_", " "), e.Why)
	}
	return fmt.Sprintf("cannot %s a sender ID that is %s", strings.ReplaceAll(string(e.Event), "_", " "), strings.ReplaceAll(string(e.Status), "_", " "))
}

func (e *InvalidStateError) Is(target error) bool { return target == ErrInvalidState }

const senderColumns = `id, account_id, name, network, purpose, status, is_active, is_default, registration_fee_cents,
	fee_paid, rejection_reason, documents_round, created_at, submitted_at, reviewed_at`

func scanSender(row pgx.Row) (SenderID, error) {
	var s SenderID
	err := row.Scan(&s.ID, &s.AccountID, &s.Name, &s.Network, &s.Purpose, &s.Status, &s.Active, &s.Default, &s.FeeCents,
		&s.FeePaid, &s.RejectionReason, &s.DocumentsRound, &s.CreatedAt, &s.SubmittedAt, &s.ReviewedAt)
	return s, err
}

// CreateSenderID records a new application in status applied.
func (s *Store) CreateSenderID(ctx context.Context, n NewSenderID) (SenderID, error) {
	snd, err := scanSender(s.pool.QueryRow(ctx, `INSERT INTO sender_ids (id, account_id, name, network, purpose, registration_fee_cents)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+senderColumns, NewID(), n.AccountID, n.Name, n.Network, n.Purpose, n.FeeCents))
	switch {
	case isUniqueViolation(err, "sender_ids_live_name"):
		return SenderID{}, ErrSenderExists
	case err != nil:
		return SenderID{}, fmt.Errorf("create sender id: %w", err)
	}
	return snd, nil
}

// SenderIDs lists the account's applications that are not cancelled, newest first.
func (s *Store) SenderIDs(ctx context.Context, accountID uuid.UUID) ([]SenderID, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+senderColumns+` FROM sender_ids
		WHERE account_id = $1 AND status <> 'cancelled' ORDER BY id DESC`, accountID)
	if err != nil {
		return nil, fmt.Errorf("list sender ids: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SenderID, error) { return scanSender(r) })
	if err != nil {
		return nil, fmt.Errorf("list sender ids: %w", err)
	}
	return out, nil
}

// SenderIDByID returns one of the account's applications; another account's, or a cancelled
// one, is ErrNotFound.
func (s *Store) SenderIDByID(ctx context.Context, accountID, id uuid.UUID) (SenderID, error) {
	snd, err := scanSender(s.pool.QueryRow(ctx, `SELECT `+senderColumns+` FROM sender_ids
		WHERE id = $1 AND account_id = $2 AND status <> 'cancelled'`, id, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return SenderID{}, ErrNotFound
	}
	if err != nil {
		return SenderID{}, fmt.Errorf("sender id: %w", err)
	}
	return snd, nil
}

// move applies event to one application in tx: a conditional update from the states the table
// allows, with the extra assignments in set (SQL, after "SET status = …,"; $1 is the id, $2 the
// account or NULL for an operator, further arguments follow). A row that exists but does not
// allow the event is an *InvalidStateError; no row (or a cancelled one, or another account's)
// is ErrNotFound.
func move(ctx context.Context, tx pgx.Tx, event SenderEvent, id uuid.UUID, account *uuid.UUID, set string, args ...any) (SenderID, error) {
	t := senderTransitions[event]
	to := "status"
	if t.to != "" {
		to = "'" + string(t.to) + "'"
	}
	if set != "" {
		set = ", " + set
	}
	cond := ""
	if t.when != "" {
		cond = " AND (" + t.when + ")"
	}
	from := make([]string, len(t.from))
	for i, f := range t.from {
		from[i] = string(f)
	}
	all := append([]any{id, account, from}, args...)
	snd, err := scanSender(tx.QueryRow(ctx, `UPDATE sender_ids SET status = `+to+`, updated_at = now()`+set+`
		WHERE id = $1 AND ($2::uuid IS NULL OR account_id = $2) AND status = ANY($3::text[])`+cond+`
		RETURNING `+senderColumns, all...))
	if err == nil {
		return snd, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return SenderID{}, fmt.Errorf("%s sender id: %w", event, err)
	}
	// Why not: the row's state, read in the same transaction.
	var status SenderStatus
	err = tx.QueryRow(ctx, `SELECT status FROM sender_ids WHERE id = $1 AND ($2::uuid IS NULL OR account_id = $2)`, id, account).Scan(&status)
	switch {
	case errors.Is(err, pgx.ErrNoRows), err == nil && status == SenderCancelled:
		return SenderID{}, ErrNotFound
	case err != nil:
		return SenderID{}, fmt.Errorf("%s sender id: %w", event, err)
	case slices.Contains(t.from, status):
		return SenderID{}, &InvalidStateError{Event: event, Status: status, Why: t.why}
	}
	return SenderID{}, &InvalidStateError{Event: event, Status: status}
}

// CheckSenderEvent reports whether event may happen to the account's application now (for
// operations whose effect is elsewhere, like starting the fee's checkout): its state, or
// ErrNotFound, or an *InvalidStateError. It changes nothing: the guard runs in a transaction
// that is rolled back.
func (s *Store) CheckSenderEvent(ctx context.Context, accountID, id uuid.UUID, event SenderEvent) (SenderID, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return SenderID{}, fmt.Errorf("check sender id: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	return move(ctx, tx, event, id, &accountID, "")
}

// SubmitSenderDocuments records a round of the four documents (already stored under their
// keys) and moves the application on: to documents_submitted, or payment_pending while its fee
// is unpaid. reapply is the round after a rejection: it also clears the rejection reason. The
// earlier rounds' documents are kept.
func (s *Store) SubmitSenderDocuments(ctx context.Context, accountID, id uuid.UUID, reapply bool, docs []SenderDocument) (SenderID, error) {
	event := EventSubmitDocuments
	if reapply {
		event = EventReapply
	}
	var snd SenderID
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		snd, err = move(ctx, tx, event, id, &accountID,
			"documents_round = documents_round + 1, submitted_at = now(), rejection_reason = NULL, reviewed_at = NULL")
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, d := range docs {
			b.Queue(`INSERT INTO sender_documents (id, sender_id, account_id, round, kind, storage_key, content_type, size_bytes, sha256)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, NewID(), id, accountID, snd.DocumentsRound, d.Kind, d.StorageKey,
				d.ContentType, d.Size, d.SHA256)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("record sender documents: %w", err)
		}
		if !snd.FeePaid { // the internal step: documents in, the fee still to pay
			snd, err = move(ctx, tx, eventAwaitFee, id, &accountID, "")
		}
		return err
	})
	if err != nil {
		return SenderID{}, err
	}
	return snd, nil
}

// SenderDocuments returns the documents of an application's latest round.
func (s *Store) SenderDocuments(ctx context.Context, accountID, id uuid.UUID) ([]SenderDocument, error) {
	rows, err := s.pool.Query(ctx, `SELECT d.kind, d.storage_key, d.content_type, d.size_bytes, d.sha256, d.round, d.created_at
		FROM sender_documents d JOIN sender_ids s ON s.id = d.sender_id AND d.round = s.documents_round
		WHERE d.sender_id = $1 AND d.account_id = $2 ORDER BY d.kind`, id, accountID)
	if err != nil {
		return nil, fmt.Errorf("sender documents: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (SenderDocument, error) {
		var d SenderDocument
		err := r.Scan(&d.Kind, &d.StorageKey, &d.ContentType, &d.Size, &d.SHA256, &d.Round, &d.CreatedAt)
		return d, err
	})
}

// SetDefaultSender makes an approved, active application the account's default sender, and
// no other: the account's applications are locked while the default moves, and the database
// allows one default per account whatever happens.
func (s *Store) SetDefaultSender(ctx context.Context, accountID, id uuid.UUID) (SenderID, error) {
	var snd SenderID
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT id FROM sender_ids WHERE account_id = $1 ORDER BY id FOR UPDATE`, accountID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE sender_ids SET is_default = false, updated_at = now()
			WHERE account_id = $1 AND is_default AND id <> $2`, accountID, id); err != nil {
			return err
		}
		var err error
		snd, err = move(ctx, tx, EventSetDefault, id, &accountID, "is_default = true")
		return err
	})
	if err != nil {
		return SenderID{}, err
	}
	return snd, nil
}

// CancelSenderID withdraws an application (an approved, active one cannot be).
func (s *Store) CancelSenderID(ctx context.Context, accountID, id uuid.UUID) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := move(ctx, tx, EventCancel, id, &accountID, "is_default = false, is_active = false")
		return err
	})
}

// ReviewSenderIDs lists applications for the operators, oldest submission first: those in
// status (every status but cancelled when status is ""), across accounts.
func (s *Store) ReviewSenderIDs(ctx context.Context, status SenderStatus, p Page) ([]SenderID, int64, error) {
	var total int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM sender_ids
		WHERE ($1 = '' AND status <> 'cancelled') OR status = $1`, status).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count sender ids: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+senderColumns+` FROM sender_ids
		WHERE ($1 = '' AND status <> 'cancelled') OR status = $1
		ORDER BY submitted_at NULLS LAST, id LIMIT $2 OFFSET $3`, status, p.Size, p.offset())
	if err != nil {
		return nil, 0, fmt.Errorf("review sender ids: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SenderID, error) { return scanSender(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("review sender ids: %w", err)
	}
	return out, total, nil
}

// ApproveSenderID approves an application whose fee is paid, making it active, and adds the
// notification note makes of it, in one transaction.
func (s *Store) ApproveSenderID(ctx context.Context, id uuid.UUID, note func(SenderID) NewNotification) (SenderID, error) {
	return s.review(ctx, EventApprove, id, note, "is_active = true, reviewed_at = now(), rejection_reason = NULL")
}

// RejectSenderID rejects an application with a reason and adds the notification note makes.
func (s *Store) RejectSenderID(ctx context.Context, id uuid.UUID, reason string, note func(SenderID) NewNotification) (SenderID, error) {
	return s.review(ctx, EventReject, id, note, "is_active = false, is_default = false, reviewed_at = now(), rejection_reason = $4", reason)
}

func (s *Store) review(ctx context.Context, event SenderEvent, id uuid.UUID, note func(SenderID) NewNotification, set string, args ...any) (SenderID, error) {
	var snd SenderID
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if snd, err = move(ctx, tx, event, id, nil, set, args...); err != nil {
			return err
		}
		if err := addNotification(ctx, tx, snd.AccountID, note(snd)); err != nil {
			return err
		}
		return queueSenderEvent(ctx, tx, snd)
	})
	if err != nil {
		return SenderID{}, err
	}
	return snd, nil
}

// feePaid records, inside a payment's confirmation, that an application's fee is paid, and
// moves it on when it was waiting for the fee; it returns the sender's name. When the fee
// cannot be taken, toWallet says why, and the payment is the account's, credited to its
// wallet: the fee was paid already (through another checkout), or the application was
// cancelled while its checkout was open (the money would otherwise be taken and recorded
// nowhere, and the payment confirmed never).
func feePaid(ctx context.Context, tx pgx.Tx, accountID, id uuid.UUID) (name, toWallet string, err error) {
	var (
		before bool
		status SenderStatus
	)
	if err := tx.QueryRow(ctx, `SELECT name, fee_paid, status FROM sender_ids WHERE id = $1 AND account_id = $2 FOR UPDATE`,
		id, accountID).Scan(&name, &before, &status); err != nil {
		return "", "", fmt.Errorf("sender %s: %w", id, err)
	}
	switch {
	case status == SenderCancelled:
		return name, "Sender ID " + name + "'s fee, paid after the application was cancelled: credited to the wallet", nil
	case before:
		return name, "Sender ID " + name + "'s fee, paid twice: credited to the wallet", nil
	}
	if _, err := tx.Exec(ctx, `UPDATE sender_ids SET fee_paid = true, updated_at = now() WHERE id = $1`, id); err != nil {
		return "", "", fmt.Errorf("sender %s: %w", id, err)
	}
	if _, err := move(ctx, tx, eventFeePaid, id, &accountID, ""); err != nil && !errors.Is(err, ErrInvalidState) {
		return "", "", err // not waiting for the fee (documents still to come, say): nothing to move
	}
	return name, "", nil
}
