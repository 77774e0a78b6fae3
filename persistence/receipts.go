// Status transitions: submissions, failures and delivery receipts written in batches.

package persistence

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
)

// Submitted records that a carrier accepted a message.
type Submitted struct {
	AccountID  uuid.UUID
	MessageID  uuid.UUID
	ProviderID string
	Network    carriers.Network
	At         time.Time
	// Late is the network's id for a message already sent with an unknown outcome (its
	// answer came after the link stopped waiting): only the id is recorded.
	Late bool
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
	// Reused lists carrier ids given to a second message of ours (both are kept).
	Reused []ReusedID
	// WebhookEvents counts the webhook events written with the transitions.
	WebhookEvents int

	remember []cachedMessage // for the webhook deliveries, once committed (webhookcache.go)
	forget   []uuid.UUID
}

// FlushReceipts applies a batch of status transitions in one transaction: message rows,
// provider references and refunds for failed messages (one ledger entry per job and flush).
// A transition only applies from an earlier state, so replays and duplicate receipts change
// nothing and are never refunded twice. The job and account counter deltas these transitions
// imply go to the progress log in the same transaction (see FoldProgress).
func (s *Store) FlushReceipts(ctx context.Context, rb ReceiptBatch) (FlushResult, error) {
	res, err := s.flushReceipts(ctx, rb, true)
	if isUniqueViolation(err, "provider_refs_pkey") {
		// A provider id seen before (a carrier repeating itself): COPY cannot skip it, the
		// slower insert can.
		res, err = s.flushReceipts(ctx, rb, false)
	}
	if err == nil {
		s.hookCache.drop(res.forget)
		s.hookCache.put(res.remember)
		res.remember, res.forget = nil, nil
	}
	if err == nil && res.WebhookEvents > 0 {
		s.hookEventsWritten()
	}
	return res, err
}

func (s *Store) flushReceipts(ctx context.Context, rb ReceiptBatch, copyRefs bool) (FlushResult, error) {
	var res FlushResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res = FlushResult{}
		hooks, err := s.subscriptions(ctx, tx, keyedBatchPlans)
		if err != nil {
			return err
		}
		agg := newFlushAggregate()
		agg.hooks = newHookEvents(hooks)
		if agg.hooks.any() {
			agg.remember = s.hookCache.list()
		}
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
		res.Reused = agg.reused
		res.WebhookEvents = agg.hooks.n
		res.remember, res.forget = agg.remember, agg.forget
		res.Refunds, err = settle(ctx, tx, res.Jobs, s.faults, agg.hooks)
		return err
	})
	if err != nil {
		return FlushResult{}, fmt.Errorf("flush receipts: %w", err)
	}
	return res, nil
}

type flushAggregate struct {
	jobs      map[uuid.UUID]*JobProgress
	reused    []ReusedID
	final     []FinalMessage
	submitted int
	matched   int
	hooks     *hookEvents // the webhook events the transitions make
	remember  []cachedMessage
	forget    []uuid.UUID
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
	if err := recordLateIDs(ctx, tx, subs, agg); err != nil {
		return err
	}
	n := len(subs)
	accts, ids, pids, ats := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]*string, n), make([]time.Time, n)
	for i, s := range subs {
		if s.Late { // matches nothing queued: the message is sent already
			continue
		}
		accts[i], ids[i], ats[i] = s.AccountID, s.MessageID, s.At
		if s.ProviderID != "" {
			pids[i] = &subs[i].ProviderID
		}
	}
	// A submission whose answer never came (a timeout) is sent with no provider id: it may have
	// reached the network, so it is neither resent nor refunded until the stale-sent sweep
	// settles it.
	tail := agg.eventFields(sentEventFields, accts)
	rows, err := tx.Query(ctx, `
		UPDATE messages m SET status = 'sent', provider_message_id = u.pid,
			provider_status = CASE WHEN u.pid IS NULL THEN 'UNKNOWN' ELSE 'ENROUTE' END, sent_at = u.at
		FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[]) AS u(account_id, id, pid, at)
		WHERE m.account_id = u.account_id AND m.id = u.id AND m.status = 'queued'
		RETURNING m.job_id, m.account_id, m.network, m.id`+tail, accts, ids, pids, ats)
	if err != nil {
		return fmt.Errorf("record submissions: %w", err)
	}
	var (
		job, acct, id uuid.UUID
		net           int16
		ev            eventRow
	)
	dest := append([]any{&job, &acct, &net, &id}, eventDest(&ev, tail)...)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return err
		}
		if tail != "" { // the statement returned what an event shows: an account of the batch wants them
			agg.keep(ev.slot(acct, id, job, net, ev.parts, ev.cost, MessageSent, nil))
		}
		agg.hooks.message(acct, id, EventMessageSent)
		agg.job(job, acct).Sent++
		agg.submitted++
		agg.matched++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("record submissions: %w", err)
	}
	return recordProviderRefs(ctx, tx, subs, agg, copyRefs)
}

// recordLateIDs gives messages sent with an unknown outcome the network id that came late.
func recordLateIDs(ctx context.Context, tx pgx.Tx, subs []Submitted, agg *flushAggregate) error {
	var accts, ids []uuid.UUID
	var pids []string
	for _, s := range subs {
		if s.Late && s.ProviderID != "" {
			accts, ids, pids = append(accts, s.AccountID), append(ids, s.MessageID), append(pids, s.ProviderID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	tag, err := tx.Exec(ctx, `
		UPDATE messages m SET provider_message_id = u.pid, provider_status = 'ENROUTE'
		FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS u(account_id, id, pid)
		WHERE m.account_id = u.account_id AND m.id = u.id AND m.status = 'sent' AND m.provider_message_id IS NULL`,
		accts, ids, pids)
	if err != nil {
		return fmt.Errorf("record late provider ids: %w", err)
	}
	agg.matched += int(tag.RowsAffected())
	agg.forget = append(agg.forget, ids...)
	return nil
}

// ReusedID is a carrier message id the carrier gave to a second message of ours.
type ReusedID struct {
	ProviderID string
	Network    carriers.Network
}

// recordProviderRefs maps the carrier's message ids to ours. COPY costs about half of INSERT …
// SELECT per row; an id the carrier already gave another message fails the COPY, and
// FlushReceipts repeats the flush with the insert, which keeps both under new generations.
func recordProviderRefs(ctx context.Context, tx pgx.Tx, subs []Submitted, agg *flushAggregate, copyRefs bool) error {
	type ref struct {
		pid string
		net carriers.Network
		id  uuid.UUID
	}
	seen := make(map[ref]bool, len(subs))
	pids, nets := make([]string, 0, len(subs)), make([]int16, 0, len(subs))
	ids, accts := make([]uuid.UUID, 0, len(subs)), make([]uuid.UUID, 0, len(subs))
	for _, s := range subs {
		k := ref{s.ProviderID, s.Network, s.MessageID}
		if s.ProviderID == "" || seen[k] {
			continue
		}
		seen[k] = true
		pids, nets, ids, accts = append(pids, s.ProviderID), append(nets, int16(s.Network)), append(ids, s.MessageID), append(accts, s.AccountID)
	}
	if len(pids) == 0 {
		return nil
	}
	if copyRefs {
		var rows copyRows
		rows.reset()
		rows.grow(len(pids) * 80) // 2 + 4 fields' lengths, the ids, a provider id of ≈ 20
		for i := range pids {
			rows.row(4)
			rows.text(pids[i])
			rows.int2(nets[i])
			rows.uuid(ids[i])
			rows.uuid(accts[i])
		}
		if _, err := rows.copyTo(ctx, tx, "provider_refs", "provider_message_id, network, message_id, account_id"); err != nil {
			return fmt.Errorf("record provider ids: %w", err)
		}
		return nil
	}
	rows, err := tx.Query(ctx, `
		WITH u AS (SELECT * FROM unnest($1::text[], $2::smallint[], $3::uuid[], $4::uuid[]) WITH ORDINALITY AS u(pid, net, id, acct, ord)),
		fresh AS (SELECT u.* FROM u WHERE NOT EXISTS (SELECT 1 FROM provider_refs r
			WHERE r.provider_message_id = u.pid AND r.network = u.net AND r.message_id = u.id))
		INSERT INTO provider_refs (provider_message_id, network, message_id, account_id, generation)
		SELECT pid, net, id, acct, coalesce((SELECT max(r.generation) + 1 FROM provider_refs r
				WHERE r.provider_message_id = fresh.pid AND r.network = fresh.net), 0)
			+ row_number() OVER (PARTITION BY pid, net ORDER BY ord) - 1
		FROM fresh
		ON CONFLICT DO NOTHING
		RETURNING provider_message_id, network, generation`, pids, nets, ids, accts)
	if err != nil {
		return fmt.Errorf("record provider ids: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r ReusedID
		var net, gen int16
		if err := rows.Scan(&r.ProviderID, &net, &gen); err != nil {
			return err
		}
		if gen > 0 {
			r.Network = carriers.Network(net)
			agg.reused = append(agg.reused, r)
		}
	}
	return rows.Err()
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
	tail := agg.eventFields(finalEventFields, accts)
	rows, err := tx.Query(ctx, `
		UPDATE messages m SET status = 'failed', provider_status = u.ps, error = u.err, failed_at = u.at
		FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::timestamptz[]) AS u(account_id, id, ps, err, at),
			LATERAL (SELECT status FROM messages WHERE account_id = u.account_id AND id = u.id) AS before
		WHERE m.account_id = u.account_id AND m.id = u.id AND m.status IN ('queued', 'sent')
		RETURNING m.job_id, m.account_id, m.network, m.cost_cents, m.parts, before.status, m.created_at, m.failed_at, m.id`+
		tail, accts, ids, pss, errs, ats)
	if err != nil {
		return fmt.Errorf("record failures: %w", err)
	}
	return scanFinal(rows, agg, "submit", nil, nil, tail)
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
	tail := agg.eventFields(finalEventFields, nil) // whose messages these are is not known yet
	rows, err := tx.Query(ctx, receiptTransition+`
		FROM unnest($1::text[], $2::smallint[], $3::boolean[], $4::text[], $5::text[], $6::timestamptz[])
				AS u(pid, net, delivered, ps, err, at)
			-- a reused id: the newest submission still waiting for its receipt
			JOIN LATERAL (SELECT r.account_id, r.message_id FROM provider_refs r
				JOIN messages x ON x.account_id = r.account_id AND x.id = r.message_id AND x.status = 'sent'
				WHERE r.provider_message_id = u.pid AND r.network = u.net
				ORDER BY r.generation DESC LIMIT 1) r ON true
		WHERE m.account_id = r.account_id AND m.id = r.message_id AND m.status = 'sent'
		RETURNING m.job_id, m.account_id, m.network, m.cost_cents, m.parts, 'sent', m.created_at,
			coalesce(m.delivered_at, m.failed_at), m.id, u.delivered, u.pid`+tail,
		pids, nets, delivered, pss, errs, ats)
	if err != nil {
		return nil, fmt.Errorf("record receipts: %w", err)
	}
	matched := map[key]bool{}
	var pid string
	if err := scanFinal(rows, agg, "receipt", &pid, func(net int16) { matched[key{pid, carriers.Network(net)}] = true }, tail); err != nil {
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
	// Known means final: a submission whose outcome committed after the update above (another
	// node wrote it) is sent now, and its receipt is late, not a duplicate.
	krows, err := tx.Query(ctx, `SELECT r.provider_message_id, r.network FROM provider_refs r
		JOIN unnest($1::text[], $2::smallint[]) AS u(pid, net) ON r.provider_message_id = u.pid AND r.network = u.net
		GROUP BY 1, 2
		HAVING NOT bool_or(EXISTS (SELECT 1 FROM messages x
			WHERE x.account_id = r.account_id AND x.id = r.message_id AND x.status = 'sent'))`, upids, unets)
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
// (job, account, network, cost, parts, previous status, created_at, done_at, id); receipt rows
// add (delivered, key), where key scans into the pointer given and matched runs after each row
// with the message's network; then the statement's tail of event fields (eventFields), if any.
func scanFinal(rows pgx.Rows, agg *flushAggregate, stage string, key any, matched func(network int16), tail string) error {
	defer rows.Close()
	// One set of destinations for every row: declared in the loop they escaped, row by row.
	var (
		job, acct, id   uuid.UUID
		net, parts      int16
		cost            int64
		before          string
		created, doneAt time.Time
		delivered       bool
	)
	dest := []any{&job, &acct, &net, &cost, &parts, &before, &created, &doneAt, &id}
	if key != nil {
		dest = append(dest, &delivered, key)
	}
	var ev eventRow
	dest = append(dest, eventDest(&ev, tail)...)
	for rows.Next() {
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
		if net > 0 && int(net) < carriers.NetworkSlots {
			p.Finished[net]++
		}
		status := MessageFailed
		if delivered {
			status = MessageDelivered
		}
		if tail != "" {
			agg.keep(ev.slot(acct, id, job, net, parts, cost, status, &doneAt))
		}
		if delivered {
			p.Delivered++
			agg.hooks.message(acct, id, EventMessageDelivered)
		} else {
			agg.hooks.message(acct, id, EventMessageFailed)
			p.Failed++
			p.RefundedCents += cost
			p.RefundedUnits += int64(parts)
		}
		agg.final = append(agg.final, FinalMessage{Network: carriers.Network(net), Delivered: delivered, Stage: stage,
			CreatedAt: created, DoneAt: doneAt})
		agg.matched++
	}
	return rows.Err()
}

// keyedBatchPlans makes a transaction's batch statements find their rows by key. Each
// batch names up to thousands of rows by primary key in a table of millions; with the array's
// true size in hand the planner tends to hash the whole table instead (it did: a seq scan of
// 600k messages per flush, every flush), and without fresh statistics it has no way to know
// better. An index lookup per row is what these statements always want.
const keyedBatchPlans = `SELECT set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true),
		set_config('enable_seqscan', 'off', true)`

// flushKeyedReceipts writes the receipts whose message is known by key, straight by primary
// key; it returns the rest (unknown, or not matched by key) for the provider-id lookup.
func flushKeyedReceipts(ctx context.Context, tx pgx.Tx, recs []Receipt, agg *flushAggregate) ([]Receipt, error) {
	var rest []Receipt
	n := len(recs)
	accts, ids := make([]uuid.UUID, 0, n), make([]uuid.UUID, 0, n)
	pids, pss, errs := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	delivered, ats := make([]bool, 0, n), make([]time.Time, 0, n)
	keyed := make(map[uuid.UUID]int, n) // message → its receipt in recs
	for i, r := range recs {
		if r.MessageID == uuid.Nil {
			rest = append(rest, r)
			continue
		}
		if _, dup := keyed[r.MessageID]; dup {
			continue // a repeated receipt in one batch: the first decides
		}
		keyed[r.MessageID] = i
		accts, ids, pids, delivered = append(accts, r.AccountID), append(ids, r.MessageID), append(pids, r.ProviderID), append(delivered, r.Delivered)
		pss, errs, ats = append(pss, r.ProviderStatus), append(errs, r.Error), append(ats, r.At)
	}
	if len(keyed) == 0 {
		return rest, nil
	}
	tail := agg.eventFields(finalEventFields, accts)
	rows, err := tx.Query(ctx, receiptTransition+`
		FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::boolean[], $5::text[], $6::text[], $7::timestamptz[])
				AS u(account_id, id, pid, delivered, ps, err, at)
		WHERE m.account_id = u.account_id AND m.id = u.id AND m.status = 'sent' AND m.provider_message_id = u.pid
		RETURNING m.job_id, m.account_id, m.network, m.cost_cents, m.parts, 'sent', m.created_at,
			coalesce(m.delivered_at, m.failed_at), m.id, u.delivered, m.id`+tail,
		accts, ids, pids, delivered, pss, errs, ats)
	if err != nil {
		return nil, fmt.Errorf("record receipts by key: %w", err)
	}
	var id uuid.UUID
	if err := scanFinal(rows, agg, "receipt", &id, func(int16) { delete(keyed, id) }, tail); err != nil {
		return nil, fmt.Errorf("record receipts by key: %w", err)
	}
	// Not matched by key (already final, or resubmitted under another id): the provider-id
	// path sorts them out.
	for _, i := range keyed {
		r := recs[i]
		r.AccountID, r.MessageID = uuid.Nil, uuid.Nil
		rest = append(rest, r)
	}
	return rest, nil
}
