// Webhook deliveries: events taken from the outbox in batches per endpoint, claimed for an
// attempt by one node at a time, and their outcomes.

package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// DeliveryStatus is where a webhook delivery is: pending → succeeded | failed (a failed one
// goes back to pending when retried by hand).
type DeliveryStatus string

const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliverySucceeded DeliveryStatus = "succeeded"
	DeliveryFailed    DeliveryStatus = "failed"
)

// DeliveryStatuses are every delivery status.
func DeliveryStatuses() []DeliveryStatus {
	return []DeliveryStatus{DeliveryPending, DeliverySucceeded, DeliveryFailed}
}

// WebhookEvent is one event of a delivery.
type WebhookEvent struct {
	Seq       int64 // its id: the outbox row's id and its place in the row
	Type      EventType
	CreatedAt time.Time
	MessageID uuid.UUID       // message events
	Data      json.RawMessage // the others
}

// ID is the event's public id.
func (e WebhookEvent) ID() string { return EventID(e.Seq) }

// EventID is the public id of an event: evt_ and its sequence number in hex, 16 digits.
func EventID(seq int64) string { return string(AppendEventID(nil, seq)) }

// AppendEventID appends an event's public id (EventID) to b.
func AppendEventID(b []byte, seq int64) []byte {
	const hex = "0123456789abcdef"
	b = append(b, "evt_"...)
	for shift := 60; shift >= 0; shift -= 4 { // sequence numbers are positive
		b = append(b, hex[uint64(seq)>>uint(shift)&0xf])
	}
	return b
}

// WebhookDelivery is a delivery claimed for an attempt.
type WebhookDelivery struct {
	ID, EndpointID, AccountID uuid.UUID
	URL                       string
	Secrets                   []string // the current secret, then the rolled one while it still signs
	Attempts                  int      // attempts before this one
	Events                    []WebhookEvent
	CreatedAt                 time.Time
	BatchSize                 int       // its endpoint's batch_size when claimed (FormWebhookDeliveries takes it)
	LeaseUntil                time.Time // the claim: its outcome is recorded only while the delivery still holds it
}

// WebhookClaim says how much work a node takes.
type WebhookClaim struct {
	Limit int           // deliveries at most
	Lanes int           // pending deliveries per endpoint at most (attempts in flight and retries waiting)
	Lease time.Duration // how long a claimed delivery is this node's before another may take it
	// SkipDue forms new deliveries only, without claiming those due (a busy node's rounds
	// between its claims of them).
	SkipDue bool
}

// ClaimWebhookDeliveries takes due deliveries (retries, tests, redeliveries, and those whose
// node died mid-attempt), then forms new ones from the outbox, each leased to the caller.
//
// An endpoint gets new deliveries only while it has fewer than Lanes pending and none waiting
// to be retried: one failed attempt opens its circuit, so a dead endpoint gets only its
// retries (on the schedule, Lanes at most) until one succeeds. Its events wait in the outbox.
// A delivery holds the events of its batch oldest first, and never a message's later event
// while that message's message.sent is in another pending delivery: that event, and every
// later one of its message, stays in the outbox, and the batch goes on with the events after
// it (order is per message), so an endpoint's messages do not wait on one another.
func (s *Store) ClaimWebhookDeliveries(ctx context.Context, c WebhookClaim) ([]WebhookDelivery, error) {
	var out []WebhookDelivery
	if !c.SkipDue {
		var err error
		if out, err = s.claimDue(ctx, c); err != nil || len(out) >= c.Limit {
			return out, err
		}
	}
	cands, err := s.formCandidates(ctx, c.Lanes)
	if err != nil {
		return out, err
	}
	var errs []error // one endpoint that cannot be formed (a secret that does not open) holds up no other
	for _, cand := range cands {
		room := c.Limit - len(out)
		if room <= 0 || ctx.Err() != nil {
			break
		}
		ds, err := s.form(ctx, cand, room, c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, ds...)
	}
	return out, errors.Join(errs...)
}

const deliveryClaimColumns = `d.id, d.endpoint_id, d.account_id, d.attempts, d.created_at, d.event_seqs, d.event_types,
	d.event_times, d.message_ids, d.event_data::text[], e.url, e.secret, CASE WHEN e.old_secret_until > now() THEN e.old_secret END,
	e.batch_size, d.lease_until`

func (s *Store) claimDue(ctx context.Context, c WebhookClaim) ([]WebhookDelivery, error) {
	rows, err := s.pool.Query(ctx, `
		UPDATE webhook_deliveries d SET lease_until = now() + $1::interval
		FROM (SELECT x.id FROM webhook_deliveries x JOIN webhook_endpoints y ON y.id = x.endpoint_id AND y.enabled
			WHERE x.status = 'pending' AND x.next_attempt_at <= now() AND (x.lease_until IS NULL OR x.lease_until < now())
			ORDER BY x.next_attempt_at LIMIT $2 FOR UPDATE OF x SKIP LOCKED) due, webhook_endpoints e
		WHERE d.id = due.id AND e.id = d.endpoint_id
		RETURNING `+deliveryClaimColumns, c.Lease, c.Limit)
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	defer rows.Close()
	var out []WebhookDelivery
	var errs []error
	for rows.Next() {
		d, err := s.scanClaimed(rows)
		if errors.Is(err, ErrSealed) {
			// Its endpoint's secret does not open (the key changed): the others go on, and this
			// one waits for its lease to lapse, then is claimed (and reported) again.
			errs = append(errs, fmt.Errorf("claim webhook delivery %s: %w", d.ID, err))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("claim webhook deliveries: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	return out, errors.Join(errs...)
}

// ErrSealed says a signing secret did not open with the node's key.
var ErrSealed = errors.New("webhook secret does not open with TUMA_WEBHOOK_SECRET_KEY")

func (s *Store) scanClaimed(row pgx.Row) (WebhookDelivery, error) {
	var (
		d         WebhookDelivery
		seqs      []int64
		types     []int16
		times     []time.Time
		msgs      []uuid.UUID
		data      []string
		cur, prev []byte
		batch     int16
	)
	if err := row.Scan(&d.ID, &d.EndpointID, &d.AccountID, &d.Attempts, &d.CreatedAt, &seqs, &types, &times, &msgs, &data,
		&d.URL, &cur, &prev, &batch, &d.LeaseUntil); err != nil {
		return d, err
	}
	d.BatchSize = int(batch)
	for _, sealed := range [][]byte{cur, prev} {
		if sealed == nil {
			continue
		}
		sec, err := s.open(sealed)
		if err != nil {
			return d, fmt.Errorf("%w: %w", ErrSealed, err)
		}
		d.Secrets = append(d.Secrets, sec)
	}
	d.Events = make([]WebhookEvent, len(seqs))
	for i := range seqs {
		d.Events[i] = WebhookEvent{Seq: seqs[i], Type: eventTypeOf(types[i]), CreatedAt: times[i], MessageID: msgs[i]}
		if i < len(data) && data[i] != "null" {
			d.Events[i].Data = json.RawMessage(data[i])
		}
	}
	return d, nil
}

type formCandidate struct {
	endpoint uuid.UUID
	batch    int
}

// formCandidates lists enabled endpoints with events waiting in the outbox, their circuit
// closed and a lane free, one index probe per endpoint with waiting events (a skip scan), so a
// dead endpoint's long backlog costs nothing here.
func (s *Store) formCandidates(ctx context.Context, lanes int) ([]formCandidate, error) {
	rows, err := s.pool.Query(ctx, `
		WITH RECURSIVE q AS (
			(SELECT endpoint_id FROM webhook_events ORDER BY endpoint_id LIMIT 1)
			UNION ALL
			SELECT (SELECT v.endpoint_id FROM webhook_events v WHERE v.endpoint_id > q.endpoint_id ORDER BY v.endpoint_id LIMIT 1)
			FROM q WHERE q.endpoint_id IS NOT NULL)
		SELECT e.id, e.batch_size FROM q JOIN webhook_endpoints e ON e.id = q.endpoint_id
		WHERE e.enabled AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
			WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.attempts > 0)
			AND (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'pending') < $1`, lanes)
	if err != nil {
		return nil, fmt.Errorf("webhook endpoints with events: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (formCandidate, error) {
		var c formCandidate
		var b int16
		err := r.Scan(&c.endpoint, &b)
		c.batch = int(b)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("webhook endpoints with events: %w", err)
	}
	return out, nil
}

// outboxChunk is the unread part of an outbox row.
type outboxChunk struct {
	id      int64
	created time.Time
	taken   int // events of the row taken before this read
	total   int
	types   []int16
	msgs    []uuid.UUID
	data    []byte
}

// form makes up to room new deliveries of one endpoint, in a transaction of their own.
func (s *Store) form(ctx context.Context, cand formCandidate, room int, c WebhookClaim) ([]WebhookDelivery, error) {
	var out []WebhookDelivery
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{BeginQuery: lazyBegin}, func(tx pgx.Tx) error {
		var err error
		out, err = s.formIn(ctx, tx, &pgx.Batch{}, cand, room, c)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("form webhook deliveries: %w", err)
	}
	return out, nil
}

// formIn makes up to room new deliveries of one endpoint in tx, under its row lock (another
// node forming for it at the same moment skips it). b holds what to send first in the same
// round trip.
func (s *Store) formIn(ctx context.Context, tx pgx.Tx, b *pgx.Batch, cand formCandidate, room int, c WebhookClaim) ([]WebhookDelivery, error) {
	r := queueFormRead(b, cand, room, c)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	w := &pgx.Batch{}
	out, err := s.formWrites(w, r)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	if err := tx.SendBatch(ctx, w).Close(); err != nil {
		return nil, err
	}
	return out, nil
}

// formRead is what forming reads of an endpoint, in the round trip of queueFormRead's batch.
type formRead struct {
	cand            formCandidate
	room            int
	c               WebhookClaim
	d               WebhookDelivery
	locked, failing bool
	pending         int
	held            []uuid.UUID
	cur, prev       []byte
	chunks          []outboxChunk
}

// queueFormRead queues the reads of forming up to room deliveries of one endpoint: its row,
// locked (skipped when another former holds it), its pending deliveries and the messages
// whose message.sent they hold, and the oldest of its outbox.
func queueFormRead(b *pgx.Batch, cand formCandidate, room int, c WebhookClaim) *formRead {
	r := &formRead{cand: cand, room: room, c: c}
	need := min(room, c.Lanes) * cand.batch
	b.Queue(`SELECT account_id, url, secret, CASE WHEN old_secret_until > now() THEN old_secret END, now() + $2::interval
		FROM webhook_endpoints WHERE id = $1 AND enabled FOR UPDATE SKIP LOCKED`, cand.endpoint, c.Lease).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&r.d.AccountID, &r.d.URL, &r.cur, &r.prev, &r.d.LeaseUntil)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		r.locked = err == nil
		return err
	})
	b.Queue(`SELECT count(*), coalesce(bool_or(attempts > 0), false),
			coalesce((SELECT array_agg(u.m) FROM webhook_deliveries x, unnest(x.message_ids, x.event_types) u(m, t)
				WHERE x.endpoint_id = $1 AND x.status = 'pending' AND u.t = $2), '{}')
		FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'pending'`, cand.endpoint, EventMessageSent.code()).QueryRow(func(row pgx.Row) error {
		return row.Scan(&r.pending, &r.failing, &r.held)
	})
	// The oldest rows up to those holding need events: a row holds a status flush's events
	// (hundreds), so reading need rows whole read a hundred times what a form takes. Only
	// the rows kept are sliced (their arrays detoasted). Twice need: as many events again may
	// be held (a message's later events behind its message.sent in a pending delivery).
	b.Queue(`SELECT id, created_at, taken, n, types[taken + 1 : taken + $2],
			coalesce(message_ids[taken + 1 : taken + $2], '{}'), data
		FROM (SELECT *, cardinality(types) AS n, sum(cardinality(types) - taken) OVER (ORDER BY id) AS upto
			FROM (SELECT * FROM webhook_events WHERE endpoint_id = $1 ORDER BY id LIMIT $2) f) w
		WHERE upto - (n - taken) < 2 * $2 ORDER BY id`, cand.endpoint, need).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var k outboxChunk
			if err := rows.Scan(&k.id, &k.created, &k.taken, &k.total, &k.types, &k.msgs, &k.data); err != nil {
				return err
			}
			r.chunks = append(r.chunks, k)
		}
		return rows.Err()
	})
	return r
}

// formWrites cuts the deliveries a read allows and queues their writes: the outbox rows
// taken from and the deliveries, leased to the caller.
func (s *Store) formWrites(w *pgx.Batch, r *formRead) ([]WebhookDelivery, error) {
	if !r.locked || r.failing || r.pending >= r.c.Lanes {
		return nil, nil
	}
	d := r.d
	for _, sealed := range [][]byte{r.cur, r.prev} {
		if sealed != nil {
			sec, err := s.open(sealed)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrSealed, err)
			}
			d.Secrets = append(d.Secrets, sec)
		}
	}
	d.EndpointID, d.BatchSize = r.cand.endpoint, r.cand.batch
	batches, taken := cutBatches(r.chunks, r.held, min(r.room, r.c.Lanes-r.pending), r.cand.batch)
	if len(batches) == 0 {
		return nil, nil
	}
	for _, k := range r.chunks {
		places, ok := taken[k.id]
		if !ok {
			continue
		}
		switch prefix, marks := consumed(k, places); {
		case prefix >= k.total:
			w.Queue(`DELETE FROM webhook_events WHERE id = $1`, k.id)
		case len(marks) == 0:
			w.Queue(`UPDATE webhook_events SET taken = $2 WHERE id = $1`, k.id, prefix)
		default:
			w.Queue(`UPDATE webhook_events SET taken = $2, types = (SELECT array_agg(CASE WHEN i = ANY($3::int[]) THEN $4::smallint
					ELSE t END ORDER BY i) FROM unnest(types) WITH ORDINALITY u(t, i))
				WHERE id = $1`, k.id, prefix, marks, takenMark)
		}
	}
	out := make([]WebhookDelivery, 0, len(batches))
	for _, evs := range batches {
		dd := d
		dd.ID, dd.Events = NewID(), evs
		queueDelivery(w, dd)
		out = append(out, dd)
	}
	return out, nil
}

// lazyBegin starts a transaction whose commit does not wait for its WAL to reach the disk:
// forming deliveries and recording attempts. A crash of PostgreSQL can forget the last of
// them, which only repeats work: a forgotten delivery's events are still in the outbox and go
// again (same event ids, for the receiver to de-duplicate), a forgotten success is attempted
// again. At least once holds; each costs no flush. The events themselves are written with
// the changes they report, durably.
const lazyBegin = "BEGIN; SET LOCAL synchronous_commit = off"

// takenMark marks an event taken into a delivery past its chunk's taken prefix (an event
// before it was held); its place, and so every event's id, stays.
const takenMark = -1

// cutBatches cuts up to n batches of up to size events from the chunks, oldest first, leaving
// in the outbox every event of a message from the first one that must wait: a later event of
// a message whose message.sent is held (pending elsewhere, or in an earlier batch of this
// cut). It returns the batches and, per chunk, the places (from its taken prefix) they took.
func cutBatches(chunks []outboxChunk, held []uuid.UUID, n, size int) ([][]WebhookEvent, map[int64][]int) {
	holds := make(map[uuid.UUID]bool, len(held))
	for _, m := range held {
		holds[m] = true
	}
	waiting := map[uuid.UUID]bool{} // messages with an event left behind in this cut
	taken := map[int64][]int{}
	var out [][]WebhookEvent
	var cur []WebhookEvent
	var curSent []uuid.UUID
	closeBatch := func() {
		out = append(out, cur)
		for _, m := range curSent {
			holds[m] = true
		}
		cur, curSent = nil, nil
	}
	for _, k := range chunks {
		for i, code := range k.types {
			if len(cur) == size {
				closeBatch()
			}
			if len(out) == n {
				return out, taken
			}
			if code == takenMark {
				continue
			}
			t := eventTypeOf(code)
			ev := WebhookEvent{Seq: k.id<<16 | int64(k.taken+i), Type: t, CreatedAt: k.created}
			if t.IsMessage() {
				ev.MessageID = k.msgs[i]
				if waiting[ev.MessageID] || t != EventMessageSent && holds[ev.MessageID] {
					waiting[ev.MessageID] = true
					continue
				}
				if t == EventMessageSent {
					curSent = append(curSent, ev.MessageID)
				}
			} else {
				ev.Data = k.data
			}
			if cur == nil {
				cur = make([]WebhookEvent, 0, size)
			}
			cur = append(cur, ev)
			places, ok := taken[k.id]
			if !ok {
				places = make([]int, 0, min(len(k.types)-i, n*size))
			}
			taken[k.id] = append(places, i)
		}
	}
	if len(cur) > 0 && len(out) < n {
		closeBatch()
	}
	return out, taken
}

// consumed is what taking places (ascending, from the taken prefix) does to a chunk: its new
// taken prefix (past the events taken now or before), and the places past it to mark taken.
func consumed(k outboxChunk, places []int) (prefix int, marks []int) {
	took := make(map[int]bool, len(places))
	for _, p := range places {
		took[p] = true
	}
	i := 0
	for i < len(k.types) && (took[i] || k.types[i] == takenMark) {
		i++
	}
	for _, p := range places {
		if p >= i {
			marks = append(marks, k.taken+p+1) // 1-based, as SQL arrays are
		}
	}
	return k.taken + i, marks
}

// queueDelivery inserts a delivery leased to the node that formed it, until d.LeaseUntil.
func queueDelivery(b *pgx.Batch, d WebhookDelivery) {
	n := len(d.Events)
	seqs, types, times, msgs := make([]int64, n), make([]int16, n), make([]time.Time, n), make([]uuid.UUID, n)
	data := []string{} // none when every event is a message's (as a status flush's are): no jsonb to parse
	for i, e := range d.Events {
		seqs[i], types[i], times[i], msgs[i] = e.Seq, e.Type.code(), e.CreatedAt, e.MessageID
		if e.Data != nil && len(data) == 0 {
			data = make([]string, n)
			for j := range data {
				data[j] = "null"
			}
		}
		if e.Data != nil {
			data[i] = string(e.Data)
		}
	}
	b.Queue(`INSERT INTO webhook_deliveries (id, endpoint_id, account_id, event_seqs, event_types, event_times, message_ids,
			event_data, next_attempt_at, lease_until)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text[]::jsonb[], now(), $9)`,
		d.ID, d.EndpointID, d.AccountID, seqs, types, times, msgs, data, d.LeaseUntil)
}
