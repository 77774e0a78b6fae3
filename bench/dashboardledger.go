// The dashboard scenario's data, continued: what the account's jobs add up to.

package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// seedRest writes the jobs and campaigns, the ledger (top-ups, a debit per job, a refund per
// job with failures), the days, the wallet and counters they sum to, and notifications.
func seedRest(ctx context.Context, conn *pgx.Conn, p seedPlan, jobs []*seedJob, groupIDs []uuid.UUID) error {
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"jobs"}, []string{"id", "account_id", "campaign_id", "source", "message",
		"shared_prefix", "senders", "prefixed", "price_cents", "recipients_count", "sms_units", "cost_cents", "status",
		"delivered_count", "failed_count", "refunded_cents", "created_at", "completed_at", "network_counts", "finished",
		"first_message_id", "last_message_id", "expanded"},
		pgx.CopyFromSlice(len(jobs), func(i int) ([]any, error) {
			j := jobs[i]
			var campaign *uuid.UUID
			expanded := int32(0)
			if j.isCampaign {
				campaign, expanded = &j.campaign, int32(j.size)
			}
			nc := []int32{int32(j.byNetwork[0]), int32(j.byNetwork[1]), int32(j.byNetwork[2])}
			return []any{j.id, p.account, campaign, j.source, j.text, "Bench Ltd: ", []string{"TUMA", "TUMA", "TUMA"},
				[]bool{true, true, true}, int32(p.priceCent), int32(j.size), j.units, j.costCents, "completed",
				int32(j.delivered), int32(j.failed), j.refundCents, j.created, j.done, nc, nc, j.first, j.last, expanded}, nil
		})); err != nil {
		return fmt.Errorf("seed jobs: %w", err)
	}
	var camps []*seedJob
	for _, j := range jobs {
		if j.isCampaign {
			camps = append(camps, j)
		}
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"campaigns"}, []string{"id", "account_id", "job_id", "name", "message",
		"group_id", "group_name", "status", "total_recipients", "cost_cents", "created_at", "started_at", "completed_at"},
		pgx.CopyFromSlice(len(camps), func(i int) ([]any, error) {
			j := camps[i]
			return []any{j.campaign, p.account, j.id, j.name, j.text, groupIDs[j.group], seedGroups[j.group], "completed",
				int32(j.size), j.costCents, j.created, j.created, j.done}, nil
		})); err != nil {
		return fmt.Errorf("seed campaigns: %w", err)
	}

	// The ledger: a top-up before each week's sends covering them, then a debit per job and a
	// refund per job with failures.
	type entry struct {
		id           uuid.UUID
		kind, desc   string
		cents, count int64
		job          *uuid.UUID
		at           time.Time
	}
	var ledger []entry
	var topups, debits, refunds, units, refundUnits, delivered, failed int64
	days := map[time.Time][2]int64{}
	week := time.Time{}
	for _, j := range jobs {
		if w := j.created.Truncate(7 * 24 * time.Hour); !w.Equal(week) {
			week = w
			at := j.created.Add(-time.Minute)
			ledger = append(ledger, entry{id: v7At(at), kind: "topup", desc: "Top-up", cents: 50_000_000, at: at})
			topups += 50_000_000
		}
		desc := fmt.Sprintf("SMS to %d recipient%s", j.size, sOf(j.size))
		if j.isCampaign {
			desc = fmt.Sprintf("Campaign %q to %d recipient%s", j.name, j.size, sOf(j.size))
		}
		ledger = append(ledger, entry{id: v7At(j.created), kind: "debit", desc: desc, cents: j.costCents, count: j.units, job: &j.id, at: j.created})
		if j.failed > 0 {
			ledger = append(ledger, entry{id: v7At(j.done), kind: "refund", cents: j.refundCents, count: int64(j.failed), job: &j.id, at: j.done,
				desc: fmt.Sprintf("refund for %d failed message%s", j.failed, sOf(j.failed))})
		}
		debits, refunds, units, refundUnits = debits+j.costCents, refunds+j.refundCents, units+j.units, refundUnits+j.refundUnits
		delivered, failed = delivered+int64(j.delivered), failed+int64(j.failed)
		day := j.created.UTC().Truncate(24 * time.Hour)
		d := days[day]
		days[day] = [2]int64{d[0] + j.costCents - j.refundCents, d[1] + j.units - j.refundUnits}
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"wallet_transactions"}, []string{"id", "account_id", "type", "amount_cents",
		"sms_count", "job_id", "description", "created_at"},
		pgx.CopyFromSlice(len(ledger), func(i int) ([]any, error) {
			e := ledger[i]
			return []any{e.id, p.account, e.kind, e.cents, int32(e.count), e.job, e.desc, e.at}, nil
		})); err != nil {
		return fmt.Errorf("seed ledger: %w", err)
	}
	dayRows := make([][]any, 0, len(days))
	for day, d := range days {
		dayRows = append(dayRows, []any{p.account, day, d[0], d[1]})
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"account_days"}, []string{"account_id", "day", "spend_cents", "sms_count"},
		pgx.CopyFromRows(dayRows)); err != nil {
		return fmt.Errorf("seed days: %w", err)
	}
	net, netUnits := debits-refunds, units-refundUnits
	if _, err := conn.Exec(ctx, `UPDATE wallets SET balance_cents = balance_cents + $2, total_spent_cents = $3,
		total_sms_sent = $4, lifetime_sms = $4, messages_accepted = $5, version = version + 1, updated_at = now()
		WHERE account_id = $1`, p.account, topups-net, net, netUnits, int64(p.messages)); err != nil {
		return fmt.Errorf("seed wallet: %w", err)
	}
	if _, err := conn.Exec(ctx, `UPDATE message_counts SET delivered = $2, failed = $3 WHERE account_id = $1`,
		p.account, delivered, failed); err != nil {
		return fmt.Errorf("seed counts: %w", err)
	}
	if _, err := conn.Exec(ctx, `UPDATE accounts SET is_verified = true WHERE id = $1`, p.account); err != nil {
		return fmt.Errorf("seed account: %w", err)
	}
	const notices = 300
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"notifications"}, []string{"id", "account_id", "type", "title", "message",
		"is_read", "created_at"},
		pgx.CopyFromSlice(notices, func(i int) ([]any, error) {
			at := p.now.Add(-time.Duration(notices-i) * 2 * time.Hour)
			return []any{v7At(at), p.account, "topup_success", "Payment received",
				fmt.Sprintf("KES 500,000.00 was added to your wallet (notice %d).", i+1), i < notices-25, at}, nil
		})); err != nil {
		return fmt.Errorf("seed notifications: %w", err)
	}
	for _, t := range []string{"contact_groups", "contacts", "jobs", "campaigns", "messages", "wallet_transactions",
		"account_days", "notifications"} {
		if _, err := conn.Exec(ctx, "VACUUM ANALYZE "+t); err != nil {
			return fmt.Errorf("vacuum %s: %w", t, err)
		}
	}
	return nil
}

// sOf is the plural ending for n things.
func sOf(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
