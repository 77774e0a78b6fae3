// The messages that webhook events describe, read when a delivery is sent.

package persistence

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tuma-sms/tuma/carriers"
)

// MessageEventData is a message as its events show it. Absent ids and times are zero values
// rather than pointers: made from the node's memory for each event a delivery renders, it
// allocates little.
type MessageEventData struct {
	ID, JobID                     uuid.UUID
	CampaignID                    uuid.UUID // uuid.Nil: none
	Reference                     *string
	Recipient                     string
	Network                       carriers.Network
	Sender                        string
	Status                        MessageStatus
	ProviderStatus                string
	ProviderMessageID             *string
	Parts                         int
	CostCents                     int64
	SentAt, DeliveredAt, FailedAt time.Time // zero: none
}

// WebhookMessages reads the account's messages that events of a delivery describe, by id.
func (s *Store) WebhookMessages(ctx context.Context, accountID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]MessageEventData, error) {
	out := make(map[uuid.UUID]MessageEventData, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT m.id, m.job_id, m.campaign_id, j.reference, m.recipient, m.network, m.sender,
			m.status, m.provider_status, m.provider_message_id, m.parts, m.cost_cents, m.sent_at, m.delivered_at, m.failed_at
		FROM messages m JOIN jobs j ON j.id = m.job_id WHERE m.id = ANY($2::uuid[]) AND m.account_id = $1`, accountID, ids)
	if err != nil {
		return nil, fmt.Errorf("webhook messages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var m MessageEventData
		var net, parts int16
		var campaign pgtype.UUID
		var sent, delivered, failed pgtype.Timestamptz
		if err := rows.Scan(&m.ID, &m.JobID, &campaign, &m.Reference, &m.Recipient, &net, &m.Sender, &m.Status,
			&m.ProviderStatus, &m.ProviderMessageID, &parts, &m.CostCents, &sent, &delivered, &failed); err != nil {
			return nil, fmt.Errorf("webhook messages: %w", err)
		}
		m.Network, m.Parts = carriers.Network(net), int(parts)
		if campaign.Valid {
			m.CampaignID = campaign.Bytes
		}
		m.SentAt, m.DeliveredAt, m.FailedAt = sent.Time, delivered.Time, failed.Time // zero when null
		out[m.ID] = m
	}
	return out, rows.Err()
}
