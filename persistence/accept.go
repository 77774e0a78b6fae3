// Accepting sends: the group commit that debits wallets and records jobs, their messages,
// ledger entries, notifications and idempotency keys in one transaction.

package persistence

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrInsufficientBalance means the wallet cannot cover a debit. The tenant actor prevents it;
// the database's conditional update is the backstop.
var ErrInsufficientBalance = errors.New("insufficient balance")

// ErrDuplicateMessage refuses a job whose message id (chosen by the caller: an SMPP submit's)
// is a message's already: an earlier submit of it was accepted. Nothing is written or debited.
var ErrDuplicateMessage = errors.New("a message with this id was accepted already")

// AcceptResult is the outcome of one job in AcceptJobs.
type AcceptResult struct {
	Err    error // ErrInsufficientBalance, ErrFenced, ErrIdempotencyLost, ErrDuplicateMessage, or nil
	Wallet WalletSnapshot
}

// AcceptJobs durably records a group of jobs with their debits, messages, ledger entries and
// notifications in one transaction (group commit). A job whose account cannot cover its
// group's debits fails alone with ErrInsufficientBalance, one whose tenant incarnation was
// replaced (NewJob.Fence no longer its account's epoch) with ErrFenced, one whose message id
// is taken with ErrDuplicateMessage: never the group.
//
// The usual case is one round trip: a pipelined batch is one implicit transaction, and the
// wallets' CHECK (balance_cents >= 0) makes an overdraft abort it. Only then does the careful
// path find which accounts fall short. The tenant actors reserve before debiting, so that
// path runs only if something bypassed them (another node, a bug).
func (s *Store) AcceptJobs(ctx context.Context, jobs []NewJob) ([]AcceptResult, error) {
	g := groupDebits(jobs)
	results, err := s.acceptFast(ctx, jobs, g)
	if isCheckViolation(err) || isFenced(err) || isUniqueViolation(err, "messages_pkey") {
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
	if f := jobFences(jobs); len(f.accounts) > 0 {
		// Held FOR SHARE until the commit: a new incarnation's TakeFence waits for this debit.
		b.Queue(`WITH held AS (`+fenceCheck+`) SELECT tuma_fence($3, count(*)) FROM held`, f.accounts, f.epochs, int64(len(f.accounts)))
	}
	b.Queue(lockWallets, g.accounts)
	snaps := map[uuid.UUID]WalletSnapshot{}
	b.Queue(debitWallets+walletsReturning, g.accounts, g.costs, g.units, g.recipients).Query(func(rows pgx.Rows) error {
		return scanWallets(rows, func(w WalletSnapshot) { snaps[w.AccountID] = w })
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
	queueCampaignInserts(b, jobs)
	queueDebitEntries(b, jobs)
	queueDailySpend(b, jobs)
	queueNotifications(b, jobs)
	queueIdempotency(b, jobs)
}

// acceptCareful drops the jobs whose idempotency claim lapsed, debits with a balance condition
// and records only the jobs of accounts that could pay.
func (s *Store) acceptCareful(ctx context.Context, jobs []NewJob) ([]AcceptResult, error) {
	results := make([]AcceptResult, len(jobs))
	err := pgx.BeginFunc(ctx, s.accept, func(tx pgx.Tx) error {
		clear(results)
		f := jobFences(jobs)
		live, err := f.held(ctx, tx)
		if err != nil {
			return err
		}
		held, err := heldClaims(ctx, tx, jobs)
		if err != nil {
			return err
		}
		taken, err := takenMessageIDs(ctx, tx, jobs)
		if err != nil {
			return err
		}
		var claimed []NewJob
		for i, j := range jobs {
			if fenced(live, j.AccountID, j.Fence) {
				results[i].Err = ErrFenced
				continue
			}
			if j.Idempotency != nil && !held[*j.Idempotency] {
				results[i].Err = ErrIdempotencyLost
				continue
			}
			if slices.ContainsFunc(j.Inline, func(m NewMessage) bool { return taken[m.ID] }) {
				results[i].Err = ErrDuplicateMessage
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
		rows, err := tx.Query(ctx, debitWallets+` AND w.balance_cents >= u.cost`+walletsReturning,
			g.accounts, g.costs, g.units, g.recipients)
		if err != nil {
			return fmt.Errorf("debit wallets: %w", err)
		}
		snaps := map[uuid.UUID]WalletSnapshot{}
		if err := scanWallets(rows, func(w WalletSnapshot) { snaps[w.AccountID] = w }); err != nil {
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

// jobFences are the fenced (account, epoch) pairs of a group of jobs.
func jobFences(jobs []NewJob) *fencePairs {
	f := &fencePairs{}
	for _, j := range jobs {
		f.add(j.AccountID, j.Fence)
	}
	return f
}

func isCheckViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514"
}

// takenMessageIDs are the ids of the jobs' inline messages that are messages already.
func takenMessageIDs(ctx context.Context, tx pgx.Tx, jobs []NewJob) (map[uuid.UUID]bool, error) {
	var ids []uuid.UUID
	for _, j := range jobs {
		for _, m := range j.Inline {
			ids = append(ids, m.ID)
		}
	}
	rows, err := tx.Query(ctx, `SELECT id FROM messages WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("taken message ids: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("taken message ids: %w", err)
	}
	taken := make(map[uuid.UUID]bool, len(found))
	for _, id := range found {
		taken[id] = true
	}
	return taken, nil
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

// queueOpenJobs opens the jobs for dispatch; a scheduled campaign's job opens when it is due
// (StartDueCampaigns).
func queueOpenJobs(b *pgx.Batch, jobs []NewJob) {
	ids, accts := make([]uuid.UUID, 0, len(jobs)), make([]uuid.UUID, 0, len(jobs))
	promo, single := make([]bool, 0, len(jobs)), make([]bool, 0, len(jobs))
	epochs := make([]int64, 0, len(jobs))
	for _, j := range jobs {
		if j.Campaign == nil || j.Campaign.ScheduledAt == nil {
			ids, accts, promo = append(ids, j.ID), append(accts, j.AccountID), append(promo, j.Promotional)
			single, epochs = append(single, j.single()), append(epochs, j.Fence)
		}
	}
	b.Queue(`INSERT INTO open_jobs (job_id, account_id, promotional, single, epoch)
		SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::boolean[], $4::boolean[], $5::bigint[])`, ids, accts, promo, single, epochs)
}

func queueJobInserts(b *pgx.Batch, jobs []NewJob) {
	n := len(jobs)
	var (
		ids, accts                    = make([]uuid.UUID, n), make([]uuid.UUID, n)
		campaigns                     = make([]*uuid.UUID, n)
		sources, msgs, prefixes       = make([]string, n), make([]string, n), make([]string, n)
		senders, prefixed             = make([]string, n), make([]string, n)
		prices, units, costs, recipsN = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		counts                        = make([]string, n)
		pending                       = make([][]byte, n)
		firsts, lasts                 = make([]*uuid.UUID, n), make([]*uuid.UUID, n)
		refs                          = make([]*string, n)
		suppressed                    = make([]int32, n)
		promo                         = make([]bool, n)
		optOut                        = make([]string, n)
	)
	for i, j := range jobs {
		ids[i], accts[i], campaigns[i] = j.ID, j.AccountID, j.CampaignID
		sources[i], msgs[i], prefixes[i] = j.Source, j.Message, j.SharedPrefix
		senders[i], prefixed[i] = textArray(j.Senders[1:]), boolArray(j.Prefixed[1:])
		prices[i], units[i], costs[i], recipsN[i] = j.PriceCents, j.Units, j.CostCents, int64(j.Recipients)
		pending[i], refs[i], suppressed[i] = j.Pending, j.Reference, int32(j.Suppressed)
		promo[i], optOut[i] = j.Promotional, j.OptOut
		counts[i] = intArray(j.NetworkCounts[1:])
		if len(j.Inline) > 0 {
			lo, hi := messageRange(j.Inline)
			firsts[i], lasts[i] = &lo, &hi
		}
	}
	b.Queue(`INSERT INTO jobs (id, account_id, campaign_id, source, message, shared_prefix, senders, prefixed,
			price_cents, recipients_count, sms_units, cost_cents, pending_recipients, network_counts, first_message_id, last_message_id,
			reference, suppressed_count, promotional, opt_out)
		SELECT u.id, u.account_id, u.campaign_id, u.source, u.message, u.prefix, u.senders::text[], u.prefixed::boolean[],
			u.price, u.recipients, u.units, u.cost, u.pending, u.counts::integer[], u.first, u.last, u.reference, u.suppressed,
			u.promo, u.opt_out
		FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
			$9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bytea[], $14::text[], $15::uuid[], $16::uuid[], $17::text[],
			$18::integer[], $19::boolean[], $20::text[])
			AS u(id, account_id, campaign_id, source, message, prefix, senders, prefixed, price, recipients, units, cost, pending, counts,
				first, last, reference, suppressed, promo, opt_out)`,
		ids, accts, campaigns, sources, msgs, prefixes, senders, prefixed, prices, recipsN, units, costs, pending, counts, firsts, lasts, refs,
		suppressed, promo, optOut)
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
			parts, encoding, cost_cents, smpp, smpp_failed_only)
		SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::smallint[], $7::text[],
			$8::text[], $9::boolean[], $10::smallint[], $11::smallint[], $12::integer[], $13::boolean[], $14::boolean[])`,
		m.ids, m.jobs, m.accts, m.campaigns, m.recipients, m.networks, m.senders, m.bodies, m.prefixed,
		m.parts, m.encodings, m.costs, m.smpp, m.smppFailedOnly)
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
		if j.Campaign != nil {
			descs[i] = fmt.Sprintf("Campaign %q to %d recipient%s", j.Campaign.Name, j.Recipients, plural(j.Recipients))
		}
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
	var statuses []int32
	for _, j := range jobs {
		if j.Idempotency != nil {
			// A send answers 202 with its job; a campaign 201 with itself.
			resource, status := j.ID, int32(202)
			if j.Campaign != nil {
				resource, status = j.Campaign.ID, 201
			}
			accts, keys, jobIDs = append(accts, j.Idempotency.AccountID), append(keys, j.Idempotency.Key), append(jobIDs, resource)
			claims, statuses = append(claims, j.Idempotency.Claim), append(statuses, status)
		}
	}
	if len(keys) == 0 {
		return
	}
	// The key completes with the job: a crash can never leave a job without its key (a replay
	// would charge again) or a key without its job. A claim that lapsed and was taken over by a
	// retry fails the whole batch (tuma_fence), and AcceptJobs retries it without that job.
	b.Queue(`WITH done AS (
			UPDATE idempotency_keys k SET state = 'done', response_status = u.status, resource_id = u.job_id
			FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::uuid[], $6::integer[]) AS u(account_id, key, job_id, claim, status)
			WHERE k.account_id = u.account_id AND k.key = u.key AND k.claim = u.claim AND k.state = 'in_flight'
			RETURNING 1)
		SELECT tuma_fence($5, count(*)) FROM done`, accts, keys, jobIDs, claims, int64(len(keys)), statuses)
}

// queueDailySpend adds the group's debits to their accounts' figures of the day (UTC), which
// the spend-trend report reads; refunds take theirs off the day of their job (queueDailySpendRefunds).
func queueDailySpend(b *pgx.Batch, jobs []NewJob) {
	g := groupDebits(jobs)
	b.Queue(`INSERT INTO account_days (account_id, day, spend_cents, sms_count)
		SELECT u.account_id, (now() AT TIME ZONE 'UTC')::date, u.cost, u.units
		FROM unnest($1::uuid[], $2::bigint[], $3::bigint[]) AS u(account_id, cost, units)
		ORDER BY u.account_id
		ON CONFLICT (account_id, day) DO UPDATE SET spend_cents = account_days.spend_cents + excluded.spend_cents,
			sms_count = account_days.sms_count + excluded.sms_count`, g.accounts, g.costs, g.units)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
