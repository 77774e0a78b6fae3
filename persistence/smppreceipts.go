// SMPP delivery receipts (issue 36): the rows migration 026's trigger writes when a message of
// an smpp job that owes one (ReceiptMode, migration 030) becomes final, and migration 029's
// when a message is texted to an account with SMPP credentials, claimed by the SMPP server to
// send as deliver_sm.

package persistence

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// SMPPReceipt is a receipt, or an inbound message, owed to an account's SMPP receivers.
type SMPPReceipt struct {
	ID          int64 // the order per account
	Kind        SMPPKind
	AccountID   uuid.UUID
	MessageID   uuid.UUID     // the sent message's; an inbound message's own
	Status      MessageStatus // delivered or failed; "received" for an inbound message
	Recipient   string        // E.164; an inbound message's: the account's number it was sent to
	Sender      string        // an inbound message's: the subscriber, E.164
	Text        string        // the message's first 20 characters; an inbound message's whole text
	SubmittedAt time.Time
	DoneAt      time.Time
	Attempts    int
}

// ReceiptMode is the delivery receipt an SMPP client asked for with a message (submit_sm's or
// data_sm's registered_delivery, SMPP 3.4 §5.2.17): a job of source smpp writes it on its
// messages (columns smpp and smpp_failed_only, migration 030), and migration 026's trigger
// queues the receipt when the message becomes final. Other jobs' messages owe none.
type ReceiptMode uint8

const (
	ReceiptNone    ReceiptMode = iota // no receipt (registered_delivery 0)
	ReceiptFinal                      // on the final outcome, delivered or failed (1)
	ReceiptFailure                    // only if the message failed (2)
)

// receiptColumns are a job's messages' smpp (a receipt owed) and smpp_failed_only (only if
// the message fails).
func (j NewJob) receiptColumns() (owed, failedOnly bool) {
	if j.Source != SourceSMPP || j.Receipt == ReceiptNone {
		return false, false
	}
	return true, j.Receipt == ReceiptFailure
}

// SMPPKind is what an SMPP outbox row delivers: a delivery receipt, or a message texted to the
// account's number (migration 029).
type SMPPKind string

const (
	SMPPKindReceipt SMPPKind = "receipt"
	SMPPKindInbound SMPPKind = "inbound"
)

// SMPPKinds are every kind of smpp_receipts row.
func SMPPKinds() []string { return []string{string(SMPPKindInbound), string(SMPPKindReceipt)} }

// ClaimSMPPReceipts leases up to limit of the account's receipts not yet delivered, oldest
// first, for `lease`: no other claim (on any node) takes them until it ends or they are
// released. Rows another claim holds are skipped, not waited for. Times are the database's.
func (s *Store) ClaimSMPPReceipts(ctx context.Context, accountID uuid.UUID, lease time.Duration, limit int) ([]SMPPReceipt, error) {
	rows, err := s.pool.Query(ctx, `
		UPDATE smpp_receipts r SET lease_until = now() + $2::interval
		FROM (SELECT id FROM smpp_receipts WHERE account_id = $1 AND delivered_at IS NULL AND lease_until <= now()
			ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED) due
		WHERE r.id = due.id
		RETURNING r.id, r.kind, r.account_id, r.message_id, r.status, r.recipient, r.sender, r.text, r.submitted_at, r.done_at,
			r.attempts`, accountID, lease, limit)
	if err != nil {
		return nil, fmt.Errorf("claim smpp receipts: %w", err)
	}
	defer rows.Close()
	var out []SMPPReceipt
	for rows.Next() {
		var r SMPPReceipt
		if err := rows.Scan(&r.ID, &r.Kind, &r.AccountID, &r.MessageID, &r.Status, &r.Recipient, &r.Sender, &r.Text,
			&r.SubmittedAt, &r.DoneAt, &r.Attempts); err != nil {
			return nil, fmt.Errorf("claim smpp receipts: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim smpp receipts: %w", err)
	}
	// UPDATE … RETURNING does not keep the subquery's order.
	slices.SortFunc(out, func(a, b SMPPReceipt) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// SMPPReceiptsDelivered records that an ESME acknowledged the receipts with ESME_ROK: they
// are never claimed again.
func (s *Store) SMPPReceiptsDelivered(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `UPDATE smpp_receipts SET delivered_at = now(), attempts = attempts + 1 WHERE id = ANY($1)`,
		ids); err != nil {
		return fmt.Errorf("smpp receipts delivered: %w", err)
	}
	return nil
}

// SMPPReceiptRetry releases a claimed receipt to be claimed again after `after`; attempted
// counts an ESME's refusal (false: it was never sent, e.g. the bind went away).
func (s *Store) SMPPReceiptRetry(ctx context.Context, id int64, after time.Duration, attempted bool) error {
	if _, err := s.pool.Exec(ctx, `UPDATE smpp_receipts SET lease_until = now() + $2::interval,
			attempts = attempts + CASE WHEN $3 THEN 1 ELSE 0 END
		WHERE id = $1 AND delivered_at IS NULL`, id, after, attempted); err != nil {
		return fmt.Errorf("smpp receipt retry: %w", err)
	}
	return nil
}
