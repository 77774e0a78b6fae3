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
// group deleted since keeps the name its last campaign saw. Spend is net of refunds as of now
// (unfolded counts included), as the wallet and the spend trend show it; a campaign cancelled
// before it delivered anything, all of it refunded, sent nothing to rate and is left out of
// the average delivery rate (it still counts as a campaign, with its recipients and spend 0).
func (s *Store) GroupResults(ctx context.Context, accountID uuid.UUID) ([]GroupResult, error) {
	rows, err := s.pool.Query(ctx, unfoldedProgress+`, results AS (
			SELECT c.group_id, c.id, c.group_name, c.status, c.total_recipients,
				j.delivered_count + coalesce(u.delivered, 0) AS delivered,
				j.failed_count + coalesce(u.failed, 0) AS failed,
				c.cost_cents - j.refunded_cents - coalesce(u.refunded, 0) AS spend
			`+campaignsFrom+` WHERE c.account_id = $1)
		SELECT c.group_id,
			coalesce(max(g.name), (array_agg(c.group_name ORDER BY c.id DESC))[1]),
			count(*), sum(c.total_recipients), sum(c.delivered), sum(c.failed), sum(c.spend),
			coalesce(round(avg(c.delivered * 100.0 / c.total_recipients)
				FILTER (WHERE NOT (c.status = 'cancelled' AND c.delivered = 0 AND c.spend = 0)), 1), 0)::float8
		FROM results c LEFT JOIN contact_groups g ON g.id = c.group_id AND g.account_id = $1
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

// unfoldedProgress is a WITH clause naming, for the account $1, the counter changes of its jobs
// that the progress log holds and the progress actor has not folded into the jobs yet (about
// a second's worth): readers add them so counters agree with the wallet and the ledger, which
// change in the same transaction as the log.
const unfoldedProgress = `WITH unfolded AS (
		SELECT u.job_id, sum(u.delivered)::int AS delivered, sum(u.failed)::int AS failed, sum(u.refunded)::bigint AS refunded
		FROM progress_log l CROSS JOIN LATERAL unnest(l.jobs, l.accounts, l.delivered, l.failed, l.refunded)
			AS u(job_id, account_id, delivered, failed, refunded)
		WHERE u.account_id = $1
		GROUP BY u.job_id)
	`
