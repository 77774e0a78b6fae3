// Reports: an account's spend by day and its campaigns' results, read from figures kept as
// money and statuses move (account_days, job counters), never from a scan of its messages.

package persistence

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// SpendDay is one UTC day of an account's SMS spend: debits less the refunds of that day's
// sends.
type SpendDay struct {
	Day        time.Time
	SpendCents int64
	SMS        int64
}

// SpendTrend returns the account's days from today (UTC, by now) back over days days, oldest
// first, zero-filled.
func (s *Store) SpendTrend(ctx context.Context, accountID uuid.UUID, now time.Time, days int) ([]SpendDay, error) {
	today := now.UTC().Truncate(24 * time.Hour)
	from := today.AddDate(0, 0, -(days - 1))
	rows, err := s.pool.Query(ctx, `SELECT g.day::date, coalesce(d.spend_cents, 0), coalesce(d.sms_count, 0)
		FROM generate_series($2::date, $3::date, interval '1 day') AS g(day)
		LEFT JOIN account_days d ON d.account_id = $1 AND d.day = g.day::date
		ORDER BY g.day`, accountID, from, today)
	if err != nil {
		return nil, fmt.Errorf("spend trend: %w", err)
	}
	defer rows.Close()
	out := make([]SpendDay, 0, days)
	for rows.Next() {
		var d SpendDay
		if err := rows.Scan(&d.Day, &d.SpendCents, &d.SMS); err != nil {
			return nil, fmt.Errorf("spend trend: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// GroupResult is what an account's campaigns to one group achieved.
type GroupResult struct {
	GroupID           uuid.UUID
	Name              string
	Campaigns         int
	Recipients        int64
	Delivered, Failed int64
	SpendCents        int64   // charged less refunded
	AvgDeliveryRate   float64 // the mean of the campaigns' delivery rates, percent
}

// GroupResults sums an account's campaigns by group, groups with campaigns only, by name. A
// group deleted since keeps the name its last campaign saw.
func (s *Store) GroupResults(ctx context.Context, accountID uuid.UUID) ([]GroupResult, error) {
	rows, err := s.pool.Query(ctx, `SELECT c.group_id,
			coalesce(max(g.name), (array_agg(c.group_name ORDER BY c.id DESC))[1]),
			count(*), sum(c.total_recipients), sum(j.delivered_count), sum(j.failed_count),
			sum(c.cost_cents - j.refunded_cents),
			round(avg(j.delivered_count * 100.0 / c.total_recipients), 1)::float8
		FROM campaigns c JOIN jobs j ON j.id = c.job_id
		LEFT JOIN contact_groups g ON g.id = c.group_id AND g.account_id = c.account_id
		WHERE c.account_id = $1
		GROUP BY c.group_id ORDER BY 2, 1`, accountID)
	if err != nil {
		return nil, fmt.Errorf("group results: %w", err)
	}
	defer rows.Close()
	var out []GroupResult
	for rows.Next() {
		var g GroupResult
		if err := rows.Scan(&g.GroupID, &g.Name, &g.Campaigns, &g.Recipients, &g.Delivered, &g.Failed, &g.SpendCents, &g.AvgDeliveryRate); err != nil {
			return nil, fmt.Errorf("group results: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}
