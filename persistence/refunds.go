// Refunds: failed messages give their cost back to the wallet, with a ledger entry per job.

package persistence

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// refund is what an account gets back from one flush.
type refund struct{ cents, units int64 }

// settle writes what a group of status transitions owes, as the last round trip of their
// transaction: the progress log, the webhook events (hooks, may be nil), and refunds for
// failed messages (one ledger entry per job,
// cost back to the wallet, parts off the account's lifetime volume: tiers count only SMS
// billed and not refunded, so sends that fail buy no cheaper tier). The wallet and daily-spend
// rows, which accepts lock too, are locked last and held for this one round trip and the
// commit: a group commit of sends waits for no more than that.
func settle(ctx context.Context, tx pgx.Tx, jobs []JobProgress, faults Faults, hooks *hookEvents) ([]WalletSnapshot, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	b := &pgx.Batch{}
	queueProgressLog(b, jobs)
	hooks.queue(b)
	var snaps []WalletSnapshot
	queueRefunds(b, jobs, faults, &snaps)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("settle: %w", err)
	}
	return snaps, nil
}

// queueRefunds queues the refunds of failed messages; snaps receives the refunded wallets.
func queueRefunds(b *pgx.Batch, jobs []JobProgress, faults Faults, snaps *[]WalletSnapshot) {
	byAccount := map[uuid.UUID]*refund{}
	var entryIDs, entryAccts, entryJobs []uuid.UUID
	var entryAmounts, entryCounts []int64
	var entryDescs []string
	for _, p := range jobs {
		if p.RefundedUnits == 0 {
			continue
		}
		r := byAccount[p.AccountID]
		if r == nil {
			r = &refund{}
			byAccount[p.AccountID] = r
		}
		r.cents += p.RefundedCents
		r.units += p.RefundedUnits
		if p.RefundedCents == 0 { // nothing was charged (internal accounts): no ledger entry
			continue
		}
		entryIDs, entryAccts, entryJobs = append(entryIDs, NewID()), append(entryAccts, p.AccountID), append(entryJobs, p.JobID)
		// sms_count in SMS parts, as the debit it gives back counts them.
		entryAmounts, entryCounts = append(entryAmounts, p.RefundedCents), append(entryCounts, p.RefundedUnits)
		entryDescs = append(entryDescs, fmt.Sprintf("refund for %d failed message%s", p.Failed, plural(p.Failed)))
	}
	if len(entryIDs) > 0 {
		b.Queue(`INSERT INTO wallet_transactions (id, account_id, type, amount_cents, sms_count, job_id, description)
			SELECT u.id, u.account_id, 'refund', u.amount, u.n, u.job_id, u.description
			FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::bigint[], $5::uuid[], $6::text[])
				AS u(id, account_id, amount, n, job_id, description)`,
			entryIDs, entryAccts, entryAmounts, entryCounts, entryJobs, entryDescs)
	}
	if faults.skipRefunds() {
		clear(byAccount)
	}
	// Wallets before daily spend, each in account order, as accepts lock them: no deadlock.
	queueWalletRefunds(b, byAccount, snaps)
	queueDailySpendRefunds(b, jobs)
}

// queueWalletRefunds returns cents and parts to wallets, locking them in account order.
func queueWalletRefunds(b *pgx.Batch, byAccount map[uuid.UUID]*refund, snaps *[]WalletSnapshot) {
	if len(byAccount) == 0 {
		return
	}
	accts := sortedIDs(byAccount)
	amounts, units := make([]int64, len(accts)), make([]int64, len(accts))
	for i, id := range accts {
		amounts[i], units[i] = byAccount[id].cents, byAccount[id].units
	}
	b.Queue(lockWallets, accts)
	b.Queue(`
		UPDATE wallets w SET balance_cents = w.balance_cents + u.amount,
			total_spent_cents = greatest(w.total_spent_cents - u.amount, 0),
			total_sms_sent = greatest(w.total_sms_sent - u.units, 0),
			lifetime_sms = greatest(w.lifetime_sms - u.units, 0),
			version = w.version + 1, updated_at = now()
		FROM unnest($1::uuid[], $2::bigint[], $3::bigint[]) AS u(account_id, amount, units)
		WHERE w.account_id = u.account_id`+walletsReturning, accts, amounts, units).Query(func(rows pgx.Rows) error {
		return scanWallets(rows, func(w WalletSnapshot) { *snaps = append(*snaps, w) })
	})
}

// queueDailySpendRefunds takes refunds off the spend of the day their job was accepted (UTC),
// so a day's figure is what that day's sends finally cost.
func queueDailySpendRefunds(b *pgx.Batch, jobs []JobProgress) {
	var ids []uuid.UUID
	var cents, units []int64
	for _, p := range jobs {
		if p.RefundedUnits != 0 || p.RefundedCents != 0 {
			ids, cents, units = append(ids, p.JobID), append(cents, p.RefundedCents), append(units, p.RefundedUnits)
		}
	}
	if len(ids) == 0 {
		return
	}
	b.Queue(`INSERT INTO account_days (account_id, day, spend_cents, sms_count)
		SELECT j.account_id, (j.created_at AT TIME ZONE 'UTC')::date, -sum(u.cents), -sum(u.units)
		FROM unnest($1::uuid[], $2::bigint[], $3::bigint[]) AS u(job_id, cents, units) JOIN jobs j ON j.id = u.job_id
		GROUP BY 1, 2 ORDER BY 1, 2
		ON CONFLICT (account_id, day) DO UPDATE SET spend_cents = account_days.spend_cents + excluded.spend_cents,
			sms_count = account_days.sms_count + excluded.sms_count`, ids, cents, units)
}
