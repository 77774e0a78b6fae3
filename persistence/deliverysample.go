// Delivery by network: how an account's latest messages fared on each network, read from a
// bounded number of its newest messages (the account's index, newest first), never a scan.

package persistence

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
)

// NetworkDelivery is how the sampled messages to one network fared.
type NetworkDelivery struct {
	Network           carriers.Network
	Messages          int64 // sampled messages to this network
	Delivered, Failed int64 // of those, final; the rest are queued or awaiting a receipt
}

// RecentDelivery sums the account's newest limit messages by network, networks with
// messages only, in network order.
func (s *Store) RecentDelivery(ctx context.Context, accountID uuid.UUID, limit int) ([]NetworkDelivery, error) {
	rows, err := s.pool.Query(ctx, `SELECT network, count(*), count(*) FILTER (WHERE status = 'delivered'),
			count(*) FILTER (WHERE status = 'failed')
		FROM (SELECT network, status FROM messages WHERE account_id = $1 ORDER BY account_id, id DESC LIMIT $2) m
		GROUP BY network ORDER BY network`, accountID, limit)
	if err != nil {
		return nil, fmt.Errorf("recent delivery: %w", err)
	}
	defer rows.Close()
	var out []NetworkDelivery
	for rows.Next() {
		var (
			d       NetworkDelivery
			network int16
		)
		if err := rows.Scan(&network, &d.Messages, &d.Delivered, &d.Failed); err != nil {
			return nil, fmt.Errorf("recent delivery: %w", err)
		}
		d.Network = carriers.Network(network)
		out = append(out, d)
	}
	return out, rows.Err()
}
