// Campaigns: a send to a contact group's active contacts, personalised per contact, now or at
// a set time. A campaign owns one job, which carries its messages, counters and refunds; the
// campaign row holds what the customer named and scheduled, and the campaign's own status.

package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// NewCampaign is the campaign a job is accepted for, recorded in the same transaction.
type NewCampaign struct {
	ID          uuid.UUID
	Name        string
	Template    string // the message as written, merge tags and all
	GroupID     uuid.UUID
	GroupName   string
	SenderID    *uuid.UUID
	ScheduledAt *time.Time // nil: now
}

// Status is where a new campaign starts: queued, or scheduled when it has a time.
func (c *NewCampaign) Status() CampaignStatus {
	if c.ScheduledAt != nil {
		return CampaignScheduled
	}
	return CampaignQueued
}

// Campaign is a campaign with its job's counters.
type Campaign struct {
	ID, AccountID, JobID     uuid.UUID
	Name, Message            string
	GroupID                  uuid.UUID
	GroupName                string
	SenderID                 *uuid.UUID
	Status                   CampaignStatus
	ScheduledAt              *time.Time
	TotalRecipients          int
	Delivered, Failed        int
	CostCents, RefundedCents int64
	CreatedAt                time.Time
	StartedAt, CompletedAt   *time.Time
	Reference                *string // the caller's correlation id, kept with the campaign's job
	Suppressed               int     // group members left out at creation: on the suppression list
	Promotional              bool    // its messages carry the opt-out text and wait out quiet hours
}

// campaignColumns read a campaign with its job's counters as of now: the folded counters plus
// what the progress log holds for them (campaignsFrom), so a refund shows in the campaign
// the moment the wallet and the spend trend show it, not a fold later.
const campaignColumns = `c.id, c.account_id, c.job_id, c.name, c.message, c.group_id, c.group_name, c.sender_id,
	c.status, c.scheduled_at, c.total_recipients, j.delivered_count + coalesce(u.delivered, 0),
	j.failed_count + coalesce(u.failed, 0), c.cost_cents, j.refunded_cents + coalesce(u.refunded, 0),
	c.created_at, c.started_at, c.completed_at, j.reference, j.suppressed_count, j.promotional`

// campaignsFrom joins an account's ($1) campaigns to their jobs and the jobs' unfolded counts.
const campaignsFrom = `FROM campaigns c JOIN jobs j ON j.id = c.job_id LEFT JOIN unfolded u ON u.job_id = c.job_id`

func scanCampaign(row pgx.Row) (Campaign, error) {
	var c Campaign
	err := row.Scan(&c.ID, &c.AccountID, &c.JobID, &c.Name, &c.Message, &c.GroupID, &c.GroupName, &c.SenderID,
		&c.Status, &c.ScheduledAt, &c.TotalRecipients, &c.Delivered, &c.Failed, &c.CostCents, &c.RefundedCents,
		&c.CreatedAt, &c.StartedAt, &c.CompletedAt, &c.Reference, &c.Suppressed, &c.Promotional)
	return c, err
}

// queueCampaignInserts records the campaigns of accepted jobs.
func queueCampaignInserts(b *pgx.Batch, jobs []NewJob) {
	for _, j := range jobs {
		c := j.Campaign
		if c == nil {
			continue
		}
		b.Queue(`INSERT INTO campaigns (id, account_id, job_id, name, message, group_id, group_name, sender_id, status,
				scheduled_at, total_recipients, cost_cents)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			c.ID, j.AccountID, j.ID, c.Name, c.Template, c.GroupID, c.GroupName, c.SenderID, c.Status(),
			c.ScheduledAt, j.Recipients, j.CostCents)
	}
}

// Campaigns lists an account's campaigns, newest first (ids are time-ordered): all of them,
// or, with a page size, that many after p.After (campaigns page only by key).
func (s *Store) Campaigns(ctx context.Context, accountID uuid.UUID, p Page) ([]Campaign, error) {
	var limit *int
	if p.Size > 0 {
		limit = &p.Size
	}
	rows, err := s.pool.Query(ctx, unfoldedProgress+`SELECT `+campaignColumns+` `+campaignsFrom+`
		WHERE c.account_id = $1 AND ($2::uuid IS NULL OR c.id < $2) ORDER BY c.id DESC LIMIT $3`, accountID, p.After, limit)
	if err != nil {
		return nil, fmt.Errorf("campaigns: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Campaign, error) { return scanCampaign(r) })
	if err != nil {
		return nil, fmt.Errorf("campaigns: %w", err)
	}
	return out, nil
}

// Campaign returns one of an account's campaigns; another account's, or none, is ErrNotFound.
func (s *Store) Campaign(ctx context.Context, accountID, id uuid.UUID) (Campaign, error) {
	c, err := scanCampaign(s.pool.QueryRow(ctx, unfoldedProgress+`SELECT `+campaignColumns+` `+campaignsFrom+`
		WHERE c.account_id = $1 AND c.id = $2`, accountID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Campaign{}, ErrNotFound
	}
	if err != nil {
		return Campaign{}, fmt.Errorf("campaign: %w", err)
	}
	return c, nil
}

// DueCampaign is a scheduled campaign whose time came: its job is now open for dispatch.
type DueCampaign struct{ ID, AccountID, JobID uuid.UUID }

// StartDueCampaigns moves up to limit scheduled campaigns due by now to sending and opens
// their jobs, in one transaction: each is started once, whichever node or restart asks, and
// a crash after the commit leaves the job open for its tenant to resume.
func (s *Store) StartDueCampaigns(ctx context.Context, now time.Time, limit int) ([]DueCampaign, error) {
	var due []DueCampaign
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		due = due[:0]
		rows, err := tx.Query(ctx, `UPDATE campaigns c SET status = 'sending', started_at = $1
			WHERE c.id IN (SELECT c2.id FROM campaigns c2 JOIN jobs j ON j.id = c2.job_id JOIN accounts a ON a.id = c2.account_id
				WHERE c2.status = 'scheduled' AND c2.scheduled_at <= $1
					AND NOT (j.promotional AND in_quiet_hours(a.quiet_start, a.quiet_end, $1))
				ORDER BY c2.scheduled_at LIMIT $2 FOR UPDATE OF c2 SKIP LOCKED)
			RETURNING c.id, c.account_id, c.job_id`, now, limit)
		if err != nil {
			return err
		}
		var jobs []uuid.UUID
		for rows.Next() {
			var d DueCampaign
			if err := rows.Scan(&d.ID, &d.AccountID, &d.JobID); err != nil {
				rows.Close()
				return err
			}
			due = append(due, d)
			jobs = append(jobs, d.JobID)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(due) == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO open_jobs (job_id, account_id, promotional)
			SELECT j.id, j.account_id, j.promotional FROM jobs j WHERE j.id = ANY($1::uuid[])
			ON CONFLICT DO NOTHING`, jobs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("start due campaigns: %w", err)
	}
	return due, nil
}

// markCampaignSending moves a queued campaign to sending when its job is expanded.
func markCampaignSending(ctx context.Context, tx pgx.Tx, jobID uuid.UUID) error {
	_, err := tx.Exec(ctx, `UPDATE campaigns SET status = 'sending', started_at = coalesce(started_at, now())
		WHERE job_id = $1 AND status = 'queued'`, jobID)
	if err != nil {
		return fmt.Errorf("campaign sending: %w", err)
	}
	return nil
}

// finishCampaigns closes the campaigns of jobs whose every message is now final, in the
// transaction that found them complete: completed when anything was delivered, else failed,
// with a campaign_completed notification either way.
func finishCampaigns(ctx context.Context, tx pgx.Tx, jobs []uuid.UUID) error {
	// The campaign.completed events go to the endpoints in force (see webhookview.go).
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, hookLockKey); err != nil {
		return fmt.Errorf("finish campaigns: %w", err)
	}
	_, err := tx.Exec(ctx, `WITH done AS (
			UPDATE campaigns c SET status = CASE WHEN j.delivered_count > 0 THEN 'completed' ELSE 'failed' END,
				completed_at = now(), started_at = coalesce(c.started_at, now())
			FROM jobs j
			WHERE j.id = c.job_id AND c.job_id = ANY($1::uuid[]) AND c.status IN ('queued', 'sending')
			RETURNING c.id, c.job_id, c.account_id, c.name, c.status, c.total_recipients, j.delivered_count,
				j.failed_count, c.completed_at),
		hooks AS (
			INSERT INTO webhook_events (endpoint_id, types, data)
			SELECT e.id, ARRAY[$2::smallint], jsonb_build_object('campaign_id', d.id, 'job_id', d.job_id, 'name', d.name,
				'status', d.status, 'total_recipients', d.total_recipients, 'delivered', d.delivered_count,
				'failed', d.failed_count, 'completed_at', d.completed_at)
			FROM done d JOIN webhook_endpoints e ON e.account_id = d.account_id AND e.enabled AND e.event_mask & $3 <> 0)
		INSERT INTO notifications (id, account_id, type, title, message)
		SELECT tuma_uuidv7(), account_id, 'campaign_completed',
			format('Campaign "%s" %s', name, CASE WHEN status = 'completed' THEN 'completed' ELSE 'failed' END),
			format('%s of %s messages delivered, %s failed.', delivered_count, total_recipients, failed_count)
		FROM done`, jobs, EventCampaignDone.code(), EventCampaignDone.bit())
	if err != nil {
		return fmt.Errorf("finish campaigns: %w", err)
	}
	return nil
}
