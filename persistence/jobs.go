// Jobs: an accepted send (or a campaign batch) and its expansion into message rows.

package persistence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
)

// JobRecord is a stored job, as recovery and job actors read it.
type JobRecord struct {
	NewJob
	Status    JobStatus
	CreatedAt time.Time
	Cancelled bool // its campaign was cancelled: what is still queued is not to be sent
	Expanded  int  // pending recipients already written as messages (a campaign, chunk by chunk)
}

const jobColumns = `j.id, j.account_id, j.campaign_id, j.source, j.message, j.shared_prefix, j.senders, j.prefixed,
	j.price_cents, j.recipients_count, j.sms_units, j.cost_cents, j.pending_recipients, j.status, j.created_at, j.expanded,
	j.reference, coalesce((SELECT c.status = 'cancelled' FROM campaigns c WHERE c.job_id = j.id), false), j.promotional, j.opt_out`

func scanJob(row pgx.Row) (JobRecord, error) {
	var (
		j        JobRecord
		senders  []string
		prefixed []bool
	)
	err := row.Scan(&j.ID, &j.AccountID, &j.CampaignID, &j.Source, &j.Message, &j.SharedPrefix, &senders, &prefixed,
		&j.PriceCents, &j.Recipients, &j.Units, &j.CostCents, &j.Pending, &j.Status, &j.CreatedAt, &j.Expanded, &j.Reference, &j.Cancelled,
		&j.Promotional, &j.OptOut)
	if err != nil {
		return JobRecord{}, err
	}
	copy(j.Senders[1:], senders)
	copy(j.Prefixed[1:], prefixed)
	return j, nil
}

// JobRecord returns a stored job whatever its account (the engine resumes jobs by id).
func (s *Store) JobRecord(ctx context.Context, id uuid.UUID) (JobRecord, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs j WHERE j.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return JobRecord{}, ErrNotFound
	}
	if err != nil {
		return JobRecord{}, fmt.Errorf("job record: %w", err)
	}
	return j, nil
}

// OpenJobs lists up to limit of an account's unfinished jobs after the given one, oldest
// first, that a tenant incarnation holding fence epoch fence did not accept itself: those with
// ids before its start (before) and those accepted under an older epoch, whatever their ids
// (another node's incarnation commits jobs until this one takes the fence). A tenant resumes
// its work a page at a time, so its backlog never decides how much memory it takes. Inside the
// account's quiet hours it leaves out the promotional ones (promotional false).
func (s *Store) OpenJobs(ctx context.Context, accountID, after, before uuid.UUID, fence int64, limit int, promotional bool) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `SELECT job_id FROM open_jobs WHERE account_id = $1 AND job_id > $2
		AND (job_id < $3 OR epoch < $6) AND (NOT promotional OR $5) ORDER BY job_id LIMIT $4`,
		accountID, after, before, limit, promotional, fence)
	if err != nil {
		return nil, fmt.Errorf("open jobs: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("open jobs: %w", err)
	}
	return ids, nil
}

// HeldPromotional reports whether the account has unfinished promotional jobs: a tenant that
// resumed without them inside its quiet hours must wake when they end.
func (s *Store) HeldPromotional(ctx context.Context, accountID uuid.UUID) (bool, error) {
	var held bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM open_jobs WHERE account_id = $1 AND promotional)`, accountID).Scan(&held)
	if err != nil {
		return false, fmt.Errorf("held promotional jobs: %w", err)
	}
	return held, nil
}

// AccountsWithOpenJobs lists up to limit accounts with unfinished jobs, after the given one in
// id order: recovery walks them to wake their tenants.
func (s *Store) AccountsWithOpenJobs(ctx context.Context, after uuid.UUID, limit int) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT account_id FROM open_jobs WHERE account_id > $1 ORDER BY account_id LIMIT $2`,
		after, limit)
	if err != nil {
		return nil, fmt.Errorf("accounts with open jobs: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("accounts with open jobs: %w", err)
	}
	return ids, nil
}

// HeldElsewhere is a page of the accounts with unfinished jobs, walked in id order:
// Visited of them from the cursor on, the last being Last, and among them those whose tenant
// fence another node holds (or none does).
type HeldElsewhere struct {
	Visited  int
	Last     uuid.UUID
	Accounts []uuid.UUID
}

// AccountsHeldElsewhere visits up to limit accounts with unfinished jobs after the given one
// and names those whose fence a node other than node holds, or none: where this node owns
// such an account and runs no tenant for it, nobody runs those jobs (a handoff that raced a
// retiring tenant). One index probe per account, however many jobs each has.
func (s *Store) AccountsHeldElsewhere(ctx context.Context, node string, after uuid.UUID, limit int) (HeldElsewhere, error) {
	rows, err := s.pool.Query(ctx, `
		WITH RECURSIVE a(id, n) AS (
			SELECT (SELECT account_id FROM open_jobs WHERE account_id > $2 ORDER BY account_id LIMIT 1), 1
			UNION ALL
			SELECT (SELECT account_id FROM open_jobs WHERE account_id > a.id ORDER BY account_id LIMIT 1), a.n + 1
			FROM a WHERE a.id IS NOT NULL AND a.n < $3)
		SELECT a.id, f.node IS DISTINCT FROM $1 FROM a LEFT JOIN tenant_fences f ON f.account_id = a.id
		WHERE a.id IS NOT NULL`, node, after, limit)
	if err != nil {
		return HeldElsewhere{}, fmt.Errorf("accounts held elsewhere: %w", err)
	}
	var h HeldElsewhere
	var id uuid.UUID
	var elsewhere bool
	_, err = pgx.ForEachRow(rows, []any{&id, &elsewhere}, func() error {
		h.Visited++
		if bytes.Compare(id[:], h.Last[:]) > 0 {
			h.Last = id
		}
		if elsewhere {
			h.Accounts = append(h.Accounts, id)
		}
		return nil
	})
	if err != nil {
		return HeldElsewhere{}, fmt.Errorf("accounts held elsewhere: %w", err)
	}
	return h, nil
}

// NewJob is an accepted send, written with its debit in one transaction.
type NewJob struct {
	ID            uuid.UUID
	AccountID     uuid.UUID
	CampaignID    *uuid.UUID
	Source        string
	Message       string
	SharedPrefix  string
	Senders       [carriers.NetworkSlots]string // by network
	Prefixed      [carriers.NetworkSlots]bool   // by network: the shared sender's company prefix
	PriceCents    int64
	Recipients    int
	NetworkCounts [carriers.NetworkSlots]int // recipients per network
	Units         int64                      // SMS units: parts summed over recipients
	CostCents     int64
	Inline        []NewMessage // written now (small jobs)
	Pending       []byte       // EncodeRecipients, expanded later (large jobs)
	Notices       []NewNotification
	Idempotency   *IdempotencyKey // completed in the same transaction
	Campaign      *NewCampaign    // the campaign this job sends (Pending is then EncodeAudience)
	Reference     *string         // the caller's correlation id (ValidReference), shown with every message
	Suppressed    int             // recipients left out as suppressed (not in Recipients)
	// Promotional: held in the account's quiet hours, its text ending in OptOut (the account's
	// opt-out instruction with its leading space, or "" when the text already carried it).
	Promotional bool
	OptOut      string
	// Fence is the epoch of the tenant incarnation accepting it (TakeFence); 0: none (a job
	// written outside the engine). The debit fails with ErrFenced once the epoch is replaced.
	Fence int64
	// Receipt is the delivery receipt a job of source smpp owes its client, written on its
	// messages. Only inline messages get it: JobRecord does not keep it, so a job expanded
	// later owes none (an SMPP send is of one recipient, always written inline).
	Receipt ReceiptMode
}

// single reports a 1-recipient job outside a campaign: its message is its progress, so the
// fold closes it without updating its row (migration 032).
func (j *NewJob) single() bool {
	return j.Recipients == 1 && j.CampaignID == nil && j.Campaign == nil
}

// ExpandJob writes message rows of a job accepted with pending recipients: the pending
// recipients from index from on (msgs, in the pending list's order), clearing the list when
// final. A send's job is written in one go; a campaign's a chunk at a time. It reports false,
// writing nothing, when the job is not where the caller thinks: expanded further already (by
// an earlier run that committed just before a crash) or cancelled.
func (s *Store) ExpandJob(ctx context.Context, j NewJob, from int, msgs []NewMessage, final bool) (bool, error) {
	expanded := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			pending  bool
			done     int
			accepted time.Time
		)
		err := tx.QueryRow(ctx, `SELECT pending_recipients IS NOT NULL, expanded, created_at FROM jobs WHERE id = $1 FOR UPDATE`, j.ID).
			Scan(&pending, &done, &accepted)
		if err != nil {
			return fmt.Errorf("lock job: %w", err)
		}
		if !pending || done != from || len(msgs) == 0 {
			return nil
		}
		// A message was accepted with its job, whenever its row is written: created_at says so.
		var rows copyRows
		rows.reset()
		rows.grow(len(msgs) * 192) // 15 fields, four ids, number and sender (personalised texts grow it)
		owed, failedOnly := j.receiptColumns()
		for _, m := range msgs {
			rows.row(15)
			rows.uuid(m.ID)
			rows.uuid(j.ID)
			rows.uuid(j.AccountID)
			rows.optUUID(j.CampaignID)
			rows.text(m.Recipient)
			rows.int2(int16(m.Network))
			rows.text(m.Sender)
			rows.optText(m.Body)
			rows.bool(m.Prefixed)
			rows.int2(int16(m.Parts))
			rows.int2(int16(m.Encoding))
			rows.int4(int32(m.CostCents))
			rows.timestamptz(accepted)
			rows.bool(owed)
			rows.bool(failedOnly)
		}
		if _, err := rows.copyTo(ctx, tx, "messages",
			"id, job_id, account_id, campaign_id, recipient, network, sender, body, prefixed, parts, encoding, cost_cents, created_at, smpp, smpp_failed_only"); err != nil {
			return fmt.Errorf("copy messages: %w", err)
		}
		if j.CampaignID != nil && from == 0 {
			if err := markCampaignSending(ctx, tx, j.ID); err != nil {
				return err
			}
		}
		// Later chunks' ids are later (UUIDv7): the job's range grows to cover them.
		lo, hi := messageRange(msgs)
		if _, err := tx.Exec(ctx, `UPDATE jobs SET status = 'sending', expanded = expanded + $4,
				pending_recipients = CASE WHEN $5 THEN NULL ELSE pending_recipients END,
				first_message_id = least(first_message_id, $2), last_message_id = greatest(last_message_id, $3)
			WHERE id = $1`, j.ID, lo, hi, len(msgs), final); err != nil {
			return err
		}
		expanded = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("expand job %s: %w", j.ID, err)
	}
	return expanded, nil
}

// Job is a stored job as the API shows it.
type Job struct {
	ID              uuid.UUID
	RecipientsCount int
	SMSUnits        int64 // SMS parts billed, summed over recipients
	CostCents       int64
	Status          JobStatus
	Reference       *string
	Suppressed      int // recipients left out at acceptance as suppressed
}

// JobByID returns one of the account's jobs.
func (s *Store) JobByID(ctx context.Context, accountID, id uuid.UUID) (Job, error) {
	var j Job
	err := s.pool.QueryRow(ctx, `SELECT id, recipients_count, sms_units, cost_cents, status, reference, suppressed_count FROM jobs
		WHERE id = $1 AND account_id = $2`, id, accountID).Scan(&j.ID, &j.RecipientsCount, &j.SMSUnits, &j.CostCents, &j.Status, &j.Reference,
		&j.Suppressed)
	if errors.Is(err, pgx.ErrNoRows) {
		return Job{}, ErrNotFound
	}
	if err != nil {
		return Job{}, fmt.Errorf("job by id: %w", err)
	}
	return j, nil
}
