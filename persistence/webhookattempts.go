// Webhook attempts: recording successes together with their endpoints' next deliveries, and
// failures one at a time, disabling an endpoint that keeps failing.

package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// WebhookAttempt is the outcome of one attempt.
type WebhookAttempt struct {
	DeliveryID, EndpointID uuid.UUID
	LeaseUntil             time.Time // the claim it was made under (WebhookDelivery.LeaseUntil)
	At                     time.Time
	Duration               time.Duration
	StatusCode             int // 0: no response
	Error                  string
	Succeeded              bool
	RetryAt                time.Time // when to try again; zero with Succeeded false: the delivery has failed
	Disable                string    // the endpoint is to be disabled at once, for this reason (it answered 410)
}

// ErrLeaseLost says an attempt's outcome was not recorded: its delivery is no longer pending
// under the claim the attempt was made with.
var ErrLeaseLost = errors.New("the delivery is no longer this attempt's")

// DisabledWebhook is an endpoint an attempt's outcome disabled.
type DisabledWebhook struct {
	ID, AccountID uuid.UUID
	URL, Reason   string
}

// WebhookFailed records an attempt that failed: the delivery waits for its retry (or has
// failed, with no RetryAt), the attempt is in its log, and the endpoint's failure streak goes on.
// An endpoint failing for failingLimit with no success, or told to be disabled, is disabled
// with a webhook_disabled notification; it is returned. An attempt whose claim lapsed and was
// taken by another node records nothing (ErrLeaseLost): that node's attempt is the delivery's.
// Successes are recorded by WebhookSucceeded.
//
// The failure and the disabling are two transactions (disabling takes the subscriptions'
// lock, which every failure should not): the delivery keeps its retry time until the disable
// commits and clears it, so one that does not commit (an error, a kill) leaves the delivery to
// be retried on its schedule, and that attempt disables the endpoint again, never a pending
// delivery with no due time on an enabled endpoint, which would hold its circuit open for good.
func (s *Store) WebhookFailed(ctx context.Context, a WebhookAttempt, failingLimit time.Duration) (*DisabledWebhook, error) {
	if a.Succeeded {
		return nil, fmt.Errorf("record webhook attempt: the attempt of %s succeeded", a.DeliveryID)
	}
	var failingSince *time.Time
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{BeginQuery: lazyBegin}, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		queueFailure(b, a, &failingSince)
		return tx.SendBatch(ctx, b).Close()
	})
	if errors.Is(err, ErrLeaseLost) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("record webhook attempt: %w", err)
	}
	reason := a.Disable
	if reason == "" && failingSince != nil && failingLimit > 0 && a.At.Sub(*failingSince) >= failingLimit {
		reason = "every delivery failed for " + failingLimit.String()
	}
	if reason == "" {
		return nil, nil
	}
	return s.disableWebhook(ctx, a.EndpointID, reason)
}

// WebhookForm asks for up to Limit new deliveries of an endpoint whose batch size is Batch.
type WebhookForm struct {
	Endpoint     uuid.UUID
	Batch, Limit int
}

// WebhookSuccesses is what recording successes did.
type WebhookSuccesses struct {
	Formed   []WebhookDelivery // the next deliveries, leased to the caller
	Lost     []uuid.UUID       // deliveries whose claim had lapsed: their success is not recorded (ErrLeaseLost)
	Unformed error             // endpoints whose secret no longer opens (ErrSealed): nothing formed for them
}

// WebhookSucceeded records successful attempts together (each delivery succeeded under its
// claim, its attempt in the log, its endpoint's circuit closed), and in the same transaction
// forms the next deliveries of each form's endpoint under the rules of a claim (c's Lanes and
// Lease): their lanes are free and the later events their deliveries held may go now. At
// batch_size 100 a busy endpoint makes a success for every 100 events, and what a transaction
// and its statements cost dominates what its rows do: a node records the successes that ended
// while its last such transaction ran in the next one.
func (s *Store) WebhookSucceeded(ctx context.Context, as []WebhookAttempt, forms []WebhookForm, c WebhookClaim) (WebhookSuccesses, error) {
	for _, a := range as {
		if !a.Succeeded {
			return WebhookSuccesses{}, fmt.Errorf("record webhook successes: the attempt of %s did not succeed", a.DeliveryID)
		}
	}
	var res WebhookSuccesses
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{BeginQuery: lazyBegin}, func(tx pgx.Tx) error {
		res = WebhookSuccesses{}
		recorded := make(map[uuid.UUID]bool, len(as))
		b := &pgx.Batch{}
		if len(as) > 0 {
			queueSuccesses(b, as, recorded)
		}
		reads := make([]*formRead, 0, len(forms))
		for _, f := range forms {
			if f.Limit > 0 && f.Batch > 0 {
				reads = append(reads, queueFormRead(b, formCandidate{endpoint: f.Endpoint, batch: f.Batch}, f.Limit, c))
			}
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		for _, a := range as {
			if !recorded[a.DeliveryID] {
				res.Lost = append(res.Lost, a.DeliveryID)
			}
		}
		w := &pgx.Batch{}
		var sealed []error
		for _, r := range reads {
			ds, err := s.formWrites(w, r)
			if errors.Is(err, ErrSealed) {
				sealed = append(sealed, fmt.Errorf("form webhook deliveries of %s: %w", r.cand.endpoint, err))
				continue
			}
			if err != nil {
				return err
			}
			res.Formed = append(res.Formed, ds...)
		}
		res.Unformed = errors.Join(sealed...)
		if w.Len() == 0 {
			return nil
		}
		return tx.SendBatch(ctx, w).Close()
	})
	if err != nil {
		return WebhookSuccesses{}, fmt.Errorf("record webhook successes: %w", err)
	}
	return res, nil
}

// queueSuccesses queues the record of successful attempts as one statement: each delivery
// succeeded under its claim, its attempt in the log, and each of their endpoints' circuits
// closed (their retries due at once, except those last answered 429 or 503, which may have
// been told how long to wait). It marks the deliveries recorded; one whose claim lapsed is not.
func queueSuccesses(b *pgx.Batch, as []WebhookAttempt, recorded map[uuid.UUID]bool) {
	n := len(as)
	ids, leases, codes, ms, ats := make([]uuid.UUID, n), make([]time.Time, n), make([]int32, n), make([]int32, n), make([]time.Time, n)
	for i, a := range as {
		ids[i], leases[i], codes[i], ms[i], ats[i] = a.DeliveryID, a.LeaseUntil, int32(a.StatusCode), int32(a.Duration.Milliseconds()), a.At
	}
	b.Queue(`WITH o AS (SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::int[], $4::int[], $5::timestamptz[])
				AS o(id, lease, code, ms, at)),
		d AS (
			UPDATE webhook_deliveries w SET attempts = w.attempts + 1, last_status_code = o.code, last_error = NULL,
				lease_until = NULL, status = 'succeeded', next_attempt_at = NULL, succeeded_at = o.at, finished_at = o.at
			FROM o WHERE w.id = o.id AND w.status = 'pending' AND w.lease_until = o.lease
			RETURNING w.id, w.endpoint_id, w.attempts, o.code, o.ms, o.at),
		logged AS (
			INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, duration_ms)
			SELECT id, attempts, at, code, ms FROM d),
		closed AS (
			UPDATE webhook_endpoints e SET failing_since = NULL
			WHERE e.id IN (SELECT endpoint_id FROM d) AND e.failing_since IS NOT NULL RETURNING e.id),
		due AS (
			UPDATE webhook_deliveries x SET next_attempt_at = now() FROM closed
			WHERE x.endpoint_id = closed.id AND x.status = 'pending' AND x.next_attempt_at > now() AND x.id <> ALL ($1::uuid[])
				AND coalesce(x.last_status_code, 0) NOT IN (429, 503)) -- asked to wait (Retry-After): they do
		SELECT id FROM d`, ids, leases, codes, ms, ats).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id uuid.UUID
			if err := rows.Scan(&id); err != nil {
				return err
			}
			recorded[id] = true
		}
		return rows.Err()
	})
}

// queueFailure queues a failed attempt's record as one statement: the delivery's new state under
// its claim, the attempt in the log and the endpoint's failure streak (its start into
// failingSince, when not nil). Nothing is written, and the batch fails with ErrLeaseLost, when
// the claim is no longer held.
func queueFailure(b *pgx.Batch, a WebhookAttempt, failingSince **time.Time) {
	var retry *time.Time
	if !a.RetryAt.IsZero() {
		retry = &a.RetryAt
	}
	b.Queue(`WITH d AS (
			UPDATE webhook_deliveries SET attempts = attempts + 1, last_status_code = $2, last_error = nullif($3, ''),
				lease_until = NULL,
				status = CASE WHEN $4::timestamptz IS NULL THEN 'failed' ELSE 'pending' END,
				next_attempt_at = $4, -- even when its endpoint is to be disabled: see WebhookFailed
				finished_at = CASE WHEN $4::timestamptz IS NULL THEN $5::timestamptz END
			WHERE id = $1 AND status = 'pending' AND lease_until = $6 RETURNING attempts),
		logged AS (
			INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, error, duration_ms, next_attempt_at)
			SELECT $1, attempts, $5, $2, nullif($3, ''), $7, $4 FROM d),
		streak AS (
			UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, $5)
			WHERE id = $8 AND EXISTS (SELECT FROM d)
			RETURNING failing_since)
		SELECT (SELECT failing_since FROM streak) FROM d`,
		a.DeliveryID, nullCode(a.StatusCode), a.Error, retry, a.At, a.LeaseUntil,
		a.Duration.Milliseconds(), a.EndpointID).QueryRow(func(r pgx.Row) error {
		var since *time.Time
		err := r.Scan(&since)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrLeaseLost // deleted with its endpoint, finished or claimed again meanwhile
		}
		if failingSince != nil {
			*failingSince = since
		}
		return err
	})
}

func nullCode(code int) *int {
	if code == 0 {
		return nil
	}
	return &code
}

// disableWebhook turns an enabled endpoint off and tells its account.
func (s *Store) disableWebhook(ctx context.Context, id uuid.UUID, reason string) (*DisabledWebhook, error) {
	var out *DisabledWebhook
	err := s.changeSubscriptions(ctx, func(tx pgx.Tx) error {
		d := DisabledWebhook{ID: id, Reason: reason}
		err := tx.QueryRow(ctx, `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, updated_at = now()
			WHERE id = $1 AND enabled RETURNING account_id, url`, id, reason).Scan(&d.AccountID, &d.URL)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = NULL WHERE endpoint_id = $1 AND status = 'pending'`,
			id); err != nil {
			return err
		}
		out = &d
		return addNotification(ctx, tx, d.AccountID, NewNotification{Type: "webhook_disabled", Title: "Webhook endpoint disabled",
			Message: fmt.Sprintf("Deliveries to %s stopped: %s. Fix the endpoint, then enable it again within 30 days: its events wait that long.", d.URL, reason)})
	})
	if err != nil {
		return nil, fmt.Errorf("disable webhook: %w", err)
	}
	return out, nil
}
