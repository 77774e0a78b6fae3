package drill

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// settling is how long the checks wait for the engine to finish what it accepted.
type settling struct {
	limit time.Duration // the longest wait
	stall time.Duration // give up when queued work does not move for this long
	// Sent messages whose receipts a crash lost wait for the stale-sent sweep (every minute
	// once TUMA_RECEIPT_TIMEOUT passed): only they may stand still this long.
	sentStall time.Duration
}

func defaultSettling() settling {
	return settling{limit: 10 * time.Minute, stall: 30 * time.Second, sentStall: 150 * time.Second}
}

// pending is what the engine has not finished.
type pending struct{ open, queued, sent int64 }

func (p pending) zero() bool { return p.open == 0 && p.queued == 0 && p.sent == 0 }

func readPending(ctx context.Context, db *pgx.Conn) (pending, error) {
	var p pending
	err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM open_jobs),
		(SELECT count(*) FROM messages WHERE status = 'queued'), (SELECT count(*) FROM messages WHERE status = 'sent')`).
		Scan(&p.open, &p.queued, &p.sent)
	return p, err
}

// settle waits until no job is open and no message queued or sent. It returns how long that
// took, or what was left when it gave up.
func settle(ctx context.Context, db *pgx.Conn, s settling) (time.Duration, pending, error) {
	start := time.Now()
	var last pending
	changed := time.Now()
	for {
		p, err := readPending(ctx, db)
		if err != nil {
			return time.Since(start), p, err
		}
		if p.zero() {
			return time.Since(start), p, nil
		}
		if p != last {
			last, changed = p, time.Now()
		}
		still := time.Since(changed)
		switch {
		case time.Since(start) > s.limit:
			return time.Since(start), p, fmt.Errorf("not settled within %s", s.limit)
		case p.queued > 0 && still > s.stall:
			return time.Since(start), p, fmt.Errorf("%s queued messages did not move for %s", count(p.queued), secs(still))
		case still > s.sentStall:
			return time.Since(start), p, fmt.Errorf("nothing moved for %s", secs(still))
		}
		select {
		case <-ctx.Done():
			return time.Since(start), p, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// jobFacts are a job's own figures next to recounts of its messages and ledger entries.
type jobFacts struct {
	id, account                                    string
	recipients                                     int64
	cost, deliveredCount, failedCount, refundedCol int64
	single                                         bool // its counters are its message's (migration 032)
	rows, distinct, delivered, failed              int64
	failedCost, messagesCost                       int64
	debits, debitEntries, refunds                  int64
}

const jobFactsQuery = `
SELECT j.id::text, j.account_id::text, j.recipients_count, j.cost_cents, j.delivered_count, j.failed_count, j.refunded_cents,
	j.recipients_count = 1 AND j.campaign_id IS NULL, coalesce(m.n, 0), coalesce(m.d, 0), coalesce(m.dl, 0), coalesce(m.fl, 0), coalesce(m.fc, 0), coalesce(m.cost, 0),
	coalesce(t.debits, 0), coalesce(t.nd, 0), coalesce(t.refunds, 0)
FROM jobs j
LEFT JOIN (SELECT job_id, count(*) n, count(DISTINCT recipient) d,
		count(*) FILTER (WHERE status = 'delivered') dl, count(*) FILTER (WHERE status = 'failed') fl,
		sum(cost_cents) FILTER (WHERE status = 'failed') fc, sum(cost_cents) cost
	FROM messages GROUP BY job_id) m ON m.job_id = j.id
LEFT JOIN (SELECT job_id, sum(amount_cents) FILTER (WHERE type = 'debit') debits, count(*) FILTER (WHERE type = 'debit') nd,
		sum(amount_cents) FILTER (WHERE type = 'refund') refunds
	FROM wallet_transactions WHERE job_id IS NOT NULL GROUP BY job_id) t ON t.job_id = j.id`

// accountFacts are a wallet's balance next to its ledger.
type accountFacts struct {
	id                               string
	balance, topups, debits, refunds int64
}

const accountFactsQuery = `
SELECT w.account_id::text, w.balance_cents,
	coalesce(sum(t.amount_cents) FILTER (WHERE t.type = 'topup'), 0),
	coalesce(sum(t.amount_cents) FILTER (WHERE t.type = 'debit'), 0),
	coalesce(sum(t.amount_cents) FILTER (WHERE t.type = 'refund'), 0)
FROM wallets w LEFT JOIN wallet_transactions t ON t.account_id = w.account_id
GROUP BY w.account_id, w.balance_cents`

// keyCheck is the clients' view of their sends, for the Idempotency-Key checks.
type keyCheck struct {
	outcomes []outcome
	// lease, when set, checks claims are kept on unknown outcomes: after a 503 "unavailable"
	// the first request may still commit until its claim's lease (the request timeout plus
	// 5 s) lapses, so a retry before then must replay it, never run the send again.
	lease time.Duration
	// pending says which 503 answers (by X-Request-Id) the node logged as the engine not
	// answering in time: those requests held their claim and may still commit. A 503 for a
	// request that timed out before its claim was taken has nothing to keep.
	pending map[string]bool
}

// checkInvariants waits for the node's engine to settle, then checks every invariant on its
// database and records a row for each; keys (nil for none) adds the Idempotency-Key checks.
// The node must be running (it finishes the work).
func (r *runner) checkInvariants(ctx context.Context, n *node, rec *recorder, keys *keyCheck, s settling) error {
	db, err := n.db(ctx)
	if err != nil {
		return fmt.Errorf("open the node's database: %w", err)
	}
	defer db.Close(context.WithoutCancel(ctx))

	took, left, serr := settle(ctx, db, s)
	if serr != nil {
		rec.check("settled", false, fmt.Sprintf("%s open jobs, %s queued and %s sent messages after %s", count(left.open),
			count(left.queued), count(left.sent), secs(took)), "every job finished", serr.Error())
	} else {
		rec.value("settled", took.Seconds(), "s", true, "every job finished "+secs(took)+" after the load", "every job finished", "")
	}
	return r.checkFacts(ctx, db, rec, keys)
}

// checkFacts checks what must hold of a settled database.
func (r *runner) checkFacts(ctx context.Context, db *pgx.Conn, rec *recorder, keys *keyCheck) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	jobs, err := query(ctx, db, jobFactsQuery, func(row pgx.CollectableRow) (jobFacts, error) {
		var j jobFacts
		err := row.Scan(&j.id, &j.account, &j.recipients, &j.cost, &j.deliveredCount, &j.failedCount, &j.refundedCol,
			&j.single, &j.rows, &j.distinct, &j.delivered, &j.failed, &j.failedCost, &j.messagesCost, &j.debits, &j.debitEntries, &j.refunds)
		return j, err
	})
	if err != nil {
		return fmt.Errorf("read jobs: %w", err)
	}
	accounts, err := query(ctx, db, accountFactsQuery, func(row pgx.CollectableRow) (accountFacts, error) {
		var a accountFacts
		err := row.Scan(&a.id, &a.balance, &a.topups, &a.debits, &a.refunds)
		return a, err
	})
	if err != nil {
		return fmt.Errorf("read wallets: %w", err)
	}

	var msgs, missing, dupes, unfinal, badCounters, badCharge, badRefund int64
	var exMissing, exCounter, exCharge, exRefund string
	var failedCost, refunded int64
	for _, j := range jobs {
		msgs += j.rows
		if j.rows != j.recipients {
			missing++
			exMissing = fmt.Sprintf("job %s has %d message rows for %d recipients", j.id, j.rows, j.recipients)
		}
		dupes += j.rows - j.distinct
		unfinal += j.rows - j.delivered - j.failed
		if j.single { // a 1-recipient job's row is never folded: its message is its progress
			j.deliveredCount, j.failedCount, j.refundedCol = j.delivered, j.failed, j.failedCost
		}
		if j.deliveredCount != j.delivered || j.failedCount != j.failed {
			badCounters++
			exCounter = fmt.Sprintf("job %s counts %d delivered/%d failed, its messages %d/%d", j.id, j.deliveredCount, j.failedCount, j.delivered, j.failed)
		}
		if j.debitEntries != 1 || j.debits != j.cost || j.messagesCost != j.cost {
			badCharge++
			exCharge = fmt.Sprintf("job %s costs %s, debited %s in %d entries, its messages cost %s", j.id, kes(j.cost), kes(j.debits), j.debitEntries, kes(j.messagesCost))
		}
		if j.refunds != j.failedCost || j.refundedCol != j.failedCost {
			badRefund++
			exRefund = fmt.Sprintf("job %s: failed messages cost %s, refunds %s (refunded_cents %s)", j.id, kes(j.failedCost), kes(j.refunds), kes(j.refundedCol))
		}
		failedCost += j.failedCost
		refunded += j.refunds
	}
	rec.value("exactly once", float64(missing+dupes), "jobs", missing == 0 && dupes == 0,
		fmt.Sprintf("%s jobs, %s messages: %d jobs with rows ≠ recipients, %d duplicate recipients", count(int64(len(jobs))), count(msgs), missing, dupes),
		"0 and 0", firstOf(exMissing, "duplicate recipients in a job"))
	rec.value("all final", float64(unfinal), "messages", unfinal == 0, count(unfinal)+" messages neither delivered nor failed", "0", "")
	rec.value("counters", float64(badCounters), "jobs", badCounters == 0,
		count(badCounters)+" jobs whose delivered/failed counts ≠ a recount", "0", exCounter)
	rec.value("charges", float64(badCharge), "jobs", badCharge == 0,
		count(badCharge)+" jobs not debited exactly once at their price", "0", exCharge)
	rec.value("refunds", float64(badRefund), "jobs", badRefund == 0,
		fmt.Sprintf("%d jobs whose refunds ≠ cost of failed messages (%s refunded for %s failed)", badRefund, kes(refunded), kes(failedCost)), "0", exRefund)

	var off, drift int64
	var exLedger string
	for _, a := range accounts {
		if d := a.balance - (a.topups - a.debits + a.refunds); d != 0 {
			off++
			drift += d
			exLedger = fmt.Sprintf("account %s: balance %s, top-ups − debits + refunds = %s", a.id, kes(a.balance), kes(a.topups-a.debits+a.refunds))
		}
	}
	rec.value("ledger", float64(off), "accounts", off == 0,
		fmt.Sprintf("%d of %d accounts whose balance ≠ top-ups − debits + refunds (off by %s)", off, len(accounts), kes(drift)), "0", exLedger)

	if err := checkCounts(ctx, db, rec); err != nil {
		return err
	}
	if keys != nil {
		return checkKeys(ctx, db, rec, keys, jobs)
	}
	return nil
}

// accountCountsQuery lists the accounts whose message counts (with what the progress log has
// not folded yet, read in the same snapshot) differ from a recount of their messages: once
// settled, none sent and every delivered and failed message counted once.
const accountCountsQuery = `
SELECT c.account_id::text, c.sent + coalesce(u.s, 0), c.delivered + coalesce(u.d, 0), c.failed + coalesce(u.f, 0),
	coalesce(m.d, 0), coalesce(m.f, 0)
FROM message_counts c
LEFT JOIN (SELECT a, sum(s) s, sum(d) d, sum(f) f FROM progress_log l
		CROSS JOIN LATERAL unnest(l.accounts, l.sent, l.delivered, l.failed) AS x(a, s, d, f) GROUP BY a) u ON u.a = c.account_id
LEFT JOIN (SELECT account_id, count(*) FILTER (WHERE status = 'delivered') d, count(*) FILTER (WHERE status = 'failed') f
	FROM messages GROUP BY account_id) m ON m.account_id = c.account_id
WHERE c.sent + coalesce(u.s, 0) <> 0 OR c.delivered + coalesce(u.d, 0) <> coalesce(m.d, 0)
	OR c.failed + coalesce(u.f, 0) <> coalesce(m.f, 0)`

// checkCounts checks the accounts' message counts (what /sms/stats shows) against their
// messages: the per-account side of the progress a 1-recipient job no longer folds into its row.
func checkCounts(ctx context.Context, db *pgx.Conn, rec *recorder) error {
	off, err := query(ctx, db, accountCountsQuery, func(row pgx.CollectableRow) (string, error) {
		var id string
		var sent, deliv, failed, d, f int64
		if err := row.Scan(&id, &sent, &deliv, &failed, &d, &f); err != nil {
			return "", err
		}
		return fmt.Sprintf("account %s counts %d sent, %d delivered, %d failed; its messages %d delivered, %d failed",
			id, sent, deliv, failed, d, f), nil
	})
	if err != nil {
		return fmt.Errorf("read message counts: %w", err)
	}
	rec.value("account counts", float64(len(off)), "accounts", len(off) == 0,
		count(int64(len(off)))+" accounts whose message counts ≠ a recount of their messages", "0", firstOf(off...))
	return nil
}

// checkKeys compares what the clients were told with what was charged: every send definite,
// every 202's job charged what it said, and no job nobody was told of (a key charged twice).
func checkKeys(ctx context.Context, db *pgx.Conn, rec *recorder, kc *keyCheck, jobs []jobFacts) error {
	outcomes := kc.outcomes
	type keyRow struct{ account, key, state, resource string }
	keys, err := query(ctx, db, `SELECT account_id::text, key, state, coalesce(resource_id::text, '') FROM idempotency_keys`,
		func(row pgx.CollectableRow) (keyRow, error) {
			var k keyRow
			err := row.Scan(&k.account, &k.key, &k.state, &k.resource)
			return k, err
		})
	if err != nil {
		return fmt.Errorf("read idempotency keys: %w", err)
	}
	byKey := map[[2]string]keyRow{}
	for _, k := range keys {
		byKey[[2]string{k.account, k.key}] = k
	}
	byJob := map[string]jobFacts{}
	for _, j := range jobs {
		byJob[j.id] = j
	}
	told := map[string]bool{}
	accounts := map[string]bool{}
	var undecided, wrongKey, wrongCost, unknowns, rerun int64
	var exRerun string
	var exUndecided, exKey, exCost string
	var toldCents, debitedCents, accepted int64
	for _, o := range outcomes {
		accounts[o.t.id] = true
		if o.status == 0 {
			undecided++
			exUndecided = fmt.Sprintf("key %s: %s", o.key, o.err)
			continue
		}
		if o.status < 200 || o.status > 299 {
			continue
		}
		told[o.jobID] = true
		if !o.unknownAt.IsZero() && kc.pending[o.unknownReq] {
			unknowns++
			// When the send ran again: its job's id is a UUIDv7 of that moment (a retry may
			// have started earlier and waited on the key until the claim lapsed).
			if gap := jobTime(o).Sub(o.unknownAt); !o.replayed && gap < kc.lease {
				rerun++
				exRerun = fmt.Sprintf("key %s: answered 503 unavailable, then run again %s later (job %s) instead of replaying", o.key, secs(gap), o.jobID)
			}
		}
		accepted += int64(o.count)
		toldCents += o.cents
		j, ok := byJob[o.jobID]
		debitedCents += j.debits
		if !ok || j.debits != o.cents || j.recipients != int64(o.count) {
			wrongCost++
			exCost = fmt.Sprintf("key %s: told job %s, %d recipients, %s; the database has %d recipients debited %s", o.key, o.jobID, o.count, kes(o.cents), j.recipients, kes(j.debits))
		}
		k, ok := byKey[[2]string{o.t.id, o.key}]
		if !ok || k.state != "done" || k.resource != o.jobID {
			wrongKey++
			exKey = fmt.Sprintf("key %s: told job %s; the key is %q for %q", o.key, o.jobID, k.state, k.resource)
		}
	}
	var unknown int64
	var exUnknown string
	for _, j := range jobs {
		if accounts[j.account] && !told[j.id] {
			unknown++
			exUnknown = fmt.Sprintf("job %s of account %s (%d recipients, %s) was never in a 202", j.id, j.account, j.recipients, kes(j.debits))
		}
	}
	rec.value("sends definite", float64(undecided), "sends", undecided == 0,
		fmt.Sprintf("%s sends, %d never answered definitely", count(int64(len(outcomes))), undecided), "0 undecided", exUndecided)
	rec.value("no key charged twice", float64(unknown+wrongKey), "jobs", unknown == 0 && wrongKey == 0,
		fmt.Sprintf("%d jobs no 202 told of, %d keys not done for their 202's job", unknown, wrongKey), "0 and 0", firstOf(exUnknown, exKey))
	if kc.lease > 0 {
		rec.value("claims kept on unknown outcomes", float64(rerun), "keys", rerun == 0,
			fmt.Sprintf("%d of %d keys answered 503 unavailable were run again within the claim's lease instead of replayed", rerun, unknowns),
			"0", firstOf(exRerun, "a key was given back after an unknown outcome: a retry after a timeout can be charged twice"))
	}
	rec.value("charged as told", float64(wrongCost), "jobs", wrongCost == 0 && toldCents == debitedCents,
		fmt.Sprintf("%s messages in 202s: told %s, debited %s; %d jobs differ", count(accepted), kes(toldCents), kes(debitedCents), wrongCost), "equal", exCost)
	return nil
}

// query runs sql and collects its rows with fn.
func query[T any](ctx context.Context, db *pgx.Conn, sql string, fn pgx.RowToFunc[T]) ([]T, error) {
	rows, err := db.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, fn)
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// jobTime is when a 2xx send's job was created (its UUIDv7 id), else when its answering
// attempt started.
func jobTime(o outcome) time.Time {
	if id, err := uuid.Parse(o.jobID); err == nil && id.Version() == 7 {
		sec, nsec := id.Time().UnixTime()
		return time.Unix(sec, nsec)
	}
	return o.lastStart
}
