package persistence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tuma-sms/tuma/carriers"
)

// ErrInsufficientBalance means the wallet cannot cover a debit. The tenant actor prevents it;
// the database's conditional update is the backstop.
var ErrInsufficientBalance = errors.New("insufficient balance")

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

// NewNotification is an in-app notification written in the same transaction as what caused it.
type NewNotification struct {
	Type, Title, Message string
}

// NewJob is an accepted send, written with its debit in one transaction.
type NewJob struct {
	ID           uuid.UUID
	AccountID    uuid.UUID
	CampaignID   *uuid.UUID
	Source       string
	Message      string
	SharedPrefix string
	Senders      [3]string // by network (carriers.Safaricom-1 …)
	Prefixed     [3]bool
	PriceCents   int64
	Recipients   int
	Units        int64 // SMS units: parts summed over recipients
	CostCents    int64
	Inline       []NewMessage // written now (small jobs)
	Pending      []byte       // EncodeRecipients, expanded later (large jobs)
	Notices      []NewNotification
	Idempotency  *IdempotencyKey // completed in the same transaction
}

// WalletSnapshot is a wallet as one committed transaction left it. Version orders snapshots.
type WalletSnapshot struct {
	AccountID    uuid.UUID
	BalanceCents int64
	Version      int64
}

// AcceptResult is the outcome of one job in AcceptJobs.
type AcceptResult struct {
	Err    error // ErrInsufficientBalance, or nil
	Wallet WalletSnapshot
}

// AcceptJobs durably records a group of jobs with their debits, messages, ledger entries and
// notifications in one transaction (group commit). A job whose account cannot cover its
// group's debits fails alone with ErrInsufficientBalance.
//
// The usual case is one round trip: a pipelined batch is one implicit transaction, and the
// wallets' CHECK (balance_cents >= 0) makes an overdraft abort it. Only then does the careful
// path find which accounts fall short. The tenant actors reserve before debiting, so that
// path runs only if something bypassed them (another node, a bug).
func (s *Store) AcceptJobs(ctx context.Context, jobs []NewJob) ([]AcceptResult, error) {
	g := groupDebits(jobs)
	results, err := s.acceptFast(ctx, jobs, g)
	if isCheckViolation(err) || isFenced(err) {
		return s.acceptCareful(ctx, jobs)
	}
	return results, err
}

// debitGroup is a group's debits summed per account, in account order.
type debitGroup struct {
	accounts                 []uuid.UUID
	costs, units, recipients []int64
}

func groupDebits(jobs []NewJob) debitGroup {
	type sum struct{ cost, units, recipients int64 }
	by := map[uuid.UUID]*sum{}
	for _, j := range jobs {
		d := by[j.AccountID]
		if d == nil {
			d = &sum{}
			by[j.AccountID] = d
		}
		d.cost += j.CostCents
		d.units += j.Units
		d.recipients += int64(j.Recipients)
	}
	var g debitGroup
	g.accounts = sortedIDs(by)
	for _, a := range g.accounts {
		g.costs, g.units, g.recipients = append(g.costs, by[a].cost), append(g.units, by[a].units), append(g.recipients, by[a].recipients)
	}
	return g
}

// lockWallets locks the group's wallet rows in account order. Every transaction that changes
// several wallets locks them this way, so concurrent group commits and receipt flushes cannot
// deadlock: an UPDATE … FROM unnest locks rows in the join's order, not the array's.
const lockWallets = `SELECT 1 FROM wallets WHERE account_id = ANY($1::uuid[]) ORDER BY account_id FOR NO KEY UPDATE`

const debitWallets = `
	UPDATE wallets w SET
		balance_cents = w.balance_cents - u.cost,
		total_spent_cents = w.total_spent_cents + u.cost,
		total_sms_sent = w.total_sms_sent + u.units,
		lifetime_sms = w.lifetime_sms + u.units,
		messages_accepted = w.messages_accepted + u.messages,
		version = w.version + 1,
		updated_at = now()
	FROM unnest($1::uuid[], $2::bigint[], $3::bigint[], $4::bigint[]) AS u(account_id, cost, units, messages)
	WHERE w.account_id = u.account_id`

func (s *Store) acceptFast(ctx context.Context, jobs []NewJob, g debitGroup) ([]AcceptResult, error) {
	b := &pgx.Batch{}
	b.Queue(lockWallets, g.accounts)
	snaps := map[uuid.UUID]WalletSnapshot{}
	b.Queue(debitWallets+` RETURNING w.account_id, w.balance_cents, w.version`, g.accounts, g.costs, g.units, g.recipients).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var w WalletSnapshot
			if err := rows.Scan(&w.AccountID, &w.BalanceCents, &w.Version); err != nil {
				return err
			}
			snaps[w.AccountID] = w
		}
		return rows.Err()
	})
	queueRecords(b, jobs)
	if err := s.accept.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("record jobs: %w", err)
	}
	results := make([]AcceptResult, len(jobs))
	for i, j := range jobs {
		w, ok := snaps[j.AccountID]
		if !ok {
			return nil, fmt.Errorf("record jobs: account %s has no wallet", j.AccountID)
		}
		results[i].Wallet = w
	}
	return results, nil
}

// queueRecords queues everything an accepted group writes besides the debit.
func queueRecords(b *pgx.Batch, jobs []NewJob) {
	queueJobInserts(b, jobs)
	queueOpenJobs(b, jobs)
	queueMessageInserts(b, jobs)
	queueDebitEntries(b, jobs)
	queueNotifications(b, jobs)
	queueIdempotency(b, jobs)
}

// acceptCareful drops the jobs whose idempotency claim lapsed, debits with a balance condition
// and records only the jobs of accounts that could pay.
func (s *Store) acceptCareful(ctx context.Context, jobs []NewJob) ([]AcceptResult, error) {
	results := make([]AcceptResult, len(jobs))
	err := pgx.BeginFunc(ctx, s.accept, func(tx pgx.Tx) error {
		clear(results)
		held, err := heldClaims(ctx, tx, jobs)
		if err != nil {
			return err
		}
		var claimed []NewJob
		for i, j := range jobs {
			if j.Idempotency != nil && !held[*j.Idempotency] {
				results[i].Err = ErrIdempotencyLost
				continue
			}
			claimed = append(claimed, j)
		}
		if len(claimed) == 0 {
			return nil
		}
		g := groupDebits(claimed)
		if _, err := tx.Exec(ctx, lockWallets, g.accounts); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, debitWallets+` AND w.balance_cents >= u.cost RETURNING w.account_id, w.balance_cents, w.version`,
			g.accounts, g.costs, g.units, g.recipients)
		if err != nil {
			return fmt.Errorf("debit wallets: %w", err)
		}
		snaps := map[uuid.UUID]WalletSnapshot{}
		for rows.Next() {
			var w WalletSnapshot
			if err := rows.Scan(&w.AccountID, &w.BalanceCents, &w.Version); err != nil {
				rows.Close()
				return err
			}
			snaps[w.AccountID] = w
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("debit wallets: %w", err)
		}
		var ok []NewJob
		for i, j := range jobs {
			if results[i].Err != nil {
				continue
			}
			if w, debited := snaps[j.AccountID]; debited {
				results[i].Wallet = w
				ok = append(ok, j)
			} else {
				results[i].Err = ErrInsufficientBalance
			}
		}
		if len(ok) == 0 {
			return nil
		}
		b := &pgx.Batch{}
		queueRecords(b, ok)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("record jobs: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

func isCheckViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514"
}

// isFenced reports a transaction aborted by tuma_fence.
func isFenced(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "TU001"
}

// heldClaims locks the idempotency keys of the jobs that have one and reports which claims
// still hold their key; locking keeps a retry from taking one over before the commit.
func heldClaims(ctx context.Context, tx pgx.Tx, jobs []NewJob) (map[IdempotencyKey]bool, error) {
	var accts, claims []uuid.UUID
	var keys []string
	for _, j := range jobs {
		if k := j.Idempotency; k != nil {
			accts, keys, claims = append(accts, k.AccountID), append(keys, k.Key), append(claims, k.Claim)
		}
	}
	held := map[IdempotencyKey]bool{}
	if len(keys) == 0 {
		return held, nil
	}
	rows, err := tx.Query(ctx, `SELECT k.account_id, k.key, k.claim FROM idempotency_keys k
		JOIN unnest($1::uuid[], $2::text[], $3::uuid[]) AS u(account_id, key, claim)
			ON k.account_id = u.account_id AND k.key = u.key AND k.claim = u.claim
		WHERE k.state = 'in_flight'
		ORDER BY k.account_id, k.key FOR UPDATE OF k`, accts, keys, claims)
	if err != nil {
		return nil, fmt.Errorf("lock idempotency keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k IdempotencyKey
		if err := rows.Scan(&k.AccountID, &k.Key, &k.Claim); err != nil {
			return nil, err
		}
		held[k] = true
	}
	return held, rows.Err()
}

func queueOpenJobs(b *pgx.Batch, jobs []NewJob) {
	ids := make([]uuid.UUID, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	b.Queue(`INSERT INTO open_jobs (job_id) SELECT unnest($1::uuid[])`, ids)
}

func queueJobInserts(b *pgx.Batch, jobs []NewJob) {
	n := len(jobs)
	var (
		ids, accts                    = make([]uuid.UUID, n), make([]uuid.UUID, n)
		campaigns                     = make([]*uuid.UUID, n)
		sources, msgs, prefixes       = make([]string, n), make([]string, n), make([]string, n)
		senders, prefixed             = make([]string, n), make([]string, n)
		prices, units, costs, recipsN = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		pending                       = make([][]byte, n)
	)
	for i, j := range jobs {
		ids[i], accts[i], campaigns[i] = j.ID, j.AccountID, j.CampaignID
		sources[i], msgs[i], prefixes[i] = j.Source, j.Message, j.SharedPrefix
		senders[i], prefixed[i] = textArray(j.Senders[:]), boolArray(j.Prefixed[:])
		prices[i], units[i], costs[i], recipsN[i] = j.PriceCents, j.Units, j.CostCents, int64(j.Recipients)
		pending[i] = j.Pending
	}
	b.Queue(`INSERT INTO jobs (id, account_id, campaign_id, source, message, shared_prefix, senders, prefixed,
			price_cents, recipients_count, sms_units, cost_cents, pending_recipients)
		SELECT u.id, u.account_id, u.campaign_id, u.source, u.message, u.prefix, u.senders::text[], u.prefixed::boolean[],
			u.price, u.recipients, u.units, u.cost, u.pending
		FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
			$9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bytea[])
			AS u(id, account_id, campaign_id, source, message, prefix, senders, prefixed, price, recipients, units, cost, pending)`,
		ids, accts, campaigns, sources, msgs, prefixes, senders, prefixed, prices, recipsN, units, costs, pending)
}

func queueMessageInserts(b *pgx.Batch, jobs []NewJob) {
	n := 0
	for _, j := range jobs {
		n += len(j.Inline)
	}
	m := newMessageRows(n)
	for _, j := range jobs {
		for _, msg := range j.Inline {
			m.add(j, msg)
		}
	}
	if len(m.ids) == 0 {
		return
	}
	b.Queue(`INSERT INTO messages (id, job_id, account_id, campaign_id, recipient, network, sender, body, prefixed,
			parts, encoding, cost_cents)
		SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::smallint[], $7::text[],
			$8::text[], $9::boolean[], $10::smallint[], $11::smallint[], $12::integer[])`,
		m.ids, m.jobs, m.accts, m.campaigns, m.recipients, m.networks, m.senders, m.bodies, m.prefixed,
		m.parts, m.encodings, m.costs)
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
	parts, encodings []int16
	costs            []int32
}

func newMessageRows(n int) *messageRows {
	return &messageRows{
		ids: make([]uuid.UUID, 0, n), jobs: make([]uuid.UUID, 0, n), accts: make([]uuid.UUID, 0, n),
		campaigns: make([]*uuid.UUID, 0, n), recipients: make([]string, 0, n), networks: make([]int16, 0, n),
		senders: make([]string, 0, n), bodies: make([]*string, 0, n), prefixed: make([]bool, 0, n),
		parts: make([]int16, 0, n), encodings: make([]int16, 0, n), costs: make([]int32, 0, n),
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
	m.parts = append(m.parts, int16(msg.Parts))
	m.encodings = append(m.encodings, int16(msg.Encoding))
	m.costs = append(m.costs, int32(msg.CostCents))
}

func queueDebitEntries(b *pgx.Batch, jobs []NewJob) {
	n := len(jobs)
	ids, accts, jobIDs := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n)
	amounts, counts := make([]int64, n), make([]int64, n)
	descs := make([]string, n)
	for i, j := range jobs {
		ids[i], accts[i], jobIDs[i] = NewID(), j.AccountID, j.ID
		amounts[i], counts[i] = j.CostCents, j.Units
		descs[i] = fmt.Sprintf("SMS to %d recipient%s", j.Recipients, plural(j.Recipients))
	}
	b.Queue(`INSERT INTO wallet_transactions (id, account_id, type, amount_cents, sms_count, job_id, description)
		SELECT u.id, u.account_id, 'debit', u.amount, u.sms, u.job_id, u.description
		FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::bigint[], $5::uuid[], $6::text[])
			AS u(id, account_id, amount, sms, job_id, description)`, ids, accts, amounts, counts, jobIDs, descs)
}

func queueNotifications(b *pgx.Batch, jobs []NewJob) {
	var ids, accts []uuid.UUID
	var types, titles, msgs []string
	for _, j := range jobs {
		for _, n := range j.Notices {
			ids, accts = append(ids, NewID()), append(accts, j.AccountID)
			types, titles, msgs = append(types, n.Type), append(titles, n.Title), append(msgs, n.Message)
		}
	}
	if len(ids) == 0 {
		return
	}
	b.Queue(`INSERT INTO notifications (id, account_id, type, title, message)
		SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[])`, ids, accts, types, titles, msgs)
}

func queueIdempotency(b *pgx.Batch, jobs []NewJob) {
	var accts, jobIDs, claims []uuid.UUID
	var keys []string
	for _, j := range jobs {
		if j.Idempotency != nil {
			accts, keys, jobIDs = append(accts, j.Idempotency.AccountID), append(keys, j.Idempotency.Key), append(jobIDs, j.ID)
			claims = append(claims, j.Idempotency.Claim)
		}
	}
	if len(keys) == 0 {
		return
	}
	// The key completes with the job: a crash can never leave a job without its key (a replay
	// would charge again) or a key without its job. A claim that lapsed and was taken over by a
	// retry fails the whole batch (tuma_fence), and AcceptJobs retries it without that job.
	b.Queue(`WITH done AS (
			UPDATE idempotency_keys k SET state = 'done', response_status = 202, resource_id = u.job_id
			FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::uuid[]) AS u(account_id, key, job_id, claim)
			WHERE k.account_id = u.account_id AND k.key = u.key AND k.claim = u.claim AND k.state = 'in_flight'
			RETURNING 1)
		SELECT tuma_fence($5, count(*)) FROM done`, accts, keys, jobIDs, claims, int64(len(keys)))
}

// ExpandJob writes the message rows of a job accepted with pending recipients and clears the
// pending list, atomically. It reports false when the job was already expanded (by an earlier
// run that committed just before a crash).
func (s *Store) ExpandJob(ctx context.Context, j NewJob, msgs []NewMessage) (bool, error) {
	expanded := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var pending bool
		var accepted time.Time
		err := tx.QueryRow(ctx, `SELECT pending_recipients IS NOT NULL, created_at FROM jobs WHERE id = $1 FOR UPDATE`, j.ID).
			Scan(&pending, &accepted)
		if err != nil {
			return fmt.Errorf("lock job: %w", err)
		}
		if !pending {
			return nil
		}
		// One row buffer, reused: pgx encodes each row before asking for the next. A message was
		// accepted with its job, whenever its row is written: created_at says so.
		row := make([]any, 13)
		row[12] = accepted
		i := 0
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"messages"},
			[]string{"id", "job_id", "account_id", "campaign_id", "recipient", "network", "sender", "body", "prefixed", "parts", "encoding", "cost_cents", "created_at"},
			pgx.CopyFromFunc(func() ([]any, error) {
				if i == len(msgs) {
					return nil, nil
				}
				m := msgs[i]
				row[0], row[1], row[2], row[3], row[4], row[5] = m.ID, j.ID, j.AccountID, j.CampaignID, m.Recipient, int16(m.Network)
				row[6], row[7], row[8], row[9], row[10], row[11] = m.Sender, m.Body, m.Prefixed, int16(m.Parts), int16(m.Encoding), int32(m.CostCents)
				i++
				return row, nil
			}))
		if err != nil {
			return fmt.Errorf("copy messages: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE jobs SET pending_recipients = NULL, status = 'sending' WHERE id = $1`, j.ID); err != nil {
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

// Submitted records that a carrier accepted a message.
type Submitted struct {
	AccountID  uuid.UUID
	MessageID  uuid.UUID
	ProviderID string
	Network    carriers.Network
	At         time.Time
}

// Failure records that a message failed before a carrier accepted it.
type Failure struct {
	AccountID      uuid.UUID
	MessageID      uuid.UUID
	ProviderStatus string
	Error          string
	At             time.Time
}

// Receipt is a carrier's final word on a message it accepted.
type Receipt struct {
	ProviderID     string
	Network        carriers.Network
	Delivered      bool
	ProviderStatus string
	Error          string
	At             time.Time
	// AccountID and MessageID name the message when the caller knows it (it saw the
	// submission), so the write needs no provider-id lookup; zero when unknown.
	AccountID, MessageID uuid.UUID
}

// ReceiptBatch is what the receipts actor writes in one transaction. Submissions apply first,
// so a receipt in the same batch as its submission finds the provider id.
type ReceiptBatch struct {
	Submitted []Submitted
	Failed    []Failure
	Receipts  []Receipt
}

// JobProgress is how status writes moved a job: deltas to its counters and its account's.
type JobProgress struct {
	JobID, AccountID        uuid.UUID
	Sent, Delivered, Failed int // net change of messages in each state (sent falls as they finish)
	RefundedCents           int64
}

// FinalMessage describes a message that reached delivered or failed, for metrics.
type FinalMessage struct {
	Network   carriers.Network
	Delivered bool
	Stage     string // "submit": failed before a network accepted it; "receipt": the network's verdict
	CreatedAt time.Time
	DoneAt    time.Time
}

// FlushResult is what a flush changed.
type FlushResult struct {
	Jobs      []JobProgress
	Refunds   []WalletSnapshot // accounts whose balance grew by refunds
	Final     []FinalMessage
	Submitted int
	Unmatched int // events for messages already final or unknown (duplicates)
	// LateReceipts matched no message because their provider id is not recorded yet: the
	// receipt overtook its submission. The caller retries them for a while.
	LateReceipts []Receipt
}

// FlushReceipts applies a batch of status transitions in one transaction: message rows,
// provider references and refunds for failed messages (one ledger entry per job and flush).
// A transition only applies from an earlier state, so replays and duplicate receipts change
// nothing and are never refunded twice. The job and account counters these transitions imply
// come back in the result, for ApplyProgress to write in larger, less frequent batches.
func (s *Store) FlushReceipts(ctx context.Context, rb ReceiptBatch) (FlushResult, error) {
	res, err := s.flushReceipts(ctx, rb, true)
	if isUniqueViolation(err, "provider_refs_pkey") {
		// A provider id seen before (a carrier repeating itself): COPY cannot skip it, the
		// slower insert can.
		res, err = s.flushReceipts(ctx, rb, false)
	}
	return res, err
}

func (s *Store) flushReceipts(ctx context.Context, rb ReceiptBatch, copyRefs bool) (FlushResult, error) {
	var res FlushResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res = FlushResult{}
		if err := keyedBatchPlans(ctx, tx); err != nil {
			return err
		}
		agg := newFlushAggregate()
		if err := flushSubmitted(ctx, tx, rb.Submitted, agg, copyRefs); err != nil {
			return err
		}
		if err := flushFailures(ctx, tx, rb.Failed, agg); err != nil {
			return err
		}
		late, err := flushReceipts(ctx, tx, rb.Receipts, agg)
		if err != nil {
			return err
		}
		res.LateReceipts = late
		res.Submitted = agg.submitted
		res.Unmatched = len(rb.Submitted) + len(rb.Failed) + len(rb.Receipts) - agg.matched
		res.Final = agg.final
		res.Jobs = agg.progress()
		res.Refunds, err = applyRefunds(ctx, tx, res.Jobs)
		return err
	})
	if err != nil {
		return FlushResult{}, fmt.Errorf("flush receipts: %w", err)
	}
	return res, nil
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

type flushAggregate struct {
	jobs      map[uuid.UUID]*JobProgress
	final     []FinalMessage
	submitted int
	matched   int
}

func newFlushAggregate() *flushAggregate {
	return &flushAggregate{jobs: map[uuid.UUID]*JobProgress{}}
}

// progress lists the jobs the flush moved, in job order.
func (a *flushAggregate) progress() []JobProgress {
	out := make([]JobProgress, 0, len(a.jobs))
	for _, id := range sortedIDs(a.jobs) {
		out = append(out, *a.jobs[id])
	}
	return out
}

func (a *flushAggregate) job(jobID, accountID uuid.UUID) *JobProgress {
	p := a.jobs[jobID]
	if p == nil {
		p = &JobProgress{JobID: jobID, AccountID: accountID}
		a.jobs[jobID] = p
	}
	return p
}

func flushSubmitted(ctx context.Context, tx pgx.Tx, subs []Submitted, agg *flushAggregate, copyRefs bool) error {
	if len(subs) == 0 {
		return nil
	}
	n := len(subs)
	accts, ids, pids, nets, ats := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]string, n), make([]int16, n), make([]time.Time, n)
	for i, s := range subs {
		accts[i], ids[i], pids[i], nets[i], ats[i] = s.AccountID, s.MessageID, s.ProviderID, int16(s.Network), s.At
	}
	rows, err := tx.Query(ctx, `
		UPDATE messages m SET status = 'sent', provider_message_id = u.pid, provider_status = 'ENROUTE', sent_at = u.at
		FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[]) AS u(account_id, id, pid, at)
		WHERE m.account_id = u.account_id AND m.id = u.id AND m.status = 'queued'
		RETURNING m.job_id, m.account_id, m.network`, accts, ids, pids, ats)
	if err != nil {
		return fmt.Errorf("record submissions: %w", err)
	}
	for rows.Next() {
		var job, acct uuid.UUID
		var net int16
		if err := rows.Scan(&job, &acct, &net); err != nil {
			rows.Close()
			return err
		}
		agg.job(job, acct).Sent++
		agg.submitted++
		agg.matched++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("record submissions: %w", err)
	}
	if copyRefs {
		// COPY costs about half of INSERT … SELECT per row; a duplicate fails the whole
		// flush, which FlushReceipts then repeats with the insert.
		row := make([]any, 4)
		i := 0
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"provider_refs"}, []string{"provider_message_id", "network", "message_id", "account_id"},
			pgx.CopyFromFunc(func() ([]any, error) {
				if i == n {
					return nil, nil
				}
				row[0], row[1], row[2], row[3] = pids[i], nets[i], ids[i], accts[i]
				i++
				return row, nil
			}))
	} else {
		_, err = tx.Exec(ctx, `INSERT INTO provider_refs (provider_message_id, network, message_id, account_id)
			SELECT * FROM unnest($1::text[], $2::smallint[], $3::uuid[], $4::uuid[]) ON CONFLICT DO NOTHING`, pids, nets, ids, accts)
	}
	if err != nil {
		return fmt.Errorf("record provider ids: %w", err)
	}
	return nil
}

func flushFailures(ctx context.Context, tx pgx.Tx, fails []Failure, agg *flushAggregate) error {
	if len(fails) == 0 {
		return nil
	}
	n := len(fails)
	accts, ids, pss, errs, ats := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]string, n), make([]string, n), make([]time.Time, n)
	for i, f := range fails {
		accts[i], ids[i], pss[i], errs[i], ats[i] = f.AccountID, f.MessageID, f.ProviderStatus, f.Error, f.At
	}
	rows, err := tx.Query(ctx, `
		UPDATE messages m SET status = 'failed', provider_status = u.ps, error = u.err, failed_at = u.at
		FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::timestamptz[]) AS u(account_id, id, ps, err, at),
			LATERAL (SELECT status FROM messages WHERE account_id = u.account_id AND id = u.id) AS before
		WHERE m.account_id = u.account_id AND m.id = u.id AND m.status IN ('queued', 'sent')
		RETURNING m.job_id, m.account_id, m.network, m.cost_cents, before.status, m.created_at, m.failed_at`, accts, ids, pss, errs, ats)
	if err != nil {
		return fmt.Errorf("record failures: %w", err)
	}
	return scanFinal(rows, agg, "submit", nil, nil)
}

// receiptTransition is what a receipt does to a sent message, by provider id or by key;
// the statements add their FROM (aliasing the batch u) and WHERE.
const receiptTransition = `
		UPDATE messages m SET
			status = CASE WHEN u.delivered THEN 'delivered' ELSE 'failed' END,
			provider_status = u.ps,
			error = nullif(u.err, ''),
			delivered_at = CASE WHEN u.delivered THEN u.at END,
			failed_at = CASE WHEN u.delivered THEN NULL ELSE u.at END`

func flushReceipts(ctx context.Context, tx pgx.Tx, recs []Receipt, agg *flushAggregate) ([]Receipt, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	recs, err := flushKeyedReceipts(ctx, tx, recs, agg)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	// A carrier may repeat a receipt; one row per message keeps UPDATE … FROM deterministic.
	type key struct {
		pid string
		net carriers.Network
	}
	byKey := make(map[key]Receipt, len(recs))
	var pids, pss, errs []string
	var nets []int16
	var delivered []bool
	var ats []time.Time
	for _, r := range recs {
		k := key{r.ProviderID, r.Network}
		if _, dup := byKey[k]; dup {
			continue
		}
		byKey[k] = r
		pids, nets, delivered = append(pids, r.ProviderID), append(nets, int16(r.Network)), append(delivered, r.Delivered)
		pss, errs, ats = append(pss, r.ProviderStatus), append(errs, r.Error), append(ats, r.At)
	}
	rows, err := tx.Query(ctx, receiptTransition+`
		FROM unnest($1::text[], $2::smallint[], $3::boolean[], $4::text[], $5::text[], $6::timestamptz[])
				AS u(pid, net, delivered, ps, err, at)
			JOIN provider_refs r ON r.provider_message_id = u.pid AND r.network = u.net
		WHERE m.account_id = r.account_id AND m.id = r.message_id AND m.status = 'sent'
		RETURNING m.job_id, m.account_id, m.network, m.cost_cents, 'sent', m.created_at,
			coalesce(m.delivered_at, m.failed_at), u.delivered, u.pid`,
		pids, nets, delivered, pss, errs, ats)
	if err != nil {
		return nil, fmt.Errorf("record receipts: %w", err)
	}
	matched := map[key]bool{}
	var pid string
	if err := scanFinal(rows, agg, "receipt", &pid, func(net int16) { matched[key{pid, carriers.Network(net)}] = true }); err != nil {
		return nil, fmt.Errorf("record receipts: %w", err)
	}
	if len(matched) == len(byKey) {
		return nil, nil
	}
	// Unmatched: a duplicate for a message already final (its provider id is known), or a
	// receipt that overtook its submission (not known yet).
	var upids []string
	var unets []int16
	for k := range byKey {
		if !matched[k] {
			upids, unets = append(upids, k.pid), append(unets, int16(k.net))
		}
	}
	known := map[key]bool{}
	krows, err := tx.Query(ctx, `SELECT r.provider_message_id, r.network FROM provider_refs r
		JOIN unnest($1::text[], $2::smallint[]) AS u(pid, net) ON r.provider_message_id = u.pid AND r.network = u.net`, upids, unets)
	if err != nil {
		return nil, fmt.Errorf("check unmatched receipts: %w", err)
	}
	for krows.Next() {
		var pid string
		var net int16
		if err := krows.Scan(&pid, &net); err != nil {
			krows.Close()
			return nil, err
		}
		known[key{pid, carriers.Network(net)}] = true
	}
	krows.Close()
	if err := krows.Err(); err != nil {
		return nil, fmt.Errorf("check unmatched receipts: %w", err)
	}
	var late []Receipt
	for i := range upids {
		k := key{upids[i], carriers.Network(unets[i])}
		if !known[k] {
			late = append(late, byKey[k])
		}
	}
	return late, nil
}

// scanFinal folds rows of messages that reached a final state into the aggregate. Rows are
// (job, account, network, cost, previous status, created_at, done_at); receipt rows add
// (delivered, key), where key scans into the pointer given and matched runs after each row
// with the message's network.
func scanFinal(rows pgx.Rows, agg *flushAggregate, stage string, key any, matched func(network int16)) error {
	defer rows.Close()
	for rows.Next() {
		var (
			job, acct       uuid.UUID
			net             int16
			cost            int64
			before          string
			created, doneAt time.Time
			delivered       bool
		)
		dest := []any{&job, &acct, &net, &cost, &before, &created, &doneAt}
		if key != nil {
			dest = append(dest, &delivered, key)
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if matched != nil {
			matched(net)
		}
		p := agg.job(job, acct)
		if before == "sent" {
			p.Sent--
		}
		if delivered {
			p.Delivered++
		} else {
			p.Failed++
			p.RefundedCents += cost
		}
		agg.final = append(agg.final, FinalMessage{Network: carriers.Network(net), Delivered: delivered, Stage: stage,
			CreatedAt: created, DoneAt: doneAt})
		agg.matched++
	}
	return rows.Err()
}

func applyRefunds(ctx context.Context, tx pgx.Tx, jobs []JobProgress) ([]WalletSnapshot, error) {
	byAccount := map[uuid.UUID]int64{}
	var entryIDs, entryAccts, entryJobs []uuid.UUID
	var entryAmounts, entryCounts []int64
	var entryDescs []string
	for _, p := range jobs {
		if p.RefundedCents == 0 { // nothing was charged (internal accounts): nothing to refund
			continue
		}
		byAccount[p.AccountID] += p.RefundedCents
		entryIDs, entryAccts, entryJobs = append(entryIDs, NewID()), append(entryAccts, p.AccountID), append(entryJobs, p.JobID)
		entryAmounts, entryCounts = append(entryAmounts, p.RefundedCents), append(entryCounts, int64(p.Failed))
		entryDescs = append(entryDescs, fmt.Sprintf("refund for %d failed message%s", p.Failed, plural(p.Failed)))
	}
	if len(byAccount) == 0 {
		return nil, nil
	}
	accts := sortedIDs(byAccount)
	amounts := make([]int64, len(accts))
	for i, id := range accts {
		amounts[i] = byAccount[id]
	}
	if _, err := tx.Exec(ctx, lockWallets, accts); err != nil {
		return nil, fmt.Errorf("lock wallets: %w", err)
	}
	rows, err := tx.Query(ctx, `
		UPDATE wallets w SET balance_cents = w.balance_cents + u.amount,
			total_spent_cents = greatest(w.total_spent_cents - u.amount, 0),
			version = w.version + 1, updated_at = now()
		FROM unnest($1::uuid[], $2::bigint[]) AS u(account_id, amount)
		WHERE w.account_id = u.account_id
		RETURNING w.account_id, w.balance_cents, w.version`, accts, amounts)
	if err != nil {
		return nil, fmt.Errorf("refund wallets: %w", err)
	}
	var snaps []WalletSnapshot
	for rows.Next() {
		var w WalletSnapshot
		if err := rows.Scan(&w.AccountID, &w.BalanceCents, &w.Version); err != nil {
			rows.Close()
			return nil, err
		}
		snaps = append(snaps, w)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("refund wallets: %w", err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO wallet_transactions (id, account_id, type, amount_cents, sms_count, job_id, description)
		SELECT u.id, u.account_id, 'refund', u.amount, u.n, u.job_id, u.description
		FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::bigint[], $5::uuid[], $6::text[])
			AS u(id, account_id, amount, n, job_id, description)`,
		entryIDs, entryAccts, entryAmounts, entryCounts, entryJobs, entryDescs)
	if err != nil {
		return nil, fmt.Errorf("record refunds: %w", err)
	}
	return snaps, nil
}

// sortedIDs returns the map's keys in order: every multi-row update locks rows in this order.
func sortedIDs[V any](m map[uuid.UUID]V) []uuid.UUID {
	ids := make([]uuid.UUID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return strings.Compare(string(a[:]), string(b[:])) })
	return ids
}

func textArray(vs []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, c := range []byte(v) {
			if c == '\\' || c == '"' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

func boolArray(vs []bool) string {
	b := []byte{'{'}
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		if v {
			b = append(b, 't')
		} else {
			b = append(b, 'f')
		}
	}
	return string(append(b, '}'))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// keyedBatchPlans makes this transaction's batch statements find their rows by key. Each
// batch names up to thousands of rows by primary key in a table of millions; with the array's
// true size in hand the planner tends to hash the whole table instead (it did: a seq scan of
// 600k messages per flush, every flush), and without fresh statistics it has no way to know
// better. An index lookup per row is what these statements always want.
func keyedBatchPlans(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true),
		set_config('enable_seqscan', 'off', true)`)
	if err != nil {
		return fmt.Errorf("set batch plan options: %w", err)
	}
	return nil
}

// flushKeyedReceipts writes the receipts whose message is known by key, straight by primary
// key; it returns the rest (unknown, or not matched by key) for the provider-id lookup.
func flushKeyedReceipts(ctx context.Context, tx pgx.Tx, recs []Receipt, agg *flushAggregate) ([]Receipt, error) {
	var rest []Receipt
	var accts, ids []uuid.UUID
	var pids, pss, errs []string
	var delivered []bool
	var ats []time.Time
	keyed := map[uuid.UUID]Receipt{}
	for _, r := range recs {
		if r.MessageID == uuid.Nil {
			rest = append(rest, r)
			continue
		}
		if _, dup := keyed[r.MessageID]; dup {
			continue // a repeated receipt in one batch: the first decides
		}
		keyed[r.MessageID] = r
		accts, ids, pids, delivered = append(accts, r.AccountID), append(ids, r.MessageID), append(pids, r.ProviderID), append(delivered, r.Delivered)
		pss, errs, ats = append(pss, r.ProviderStatus), append(errs, r.Error), append(ats, r.At)
	}
	if len(keyed) == 0 {
		return rest, nil
	}
	rows, err := tx.Query(ctx, receiptTransition+`
		FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::boolean[], $5::text[], $6::text[], $7::timestamptz[])
				AS u(account_id, id, pid, delivered, ps, err, at)
		WHERE m.account_id = u.account_id AND m.id = u.id AND m.status = 'sent' AND m.provider_message_id = u.pid
		RETURNING m.job_id, m.account_id, m.network, m.cost_cents, 'sent', m.created_at,
			coalesce(m.delivered_at, m.failed_at), u.delivered, m.id`,
		accts, ids, pids, delivered, pss, errs, ats)
	if err != nil {
		return nil, fmt.Errorf("record receipts by key: %w", err)
	}
	matched := map[uuid.UUID]bool{}
	var id uuid.UUID
	if err := scanFinal(rows, agg, "receipt", &id, func(int16) { matched[id] = true }); err != nil {
		return nil, fmt.Errorf("record receipts by key: %w", err)
	}
	// Not matched by key (already final, or resubmitted under another id): the provider-id
	// path sorts them out.
	for id, r := range keyed {
		if !matched[id] {
			r.AccountID, r.MessageID = uuid.Nil, uuid.Nil
			rest = append(rest, r)
		}
	}
	return rest, nil
}
