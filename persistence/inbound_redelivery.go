// Inbound redeliveries: a message a network delivers again because its first delivery was
// answered with an error after the message was stored.

package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
)

// inboundRedelivery is how far back a redelivery is matched to its first delivery: networks
// retry a message for up to a day (its validity period).
const inboundRedelivery = 24 * time.Hour

// redelivered finds the stored, unsettled first delivery of the message in (same number, sender
// and text, within inboundRedelivery) and reports what its handling did, so that the caller
// finishes it (tells the tenant, starts the keyword's confirmation) without storing it again
// or raising its events twice. ok is false when there is none.
func redelivered(ctx context.Context, tx pgx.Tx, in NewInbound, text string) (out InboundResult, ok bool, err error) {
	m := InboundMessage{From: in.From, To: in.To, Text: text}
	var network int16
	err = tx.QueryRow(ctx, `SELECT id, account_id, network, coalesce(keyword, ''), received_at FROM inbound_messages
		WHERE NOT settled AND to_number = $1 AND from_nsn = $2 AND text = $3 AND received_at > $4
		ORDER BY id LIMIT 1 FOR UPDATE`, in.To, int32(in.From), text, time.Now().Add(-inboundRedelivery)).
		Scan(&m.ID, &m.AccountID, &network, &m.Keyword, &m.ReceivedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return InboundResult{}, false, nil
	}
	if err != nil {
		return InboundResult{}, false, fmt.Errorf("find a first delivery: %w", err)
	}
	m.Network = carriers.Network(network)
	out.Message = m
	if m.AccountID == nil {
		return out, true, nil
	}
	acct := *m.AccountID
	_, action := Keyword(text)
	kind := "start"
	switch action {
	case KeywordNone:
		return out, true, nil
	case KeywordOptOut:
		out.Suppressed, kind = true, "stop"
	case KeywordOptIn:
		// Told as lifted when the number is on no list now: telling a tenant of a lift that
		// had nothing to lift changes nothing.
		on, err := suppressedNow(ctx, tx, acct, m.From)
		if err != nil {
			return InboundResult{}, false, err
		}
		out.Lifted = !on
	}
	// The day's confirmation, if its job is still to be sent: starting it again is harmless.
	err = tx.QueryRow(ctx, `SELECT r.job_id FROM keyword_replies r JOIN jobs j ON j.id = r.job_id
		WHERE r.account_id = $1 AND r.nsn = $2 AND r.kind = $3 AND r.day = $4::date AND j.status <> 'completed'`,
		acct, int32(m.From), kind, replyDay(m.ReceivedAt)).Scan(&out.ReplyJobID)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return InboundResult{}, false, fmt.Errorf("find a keyword's confirmation: %w", err)
	}
	return out, true, nil
}

// SettleInbound records that a received message's handling finished: the tenant holds what it
// changed. A delivery of the same message after this is a new message.
func (s *Store) SettleInbound(ctx context.Context, id uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, `UPDATE inbound_messages SET settled = true WHERE id = $1 AND NOT settled`, id); err != nil {
		return fmt.Errorf("settle inbound %s: %w", id, err)
	}
	return nil
}
