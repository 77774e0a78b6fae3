// Job progress: the counters of jobs and accounts that status transitions move.

package persistence

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
)

// JobProgress is how status writes moved a job: deltas to its counters and its account's.
type JobProgress struct {
	JobID, AccountID        uuid.UUID
	Sent, Delivered, Failed int // net change of messages in each state (sent falls as they finish)
	RefundedCents           int64
	RefundedUnits           int64                      // SMS parts refunded: they no longer count towards the tier
	Finished                [carriers.NetworkSlots]int // messages that became final, by network
}

// queueProgressLog records, in the transaction of the status writes they summarise, the
// counter deltas of jobs and accounts. Counters are aggregates that many flushes touch; writing
// them in every flush doubled the database work of small sends, so FoldProgress applies the log
// in larger, less frequent batches. Because the log commits with the transitions, a crash
// loses nothing and recovery needs no recount.
func queueProgressLog(b *pgx.Batch, jobs []JobProgress) {
	n := len(jobs)
	ids, accts := make([]uuid.UUID, n), make([]uuid.UUID, n)
	sent, deliv, failed, refunds := make([]int32, n), make([]int32, n), make([]int32, n), make([]int64, n)
	finished := make([]int32, 0, 3*n)
	for i, p := range jobs {
		ids[i], accts[i] = p.JobID, p.AccountID
		sent[i], deliv[i], failed[i], refunds[i] = int32(p.Sent), int32(p.Delivered), int32(p.Failed), p.RefundedCents
		for _, net := range carriers.Networks() {
			finished = append(finished, int32(p.Finished[net]))
		}
	}
	b.Queue(`INSERT INTO progress_log (jobs, accounts, sent, delivered, failed, refunded, finished)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, ids, accts, sent, deliv, failed, refunds, finished)
}

// FoldResult is what one FoldProgress did.
type FoldResult struct {
	Entries   int         // log entries folded (0: the log was empty)
	Completed []uuid.UUID // jobs whose every message is now final
}

// FoldProgress applies up to limit entries of the progress log to job counters, job completion
// and per-account counts, deleting them in the same transaction, so each entry counts exactly
// once whoever folds and whenever a crash strikes.
func (s *Store) FoldProgress(ctx context.Context, limit int) (FoldResult, error) {
	var res FoldResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res = FoldResult{}
		rows, err := tx.Query(ctx, `DELETE FROM progress_log WHERE id IN
				(SELECT id FROM progress_log ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
			RETURNING jobs, accounts, sent, delivered, failed, refunded, finished`, limit)
		if err != nil {
			return err
		}
		byJob := map[uuid.UUID]*JobProgress{}
		for rows.Next() {
			var (
				ids, accts          []uuid.UUID
				sent, deliv, failed []int32
				finished            []int32
				refunds             []int64
			)
			if err := rows.Scan(&ids, &accts, &sent, &deliv, &failed, &refunds, &finished); err != nil {
				rows.Close()
				return err
			}
			res.Entries++
			for i, id := range ids {
				p := byJob[id]
				if p == nil {
					p = &JobProgress{JobID: id, AccountID: accts[i]}
					byJob[id] = p
				}
				p.Sent += int(sent[i])
				p.Delivered += int(deliv[i])
				p.Failed += int(failed[i])
				p.RefundedCents += refunds[i]
				for k, net := range carriers.Networks() {
					p.Finished[net] += int(finished[3*i+k])
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(byJob) == 0 {
			return nil
		}
		jobs := make([]JobProgress, 0, len(byJob))
		for _, p := range byJob {
			jobs = append(jobs, *p)
		}
		res.Completed, err = applyProgress(ctx, tx, jobs, s.faults.skipCounts())
		return err
	})
	if err != nil {
		return FoldResult{}, fmt.Errorf("fold progress: %w", err)
	}
	return res, nil
}

func applyProgress(ctx context.Context, tx pgx.Tx, jobs []JobProgress, skipCounts bool) ([]uuid.UUID, error) {
	slices.SortFunc(jobs, func(a, b JobProgress) int { return strings.Compare(string(a.JobID[:]), string(b.JobID[:])) })
	closed, err := closeSingles(ctx, tx, jobs)
	if err != nil {
		return nil, err
	}
	var ids []uuid.UUID
	var deliv, failed, f1, f2, f3 []int32
	var refunds []int64
	byAccount := map[uuid.UUID]*[3]int64{}
	for _, p := range jobs {
		c := byAccount[p.AccountID]
		if c == nil {
			c = new([3]int64)
			byAccount[p.AccountID] = c
		}
		c[0], c[1], c[2] = c[0]+int64(p.Sent), c[1]+int64(p.Delivered), c[2]+int64(p.Failed)
		// Messages going from queued to sent change the account's count only: the job row
		// changes when they finish (migration 015).
		if p.Delivered == 0 && p.Failed == 0 && p.RefundedCents == 0 || closed[p.JobID] {
			continue
		}
		ids, refunds = append(ids, p.JobID), append(refunds, p.RefundedCents)
		deliv, failed = append(deliv, int32(p.Delivered)), append(failed, int32(p.Failed))
		f1 = append(f1, int32(p.Finished[carriers.Safaricom]))
		f2 = append(f2, int32(p.Finished[carriers.Airtel]))
		f3 = append(f3, int32(p.Finished[carriers.Telkom]))
	}
	completed := make([]uuid.UUID, 0, len(closed))
	for id := range closed {
		completed = append(completed, id)
	}
	if len(ids) > 0 {
		folded, err := foldJobs(ctx, tx, ids, deliv, failed, refunds, f1, f2, f3)
		if err != nil {
			return nil, err
		}
		completed = append(completed, folded...)
	}
	if skipCounts {
		return completed, nil
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

// foldJobs adds the progress of jobs ids to their rows and closes those now complete,
// finishing their campaigns. It returns the jobs it closed.
func foldJobs(ctx context.Context, tx pgx.Tx, ids []uuid.UUID, deliv, failed []int32, refunds []int64, f1, f2, f3 []int32) ([]uuid.UUID, error) {
	rows, err := tx.Query(ctx, `
		UPDATE jobs j SET
			delivered_count = j.delivered_count + u.delivered,
			failed_count = j.failed_count + u.failed,
			refunded_cents = j.refunded_cents + u.refund,
			finished = ARRAY[j.finished[1] + u.f1, j.finished[2] + u.f2, j.finished[3] + u.f3],
			status = CASE WHEN j.delivered_count + u.delivered + j.failed_count + u.failed >= j.recipients_count
				THEN 'completed' ELSE 'sending' END,
			completed_at = CASE WHEN j.delivered_count + u.delivered + j.failed_count + u.failed >= j.recipients_count
				THEN coalesce(j.completed_at, now()) END
		FROM unnest($1::uuid[], $2::integer[], $3::integer[], $4::bigint[], $5::integer[], $6::integer[], $7::integer[])
			AS u(id, delivered, failed, refund, f1, f2, f3)
		WHERE j.id = u.id
		RETURNING j.id, j.status = 'completed'`, ids, deliv, failed, refunds, f1, f2, f3)
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
	if len(completed) == 0 {
		return nil, nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM open_jobs WHERE job_id = ANY($1::uuid[])`, completed); err != nil {
		return nil, fmt.Errorf("close jobs: %w", err)
	}
	if err := finishCampaigns(ctx, tx, completed); err != nil {
		return nil, err
	}
	return completed, nil
}

// closeSingles closes the 1-recipient jobs outside campaigns (open_jobs.single) whose message
// became final in jobs: their open_jobs rows go and their jobs rows stay as accepted, the
// message being their progress (migration 032). It returns the jobs it closed.
func closeSingles(ctx context.Context, tx pgx.Tx, jobs []JobProgress) (map[uuid.UUID]bool, error) {
	var final []uuid.UUID
	for _, p := range jobs {
		if p.Delivered > 0 || p.Failed > 0 {
			final = append(final, p.JobID)
		}
	}
	if len(final) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `DELETE FROM open_jobs WHERE job_id = ANY($1::uuid[]) AND single RETURNING job_id`, final)
	if err != nil {
		return nil, fmt.Errorf("close single jobs: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("close single jobs: %w", err)
	}
	closed := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		closed[id] = true
	}
	return closed, nil
}

// Backlog is what unfinished jobs still hold: messages not yet delivered or failed, by network
// (carriers.Network indexes; 0 unused).
type Backlog [carriers.NetworkSlots]int64

// Backlog sums the open jobs' messages that are not final, by network. It reads one row per
// open job, not their messages.
func (s *Store) Backlog(ctx context.Context) (Backlog, error) {
	var b Backlog
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(j.network_counts[1] - j.finished[1]), 0),
			coalesce(sum(j.network_counts[2] - j.finished[2]), 0), coalesce(sum(j.network_counts[3] - j.finished[3]), 0)
		FROM open_jobs o JOIN jobs j ON j.id = o.job_id`).Scan(&b[1], &b[2], &b[3])
	if err != nil {
		return Backlog{}, fmt.Errorf("backlog: %w", err)
	}
	return b, nil
}
