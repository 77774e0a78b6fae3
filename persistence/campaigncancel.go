// Cancelling campaigns: the campaign stops, and what was not sent is failed and refunded
// exactly once, through the same transitions as any failed message.

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

// CampaignStateError is a cancel the campaign's status does not allow (it is final). It is
// ErrInvalidState.
type CampaignStateError struct{ Status CampaignStatus }

func (e *CampaignStateError) Error() string {
	return fmt.Sprintf("cannot cancel a campaign that is %s", e.Status)
}

func (e *CampaignStateError) Is(target error) bool { return target == ErrInvalidState }

// CancelCampaign marks one of an account's campaigns cancelled and returns its job. Only a
// queued, scheduled or sending campaign can be; another is a CampaignStateError, another
// account's ErrNotFound.
func (s *Store) CancelCampaign(ctx context.Context, accountID, id uuid.UUID, now time.Time) (uuid.UUID, error) {
	var job uuid.UUID
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status CampaignStatus
		err := tx.QueryRow(ctx, `SELECT job_id, status FROM campaigns WHERE id = $1 AND account_id = $2 FOR UPDATE`, id, accountID).
			Scan(&job, &status)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		switch status {
		case CampaignQueued, CampaignScheduled, CampaignSending:
		default:
			return &CampaignStateError{Status: status}
		}
		_, err = tx.Exec(ctx, `UPDATE campaigns SET status = 'cancelled', completed_at = $2 WHERE id = $1`, id, now)
		return err
	})
	var state *CampaignStateError
	if errors.As(err, &state) || errors.Is(err, ErrNotFound) {
		return uuid.Nil, err // a refusal, said as it is
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("cancel campaign: %w", err)
	}
	return job, nil
}

// cancelledProviderStatus marks messages a cancel stopped.
const cancelledProviderStatus = "CANCELLED"

// CancelRemainder fails and refunds what of a job was never handed to a network: the whole
// of a job not yet expanded (a scheduled or waiting campaign), else its queued messages. The
// caller makes sure no link of this node holds any of them. A message under a submit mark
// is left queued: another node (the account's owner before a takeover) or this one before a
// crash may have handed it to a network, and its submit's outcome, or the ask of the job
// resumed cancelled, settles it. Messages already failed or refunded are not again:
// transitions apply only from queued.
func (s *Store) CancelRemainder(ctx context.Context, jobID uuid.UUID) ([]WalletSnapshot, error) {
	snaps, done, err := s.cancelUnexpanded(ctx, jobID)
	if err != nil || done {
		return snaps, err
	}
	after := uuid.Nil // past the marked ones left queued
	for {
		rows, err := s.pool.Query(ctx, `WITH marked AS (SELECT DISTINCT unnest(s.messages) AS id FROM submit_marks s
				WHERE (SELECT account_id FROM jobs WHERE id = $1) = ANY(s.accounts))
			SELECT m.account_id, m.id FROM jobs j JOIN `+jobMessages+`
			WHERE j.id = $1 AND m.status = 'queued' AND m.id NOT IN (SELECT id FROM marked) AND m.id > $2
			ORDER BY m.id LIMIT 5000`, jobID, after)
		if err != nil {
			return snaps, fmt.Errorf("cancel remainder: %w", err)
		}
		var fails []Failure
		now := time.Now()
		for rows.Next() {
			f := Failure{ProviderStatus: cancelledProviderStatus, Error: "the campaign was cancelled before this message went", At: now}
			if err := rows.Scan(&f.AccountID, &f.MessageID); err != nil {
				rows.Close()
				return snaps, fmt.Errorf("cancel remainder: %w", err)
			}
			fails = append(fails, f)
			after = f.MessageID
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return snaps, fmt.Errorf("cancel remainder: %w", err)
		}
		if len(fails) == 0 {
			return snaps, nil
		}
		res, err := s.FlushReceipts(ctx, ReceiptBatch{Failed: fails})
		if err != nil {
			return snaps, err
		}
		snaps = append(snaps, res.Refunds...)
	}
}

// cancelUnexpanded refunds what of a job was never written as messages, clearing its pending
// list so it never will be: the whole of a job not yet expanded (done), or the recipients of
// a campaign's job its chunks had not reached — the job's totals less what its written
// messages hold, exactly. done is false when messages were written: their queued ones are
// the caller's to fail.
func (s *Store) cancelUnexpanded(ctx context.Context, jobID uuid.UUID) (snaps []WalletSnapshot, done bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		snaps, done = nil, false
		var (
			p        JobProgress
			pending  bool
			expanded int
			counts   []int32
		)
		err := tx.QueryRow(ctx, `SELECT account_id, recipients_count, cost_cents, sms_units, pending_recipients IS NOT NULL,
				expanded, network_counts
			FROM jobs WHERE id = $1 FOR UPDATE`, jobID).Scan(&p.AccountID, &p.Failed, &p.RefundedCents, &p.RefundedUnits,
			&pending, &expanded, &counts)
		if err != nil {
			return fmt.Errorf("lock job: %w", err)
		}
		if !pending {
			return nil
		}
		done, p.JobID = expanded == 0, jobID
		for i, n := range carriers.Networks() {
			if i < len(counts) {
				p.Finished[n] = int(counts[i])
			}
		}
		if expanded > 0 {
			var (
				n, cents, units int64
				byNet           [3]int64
			)
			err := tx.QueryRow(ctx, `SELECT count(*), coalesce(sum(m.cost_cents), 0), coalesce(sum(m.parts), 0),
					count(*) FILTER (WHERE m.network = 1), count(*) FILTER (WHERE m.network = 2), count(*) FILTER (WHERE m.network = 3)
				FROM jobs j JOIN `+jobMessages+` WHERE j.id = $1`, jobID).Scan(&n, &cents, &units, &byNet[0], &byNet[1], &byNet[2])
			if err != nil {
				return fmt.Errorf("written messages: %w", err)
			}
			p.Failed -= int(n)
			p.RefundedCents -= cents
			p.RefundedUnits -= units
			for i, net := range carriers.Networks() {
				p.Finished[net] -= int(byNet[i])
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE jobs SET pending_recipients = NULL WHERE id = $1`, jobID); err != nil {
			return err
		}
		snaps, err = settle(ctx, tx, []JobProgress{p}, s.faults, nil)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("cancel job %s: %w", jobID, err)
	}
	return snaps, done, nil
}
