// Messages: one row per recipient, how the API lists and finds them, and what recovery reads.

package persistence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
)

// NewMessage is one message row written with its job or at expansion.
type NewMessage struct {
	ID        uuid.UUID
	Recipient string // E.164
	Network   carriers.Network
	Sender    string
	Prefixed  bool
	Body      *string // personalised text; nil means the job's text
	Parts     int
	Encoding  carriers.Encoding
	CostCents int64
}

// messageRows holds message rows column by column, for unnest and COPY alike.
type messageRows struct {
	ids, jobs, accts []uuid.UUID
	campaigns        []*uuid.UUID
	recipients       []string
	networks         []int16
	senders          []string
	bodies           []*string
	prefixed         []bool
	smpp             []bool // of a job sent over the SMPP server whose client asked for a receipt
	smppFailedOnly   []bool // … only if the message fails
	parts, encodings []int16
	costs            []int32
}

func newMessageRows(n int) *messageRows {
	return &messageRows{
		ids: make([]uuid.UUID, 0, n), jobs: make([]uuid.UUID, 0, n), accts: make([]uuid.UUID, 0, n),
		campaigns: make([]*uuid.UUID, 0, n), recipients: make([]string, 0, n), networks: make([]int16, 0, n),
		senders: make([]string, 0, n), bodies: make([]*string, 0, n), prefixed: make([]bool, 0, n), smpp: make([]bool, 0, n),
		smppFailedOnly: make([]bool, 0, n), parts: make([]int16, 0, n), encodings: make([]int16, 0, n), costs: make([]int32, 0, n),
	}
}

func (m *messageRows) add(j NewJob, msg NewMessage) {
	m.ids = append(m.ids, msg.ID)
	m.jobs = append(m.jobs, j.ID)
	m.accts = append(m.accts, j.AccountID)
	m.campaigns = append(m.campaigns, j.CampaignID)
	m.recipients = append(m.recipients, msg.Recipient)
	m.networks = append(m.networks, int16(msg.Network))
	m.senders = append(m.senders, msg.Sender)
	m.bodies = append(m.bodies, msg.Body)
	m.prefixed = append(m.prefixed, msg.Prefixed)
	owed, failedOnly := j.receiptColumns()
	m.smpp = append(m.smpp, owed)
	m.smppFailedOnly = append(m.smppFailedOnly, failedOnly)
	m.parts = append(m.parts, int16(msg.Parts))
	m.encodings = append(m.encodings, int16(msg.Encoding))
	m.costs = append(m.costs, int32(msg.CostCents))
}

// Message is a stored message as the API shows it.
type Message struct {
	ID, JobID         uuid.UUID
	AccountID         uuid.UUID
	CampaignID        *uuid.UUID
	Recipient         string
	Network           carriers.Network
	Sender            string
	Text              string
	Parts             int
	Encoding          carriers.Encoding
	CostCents         int64
	Status            MessageStatus
	ProviderStatus    string
	ProviderMessageID *string
	Source            string
	CreatedAt         time.Time
	SentAt            *time.Time
	DeliveredAt       *time.Time
	FailedAt          *time.Time
	Reference         *string // the caller's correlation id of the message's job
}

const messageColumns = `m.id, m.job_id, m.account_id, m.campaign_id, m.recipient, m.network, m.sender,
	coalesce(m.body, CASE WHEN m.prefixed THEN j.shared_prefix ELSE '' END || j.message || j.opt_out),
	m.parts, m.encoding, m.cost_cents, m.status, m.provider_status, m.provider_message_id, j.source,
	m.created_at, m.sent_at, m.delivered_at, m.failed_at, j.reference`

func scanMessage(row pgx.Row) (Message, error) {
	var (
		m                        Message
		network, parts, encoding int16
		cost                     int32
	)
	err := row.Scan(&m.ID, &m.JobID, &m.AccountID, &m.CampaignID, &m.Recipient, &network, &m.Sender, &m.Text,
		&parts, &encoding, &cost, &m.Status, &m.ProviderStatus, &m.ProviderMessageID, &m.Source,
		&m.CreatedAt, &m.SentAt, &m.DeliveredAt, &m.FailedAt, &m.Reference)
	m.Network, m.Parts, m.Encoding, m.CostCents = carriers.Network(network), int(parts), carriers.Encoding(encoding), int64(cost)
	return m, err
}

// MessageFilter narrows a message list; zero fields do not filter.
type MessageFilter struct {
	Status     MessageStatus
	JobID      *uuid.UUID
	CampaignID *uuid.UUID
	Reference  *string // the messages of the account's jobs with this reference
	Network    carriers.Network
	From, To   *time.Time // accepted at or after From, and before To
}

// ListMessages returns a page of the account's messages, newest first, and the total.
func (s *Store) ListMessages(ctx context.Context, accountID uuid.UUID, f MessageFilter, p Page) ([]Message, int64, error) {
	where := []string{"m.account_id = $1"}
	args := []any{accountID}
	if f.Status != "" {
		args = append(args, f.Status)
		where = append(where, fmt.Sprintf("m.status = $%d", len(args)))
	}
	if f.JobID != nil {
		args = append(args, *f.JobID)
		// The job's range of the primary key (migration 009), so the list reads only its rows.
		where = append(where, fmt.Sprintf(`m.job_id = $%[1]d
			AND m.id >= coalesce((SELECT first_message_id FROM jobs WHERE id = $%[1]d), '00000000-0000-0000-0000-000000000000')
			AND m.id <= coalesce((SELECT last_message_id FROM jobs WHERE id = $%[1]d), 'ffffffff-ffff-ffff-ffff-ffffffffffff')`, len(args)))
	}
	if f.CampaignID != nil {
		args = append(args, *f.CampaignID)
		// Its job's range of the primary key, as for a job: campaign_id has no index, and the
		// account's every message was read.
		where = append(where, fmt.Sprintf(`m.campaign_id = $%[1]d
			AND m.id >= coalesce((SELECT j.first_message_id FROM campaigns c JOIN jobs j ON j.id = c.job_id WHERE c.id = $%[1]d),
				'00000000-0000-0000-0000-000000000000')
			AND m.id <= coalesce((SELECT j.last_message_id FROM campaigns c JOIN jobs j ON j.id = c.job_id WHERE c.id = $%[1]d),
				'ffffffff-ffff-ffff-ffff-ffffffffffff')`, len(args)))
	}
	if f.Network != carriers.NetworkUnknown {
		args = append(args, int16(f.Network))
		where = append(where, fmt.Sprintf("m.network = $%d", len(args)))
	}
	// A date range's start is also one of the primary key (ids are UUIDv7, minted as rows are
	// written, never before the message was accepted), less idSlack, so the list and its count
	// read no older rows.
	fromArg := 0
	if f.From != nil {
		args = append(args, *f.From, idFloor(f.From.Add(-idSlack)))
		fromArg = len(args) - 1
		where = append(where, fmt.Sprintf("m.created_at >= $%d AND m.id >= $%d", fromArg, len(args)))
	}
	// Its end bounds the id too, plus idSlack (bound), except for the rows of jobs expanded
	// after it (a scheduled campaign's, written when due, days after their acceptance): those
	// are read through their jobs (late), the account's expanded jobs accepted in the range
	// whose rows go past the bound (jobs_expanded_idx), as a second branch of the list.
	var bound, late string
	if f.To != nil {
		args = append(args, *f.To, idFloor(f.To.Add(idSlack)))
		to, idTo := len(args)-1, len(args)
		where = append(where, fmt.Sprintf("m.created_at < $%d", to))
		bound = fmt.Sprintf(" AND m.id < $%d", idTo)
		late = fmt.Sprintf(`jobs lj JOIN messages m ON m.account_id = lj.account_id AND m.id >= $%d AND m.id <= lj.last_message_id
			AND m.job_id = lj.id`, idTo)
		if f.Reference != nil {
			late += " JOIN jobs j ON j.id = m.job_id"
		}
		late += fmt.Sprintf(` WHERE lj.account_id = $1 AND lj.expanded > 0 AND lj.created_at < $%[1]d AND lj.last_message_id >= $%[2]d`, to, idTo)
		if fromArg > 0 {
			late += fmt.Sprintf(" AND lj.created_at >= $%d", fromArg)
		}
	}
	from := "messages m"
	if f.Reference != nil {
		args = append(args, *f.Reference)
		// The account's jobs with the reference (jobs_reference_idx), then each job's range of
		// the primary key. A job without a range has no messages yet, and matches none.
		from = "messages m JOIN jobs j ON j.id = m.job_id"
		where = append(where, fmt.Sprintf(`j.account_id = $1 AND j.reference = $%d
			AND m.id >= j.first_message_id AND m.id <= j.last_message_id`, len(args)))
	}
	cond := strings.Join(where, " AND ")
	// keys is the list's (account_id, id) pairs matching cond and extra, from both branches.
	keys := func(extra string) string {
		q := `SELECT m.account_id, m.id FROM ` + from + ` WHERE ` + cond + bound + extra
		if late != "" {
			q = `(` + q + `) UNION ALL (SELECT m.account_id, m.id FROM ` + late + ` AND ` + cond + extra + `)`
		}
		return q
	}

	var total int64
	var err error
	if f.JobID == nil && f.CampaignID == nil && f.Reference == nil && f.Network == carriers.NetworkUnknown && f.From == nil && f.To == nil {
		// The live counts answer without scanning a large account's messages.
		total, err = s.countFromCounters(ctx, accountID, f.Status)
	} else {
		err = s.pool.QueryRow(ctx, `SELECT count(*) FROM (`+keys("")+`) k`, args...).Scan(&total)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("count messages: %w", err)
	}
	extra := ""
	if p.After != nil {
		args = append(args, *p.After)
		extra = fmt.Sprintf(" AND m.id < $%d", len(args))
	}
	args = append(args, p.Size, p.offset())
	// The page's keys first, from the primary key alone, then its rows and their jobs: joined
	// before the offset, a deep page fetched and joined every row it skipped (page 1,190 of an
	// account of 120,000 messages: 260–310 ms against 21–28 ms, bench/RESULTS.md).
	rows, err := s.pool.Query(ctx, `SELECT `+messageColumns+` FROM (
			SELECT k.account_id, k.id FROM (`+keys(extra)+`) k`+
		fmt.Sprintf(` ORDER BY k.account_id, k.id DESC LIMIT $%d OFFSET $%d`, len(args)-1, len(args))+`) page
		JOIN messages m ON m.account_id = page.account_id AND m.id = page.id JOIN jobs j ON j.id = m.job_id
		ORDER BY m.account_id, m.id DESC`, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list messages: %w", err)
	}
	defer rows.Close()
	out := make([]Message, 0, p.Size)
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list messages: %w", err)
		}
		out = append(out, m)
	}
	return out, total, rows.Err()
}

// countFromCounters is how many of the account's messages the list has, from the counters:
// those count a campaign's recipients from its acceptance (queued), and the ones a
// cancellation refunded before they were written (failed), neither of which has a row yet
// or ever. They are taken off.
func (s *Store) countFromCounters(ctx context.Context, accountID uuid.UUID, status MessageStatus) (int64, error) {
	c, err := s.MessageCounts(ctx, accountID)
	if err != nil {
		return 0, err
	}
	var pending, cancelled int64
	if status == "" || status == MessageQueued || status == MessageFailed {
		// The account's campaigns still to be written or cancelled (campaigns_unwritten_idx):
		// their recipients not written as rows.
		err := s.pool.QueryRow(ctx, `SELECT
				coalesce(sum(j.recipients_count - j.expanded) FILTER (WHERE c.status <> 'cancelled' AND j.pending_recipients IS NOT NULL), 0),
				coalesce(sum(j.recipients_count - j.expanded) FILTER (WHERE c.status = 'cancelled' AND j.pending_recipients IS NULL), 0)
			FROM campaigns c JOIN jobs j ON j.id = c.job_id
			WHERE c.account_id = $1 AND c.status IN ('queued', 'scheduled', 'sending', 'cancelled')`, accountID).Scan(&pending, &cancelled)
		if err != nil {
			return 0, fmt.Errorf("unwritten messages: %w", err)
		}
	}
	switch status {
	case MessageQueued:
		return max(c.Queued-pending, 0), nil
	case MessageSent:
		return c.Sent, nil
	case MessageDelivered:
		return c.Delivered, nil
	case MessageFailed:
		return max(c.Failed-cancelled, 0), nil
	}
	return max(c.Total()-pending-cancelled, 0), nil
}

// MessageByID returns one of the account's messages. Another account's id is ErrNotFound.
func (s *Store) MessageByID(ctx context.Context, accountID, id uuid.UUID) (Message, error) {
	where := s.faults.messageFilter(`m.id = $1 AND m.account_id = $2`)
	m, err := scanMessage(s.pool.QueryRow(ctx, `SELECT `+messageColumns+` FROM messages m JOIN jobs j ON j.id = m.job_id
		WHERE `+where, id, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Message{}, ErrNotFound
	}
	if err != nil {
		return Message{}, fmt.Errorf("message by id: %w", err)
	}
	return m, nil
}

// MessageByProviderID returns the account's message a carrier knows by providerID.
func (s *Store) MessageByProviderID(ctx context.Context, accountID uuid.UUID, providerID string) (Message, error) {
	m, err := scanMessage(s.pool.QueryRow(ctx, `SELECT `+messageColumns+` FROM provider_refs r
		JOIN messages m ON m.account_id = r.account_id AND m.id = r.message_id JOIN jobs j ON j.id = m.job_id
		WHERE r.provider_message_id = $1 AND r.account_id = $2 LIMIT 1`, providerID, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return Message{}, ErrNotFound
	}
	if err != nil {
		return Message{}, fmt.Errorf("message by provider id: %w", err)
	}
	return m, nil
}

// MessageCounts are an account's messages by status.
type MessageCounts struct {
	Queued, Sent, Delivered, Failed int64
}

// Total is every message counted.
func (c MessageCounts) Total() int64 { return c.Queued + c.Sent + c.Delivered + c.Failed }

// MessageCounts reads the counts of an account. They trail the messages by at most one
// progress write (about a second); queued is what was accepted and is in no other state yet.
func (s *Store) MessageCounts(ctx context.Context, accountID uuid.UUID) (MessageCounts, error) {
	var c MessageCounts
	err := s.pool.QueryRow(ctx, `SELECT w.messages_accepted - c.sent - c.delivered - c.failed, c.sent, c.delivered, c.failed
		FROM message_counts c JOIN wallets w ON w.account_id = c.account_id WHERE c.account_id = $1`, accountID).
		Scan(&c.Queued, &c.Sent, &c.Delivered, &c.Failed)
	if errors.Is(err, pgx.ErrNoRows) {
		return MessageCounts{}, nil
	}
	if err != nil {
		return MessageCounts{}, fmt.Errorf("message counts: %w", err)
	}
	return c, nil
}

// OpenMessage is a message that has not reached a final state.
type OpenMessage struct {
	NewMessage
	Status     MessageStatus // queued | sent
	ProviderID string        // set when sent
}

// jobMessages joins a job (j) to its messages (m) through the primary key's range of the job
// (see migration 009); a job without a range (none written yet) spans its account.
const jobMessages = `messages m ON m.account_id = j.account_id
	AND m.id >= coalesce(j.first_message_id, '00000000-0000-0000-0000-000000000000')
	AND m.id <= coalesce(j.last_message_id, 'ffffffff-ffff-ffff-ffff-ffffffffffff') AND m.job_id = j.id`

// messageRange is the lowest and highest id of a job's messages.
func messageRange(msgs []NewMessage) (lo, hi uuid.UUID) {
	lo, hi = msgs[0].ID, msgs[0].ID
	for _, m := range msgs[1:] {
		if bytes.Compare(m.ID[:], lo[:]) < 0 {
			lo = m.ID
		}
		if bytes.Compare(m.ID[:], hi[:]) > 0 {
			hi = m.ID
		}
	}
	return lo, hi
}

// OpenMessages returns up to limit of a job's messages still queued or sent with ids after
// `after` (uuid.Nil: from the start), in id order: a job is read a page at a time, so its
// size never decides how much memory it takes.
func (s *Store) OpenMessages(ctx context.Context, jobID, after uuid.UUID, limit int) ([]OpenMessage, error) {
	var out []OpenMessage
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// A page is an ordered walk of the primary key from the cursor: one page of rows read.
		// On statistics older than a campaign's freshly written rows the planner would rather
		// scan the job's whole remaining range as a bitmap and sort it (25-80 ms a page, more
		// under load, which starved the links), so bitmap scans are off for this statement.
		// One lower bound, so the walk starts where the page does: the job's first message, or
		// past the cursor (a message of the job).
		from := `m.id >= coalesce((SELECT first_message_id FROM jobs WHERE id = $1), '00000000-0000-0000-0000-000000000000') AND $2::uuid IS NOT NULL`
		if after != uuid.Nil {
			from = `m.id > $2`
		}
		b := &pgx.Batch{}
		b.Queue(`SET LOCAL enable_bitmapscan = off`)
		b.Queue(`SELECT m.id, m.recipient, m.network, m.sender, m.body, m.prefixed, m.parts, m.encoding,
				m.cost_cents, m.status, coalesce(m.provider_message_id, '')
			FROM messages m
			WHERE m.account_id = (SELECT account_id FROM jobs WHERE id = $1) AND `+from+`
				AND m.id <= coalesce((SELECT last_message_id FROM jobs WHERE id = $1), 'ffffffff-ffff-ffff-ffff-ffffffffffff')
				AND m.job_id = $1 AND m.status IN ('queued', 'sent')
			ORDER BY m.id LIMIT $3`, jobID, after, limit)
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		out, err = scanOpen(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open messages: %w", err)
	}
	return out, nil
}

func scanOpen(rows pgx.Rows) ([]OpenMessage, error) {
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
			return nil, err
		}
		m.Network, m.Parts, m.Encoding, m.CostCents = carriers.Network(network), int(parts), carriers.Encoding(encoding), int64(cost)
		out = append(out, m)
	}
	return out, rows.Err()
}

// StaleMessage is a sent message still waiting for its receipt.
type StaleMessage struct {
	JobID, AccountID, ID uuid.UUID
	ProviderID           string // "" when the submit's answer never came
	Network              carriers.Network
	SentAt               time.Time
}

// StaleCursor is where a walk of stale messages stands: after this job and message.
type StaleCursor struct{ JobID, MessageID uuid.UUID }

// StaleSent returns up to limit messages of unfinished jobs sent before `before` and still
// waiting for a receipt, in (job, message) order after the cursor: a sweep walks every one of
// them, page by page, whatever their number. An empty page means the walk reached the end.
// A job accepted after `before`, or with no message written yet, cannot hold one: it is not
// read (a bulk backlog's jobs would otherwise each be scanned every sweep, the ones not yet
// expanded across their whole account).
func (s *Store) StaleSent(ctx context.Context, after StaleCursor, before time.Time, limit int) ([]StaleMessage, error) {
	rows, err := s.pool.Query(ctx, `SELECT s.job_id, s.account_id, s.id, coalesce(s.provider_message_id, ''), s.network, s.sent_at
		FROM (SELECT job_id FROM open_jobs WHERE job_id >= $1 ORDER BY job_id LIMIT $4) o,
			LATERAL (SELECT m.job_id, m.account_id, m.id, m.provider_message_id, m.network, m.sent_at FROM jobs j JOIN `+jobMessages+`
				WHERE j.id = o.job_id AND j.first_message_id IS NOT NULL AND j.created_at < $3
					AND m.status = 'sent' AND m.sent_at < $3 AND (o.job_id > $1 OR m.id > $2)
				ORDER BY m.id LIMIT $4) s
		ORDER BY s.job_id, s.id LIMIT $4`, after.JobID, after.MessageID, before, limit)
	if err != nil {
		return nil, fmt.Errorf("stale sent messages: %w", err)
	}
	defer rows.Close()
	var out []StaleMessage
	for rows.Next() {
		var m StaleMessage
		var net int16
		if err := rows.Scan(&m.JobID, &m.AccountID, &m.ID, &m.ProviderID, &net, &m.SentAt); err != nil {
			return nil, fmt.Errorf("stale sent messages: %w", err)
		}
		m.Network = carriers.Network(net)
		out = append(out, m)
	}
	return out, rows.Err()
}
