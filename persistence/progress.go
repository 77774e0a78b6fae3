// Job progress: the counters of jobs and accounts that status transitions move.

package persistence

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// JobProgress is how status writes moved a job: deltas to its counters and its account's.
type JobProgress struct {
	JobID, AccountID        uuid.UUID
	Sent, Delivered, Failed int // net change of messages in each state (sent falls as they finish)
	RefundedCents           int64
}

// ApplyProgress writes job counters, job completion and per-account counts for the deltas of
// one or more flushes, in one transaction. It returns the jobs now complete. Only the
// receipts actor (and recovery, before it starts) calls it, so it needs no row-lock ordering.
func (s *Store) ApplyProgress(ctx context.Context, jobs []JobProgress) (completed []uuid.UUID, err error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		completed, err = applyProgress(ctx, tx, jobs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("apply progress: %w", err)
	}
	return completed, nil
}

func applyProgress(ctx context.Context, tx pgx.Tx, jobs []JobProgress) ([]uuid.UUID, error) {
	slices.SortFunc(jobs, func(a, b JobProgress) int { return strings.Compare(string(a.JobID[:]), string(b.JobID[:])) })
	n := len(jobs)
	ids := make([]uuid.UUID, n)
	sent, deliv, failed, refunds := make([]int32, n), make([]int32, n), make([]int32, n), make([]int64, n)
	byAccount := map[uuid.UUID]*[3]int64{}
	for i, p := range jobs {
		ids[i] = p.JobID
		sent[i], deliv[i], failed[i], refunds[i] = int32(p.Sent), int32(p.Delivered), int32(p.Failed), p.RefundedCents
		c := byAccount[p.AccountID]
		if c == nil {
			c = new([3]int64)
			byAccount[p.AccountID] = c
		}
		c[0], c[1], c[2] = c[0]+int64(p.Sent), c[1]+int64(p.Delivered), c[2]+int64(p.Failed)
	}
	rows, err := tx.Query(ctx, `
		UPDATE jobs j SET
			sent_count = j.sent_count + u.sent,
			delivered_count = j.delivered_count + u.delivered,
			failed_count = j.failed_count + u.failed,
			refunded_cents = j.refunded_cents + u.refund,
			status = CASE WHEN j.delivered_count + u.delivered + j.failed_count + u.failed >= j.recipients_count
				THEN 'completed' ELSE 'sending' END,
			completed_at = CASE WHEN j.delivered_count + u.delivered + j.failed_count + u.failed >= j.recipients_count
				THEN coalesce(j.completed_at, now()) END
		FROM unnest($1::uuid[], $2::integer[], $3::integer[], $4::integer[], $5::bigint[]) AS u(id, sent, delivered, failed, refund)
		WHERE j.id = u.id
		RETURNING j.id, j.status = 'completed'`, ids, sent, deliv, failed, refunds)
	if err != nil {
		return nil, fmt.Errorf("update jobs: %w", err)
	}
	var completed []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		var done bool
		if err := rows.Scan(&id, &done); err != nil {
			rows.Close()
			return nil, err
		}
		if done {
			completed = append(completed, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("update jobs: %w", err)
	}
	if len(completed) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM open_jobs WHERE job_id = ANY($1::uuid[])`, completed); err != nil {
			return nil, fmt.Errorf("close jobs: %w", err)
		}
	}
	accts := sortedIDs(byAccount)
	se, d, f := make([]int64, len(accts)), make([]int64, len(accts)), make([]int64, len(accts))
	for i, a := range accts {
		se[i], d[i], f[i] = byAccount[a][0], byAccount[a][1], byAccount[a][2]
	}
	_, err = tx.Exec(ctx, `UPDATE message_counts c SET sent = c.sent + u.s, delivered = c.delivered + u.d, failed = c.failed + u.f
		FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::bigint[]) AS u(account_id, s, d, f)
		WHERE c.account_id = u.account_id`, accts, se, d, f)
	if err != nil {
		return nil, fmt.Errorf("update message counts: %w", err)
	}
	return completed, nil
}

// RecountOpenJobs makes the counters of every unfinished job (and their accounts' counts)
// agree with its messages, completing the jobs that are done. The engine batches counter
// writes, so after a crash they can trail the messages; recovery runs this before resuming.
func (s *Store) RecountOpenJobs(ctx context.Context) (completed int, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT j.id, j.account_id, c.sent - j.sent_count, c.delivered - j.delivered_count,
				c.failed - j.failed_count, c.refunded - j.refunded_cents
			FROM open_jobs o JOIN jobs j ON j.id = o.job_id,
				LATERAL (SELECT count(*) FILTER (WHERE m.status = 'sent') AS sent,
						count(*) FILTER (WHERE m.status = 'delivered') AS delivered,
						count(*) FILTER (WHERE m.status = 'failed') AS failed,
						coalesce(sum(m.cost_cents) FILTER (WHERE m.status = 'failed'), 0) AS refunded
					FROM messages m WHERE m.job_id = j.id) AS c`)
		if err != nil {
			return err
		}
		var diffs []JobProgress
		for rows.Next() {
			var p JobProgress
			if err := rows.Scan(&p.JobID, &p.AccountID, &p.Sent, &p.Delivered, &p.Failed, &p.RefundedCents); err != nil {
				rows.Close()
				return err
			}
			diffs = append(diffs, p)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// Every open job goes through, even unchanged ones: a job whose last counters were
		// written just before the crash may be complete already.
		done, err := applyProgress(ctx, tx, diffs)
		completed = len(done)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("recount open jobs: %w", err)
	}
	return completed, nil
}
