package persistence

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
)

// JobRecord is a stored job, as recovery and job actors read it.
type JobRecord struct {
	NewJob
	Status    string
	CreatedAt time.Time
}

const jobColumns = `j.id, j.account_id, j.campaign_id, j.source, j.message, j.shared_prefix, j.senders, j.prefixed,
	j.price_cents, j.recipients_count, j.sms_units, j.cost_cents, j.pending_recipients, j.status, j.created_at`

func scanJob(row pgx.Row) (JobRecord, error) {
	var (
		j        JobRecord
		senders  []string
		prefixed []bool
	)
	err := row.Scan(&j.ID, &j.AccountID, &j.CampaignID, &j.Source, &j.Message, &j.SharedPrefix, &senders, &prefixed,
		&j.PriceCents, &j.Recipients, &j.Units, &j.CostCents, &j.Pending, &j.Status, &j.CreatedAt)
	if err != nil {
		return JobRecord{}, err
	}
	copy(j.Senders[:], senders)
	copy(j.Prefixed[:], prefixed)
	return j, nil
}

// UnfinishedJobs lists every job not yet completed, oldest first, for recovery.
func (s *Store) UnfinishedJobs(ctx context.Context) ([]JobRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+jobColumns+` FROM open_jobs o JOIN jobs j ON j.id = o.job_id ORDER BY o.job_id`)
	if err != nil {
		return nil, fmt.Errorf("unfinished jobs: %w", err)
	}
	defer rows.Close()
	var out []JobRecord
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("unfinished jobs: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// OpenMessage is a message that has not reached a final state.
type OpenMessage struct {
	NewMessage
	Status     string // queued | sent
	ProviderID string // set when sent
}

// OpenMessages returns up to limit of a job's messages still queued or sent with ids after
// `after` (uuid.Nil: from the start), in id order: a job is read a page at a time, so its
// size never decides how much memory it takes.
func (s *Store) OpenMessages(ctx context.Context, jobID, after uuid.UUID, limit int) ([]OpenMessage, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, recipient, network, sender, body, prefixed, parts, encoding, cost_cents,
			status, coalesce(provider_message_id, '')
		FROM messages WHERE job_id = $1 AND id > $2 AND status IN ('queued', 'sent') ORDER BY id LIMIT $3`, jobID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("open messages: %w", err)
	}
	defer rows.Close()
	var out []OpenMessage
	for rows.Next() {
		var (
			m                        OpenMessage
			network, parts, encoding int16
			cost                     int32
		)
		if err := rows.Scan(&m.ID, &m.Recipient, &network, &m.Sender, &m.Body, &m.Prefixed, &parts, &encoding, &cost,
			&m.Status, &m.ProviderID); err != nil {
			return nil, fmt.Errorf("open messages: %w", err)
		}
		m.Network, m.Parts, m.Encoding, m.CostCents = carriers.Network(network), int(parts), carriers.Encoding(encoding), int64(cost)
		out = append(out, m)
	}
	return out, rows.Err()
}

// StaleMessage is a sent message still waiting for its receipt.
type StaleMessage struct {
	ProviderID string
	Network    carriers.Network
}

// StaleSent lists up to limit messages of unfinished jobs that were sent before `before` and
// still have no receipt.
func (s *Store) StaleSent(ctx context.Context, before time.Time, limit int) ([]StaleMessage, error) {
	rows, err := s.pool.Query(ctx, `SELECT m.provider_message_id, m.network
		FROM open_jobs o JOIN messages m ON m.job_id = o.job_id
		WHERE m.status = 'sent' AND m.sent_at < $1 AND m.provider_message_id IS NOT NULL
		LIMIT $2`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("stale sent messages: %w", err)
	}
	defer rows.Close()
	var out []StaleMessage
	for rows.Next() {
		var m StaleMessage
		var net int16
		if err := rows.Scan(&m.ProviderID, &net); err != nil {
			return nil, fmt.Errorf("stale sent messages: %w", err)
		}
		m.Network = carriers.Network(net)
		out = append(out, m)
	}
	return out, rows.Err()
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
