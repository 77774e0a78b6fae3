// The webhook delivery log: listing deliveries, retrying one, a test event, retention, and
// what is waiting (for metrics).

package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DeliveryRecord is a delivery in the log.
type DeliveryRecord struct {
	ID             uuid.UUID
	Status         DeliveryStatus
	EventIDs       []string
	EventTypes     []EventType
	Attempts       int
	LastStatusCode *int
	LastError      *string
	NextAttemptAt  *time.Time // pending only
	CreatedAt      time.Time
	SucceededAt    *time.Time
}

// WebhookDeliveries lists an endpoint's deliveries newest first, of one status or all (""),
// a page at a time (Page.After: the deliveries older than that one). Another account's
// endpoint is ErrNotFound.
func (s *Store) WebhookDeliveries(ctx context.Context, accountID, endpointID uuid.UUID, status DeliveryStatus, p Page) ([]DeliveryRecord, error) {
	if _, err := s.WebhookByID(ctx, accountID, endpointID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries
		WHERE endpoint_id = $1 AND account_id = $2 AND ($3 = '' OR status = $3) AND ($4::uuid IS NULL OR id < $4)
		ORDER BY endpoint_id, id DESC LIMIT $5 OFFSET $6`, endpointID, accountID, string(status), p.After, p.Size, max(p.offset(), 0))
	if err != nil {
		return nil, fmt.Errorf("webhook deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeliveryRecord, error) { return scanDelivery(r) })
	if err != nil {
		return nil, fmt.Errorf("webhook deliveries: %w", err)
	}
	return out, nil
}

// deliveryColumns are a DeliveryRecord's, as scanDelivery reads them.
const deliveryColumns = `id, status, event_seqs, event_types, attempts, last_status_code, last_error,
	CASE WHEN status = 'pending' THEN greatest(next_attempt_at, lease_until) END, created_at, succeeded_at`

func scanDelivery(r pgx.Row) (DeliveryRecord, error) {
	var d DeliveryRecord
	var seqs []int64
	var types []int16
	err := r.Scan(&d.ID, &d.Status, &seqs, &types, &d.Attempts, &d.LastStatusCode, &d.LastError, &d.NextAttemptAt,
		&d.CreatedAt, &d.SucceededAt)
	for i := range seqs {
		d.EventIDs = append(d.EventIDs, EventID(seqs[i]))
		d.EventTypes = append(d.EventTypes, eventTypeOf(types[i]))
	}
	return d, err
}

// AttemptRecord is one attempt of a delivery, as its log keeps it.
type AttemptRecord struct {
	Attempt       int
	At            time.Time
	StatusCode    *int    // nil: no answer
	Error         *string // why it failed; nil for a success
	Duration      time.Duration
	NextAttemptAt *time.Time // the retry it scheduled, if any
}

// MaxAttemptsShown bounds the attempts WebhookDelivery returns: the latest ones.
const MaxAttemptsShown = 50

// WebhookDelivery is one of the endpoint's deliveries with its latest attempts (up to
// MaxAttemptsShown), newest first. An unknown delivery, another endpoint's or another
// account's, is ErrNotFound.
func (s *Store) WebhookDelivery(ctx context.Context, accountID, endpointID, deliveryID uuid.UUID) (DeliveryRecord, []AttemptRecord, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries
		WHERE id = $3 AND endpoint_id = $2 AND account_id = $1`, accountID, endpointID, deliveryID))
	if errors.Is(err, pgx.ErrNoRows) {
		return DeliveryRecord{}, nil, ErrNotFound
	}
	if err != nil {
		return DeliveryRecord{}, nil, fmt.Errorf("webhook delivery: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT attempt, at, status_code, error, duration_ms, next_attempt_at
		FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt DESC LIMIT $2`, deliveryID, MaxAttemptsShown)
	if err != nil {
		return DeliveryRecord{}, nil, fmt.Errorf("webhook delivery attempts: %w", err)
	}
	attempts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AttemptRecord, error) {
		var a AttemptRecord
		var ms int32
		err := r.Scan(&a.Attempt, &a.At, &a.StatusCode, &a.Error, &ms, &a.NextAttemptAt)
		a.Duration = time.Duration(ms) * time.Millisecond
		return a, err
	})
	if err != nil {
		return DeliveryRecord{}, nil, fmt.Errorf("webhook delivery attempts: %w", err)
	}
	return d, attempts, nil
}

// RetryWebhookDelivery makes one of the endpoint's deliveries due now, whatever its status
// (a failed one gets one more attempt, a succeeded one is sent again). An unknown delivery, or another account's, is ErrNotFound.
// The endpoint's row is locked FOR SHARE, as TestWebhook does, so that an enable committing
// meanwhile cannot leave the delivery waiting with no due time.
func (s *Store) RetryWebhookDelivery(ctx context.Context, accountID, endpointID, deliveryID uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `UPDATE webhook_deliveries d SET status = 'pending', finished_at = NULL, succeeded_at = NULL,
			next_attempt_at = CASE WHEN e.enabled THEN now() END
		FROM (SELECT id, enabled FROM webhook_endpoints WHERE id = $2 AND account_id = $1 FOR SHARE) e
		WHERE d.id = $3 AND d.endpoint_id = $2 AND d.account_id = $1 AND e.id = d.endpoint_id`, accountID, endpointID, deliveryID)
	if err != nil {
		return fmt.Errorf("retry webhook delivery: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// TestWebhook queues a delivery of one webhook.test event to the endpoint, due now, whatever
// it subscribes to, and returns the delivery's id.
func (s *Store) TestWebhook(ctx context.Context, accountID, endpointID uuid.UUID) (uuid.UUID, error) {
	id := NewID()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var seq int64
		var enabled bool
		// FOR SHARE: an enable or disable committing meanwhile waits for this insert, or this
		// reads what it wrote; otherwise a delivery could wait (no due time) on an endpoint
		// that is enabled, holding one of its lanes for good.
		err := tx.QueryRow(ctx, `SELECT nextval(pg_get_serial_sequence('webhook_events', 'id')), enabled
			FROM webhook_endpoints WHERE id = $1 AND account_id = $2 FOR SHARE`, endpointID, accountID).Scan(&seq, &enabled)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		data, err := json.Marshal(map[string]any{"webhook_id": endpointID, "message": "A test event from Tuma."})
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO webhook_deliveries (id, endpoint_id, account_id, event_seqs, event_types,
				event_times, message_ids, event_data, next_attempt_at)
			VALUES ($1, $2, $3, ARRAY[$4::bigint], ARRAY[$5::smallint], ARRAY[now()], ARRAY[$6::uuid], ARRAY[$7::jsonb],
				CASE WHEN $8 THEN now() END)`,
			id, endpointID, accountID, seq<<16, EventTest.code(), uuid.Nil, data, enabled)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return uuid.Nil, err
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("test webhook: %w", err)
	}
	return id, nil
}

// PruneWebhooks deletes up to limit finished deliveries (with their attempts) created before
// `before`, and as many outbox rows of disabled endpoints written before then; it returns how
// many rows went. Each call is one short transaction: the retention worker repeats it while
// there is more, so no lock is held long.
func (s *Store) PruneWebhooks(ctx context.Context, before time.Time, limit int) (int64, error) {
	// Delivery ids are UUIDv7: ids below the cutoff's are the older deliveries (the primary key
	// finds them without a scan).
	cutoff := uuidV7At(before)
	var n int64
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries
		WHERE id < $1 AND status <> 'pending' ORDER BY id LIMIT $2)`, cutoff, limit).Exec(func(tag pgconn.CommandTag) error {
		n += tag.RowsAffected()
		return nil
	})
	b.Queue(`DELETE FROM webhook_events WHERE id IN (SELECT v.id FROM webhook_events v
		JOIN webhook_endpoints e ON e.id = v.endpoint_id AND NOT e.enabled
		WHERE v.created_at < $1 ORDER BY v.id LIMIT $2)`, before, limit).Exec(func(tag pgconn.CommandTag) error {
		n += tag.RowsAffected()
		return nil
	})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return n, fmt.Errorf("prune webhooks: %w", err)
	}
	return n, nil
}

// uuidV7At is the smallest UUIDv7 of the millisecond t.
func uuidV7At(t time.Time) uuid.UUID {
	var u uuid.UUID
	ms := uint64(t.UnixMilli())
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = 0x70
	u[8] = 0x80
	return u
}

// WebhookBacklog is what waits to be delivered.
type WebhookBacklog struct {
	Pending int64 // deliveries pending (in flight or waiting for a retry)
	Queued  int64 // events in the outbox, not yet in a delivery
	// Lag is how long the oldest work that nothing but Tuma holds up has waited: an event of an
	// enabled endpoint whose circuit is closed, or a delivery past its due time.
	Lag time.Duration
}

// WebhookBacklog measures the waiting work.
func (s *Store) WebhookBacklog(ctx context.Context) (WebhookBacklog, error) {
	var b WebhookBacklog
	var lag float64
	err := s.pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'),
			(SELECT coalesce(sum(cardinality(types) - taken), 0) FROM webhook_events),
			greatest(0, extract(epoch FROM now() - least(
				(SELECT min((SELECT v.created_at FROM webhook_events v WHERE v.endpoint_id = e.id ORDER BY v.id LIMIT 1))
					FROM webhook_endpoints e WHERE e.enabled AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
						WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.attempts > 0)),
				(SELECT min(next_attempt_at) FROM webhook_deliveries
					WHERE status = 'pending' AND next_attempt_at <= now() AND (lease_until IS NULL OR lease_until < now())),
				now())))`).Scan(&b.Pending, &b.Queued, &lag)
	if err != nil {
		return WebhookBacklog{}, fmt.Errorf("webhook backlog: %w", err)
	}
	b.Lag = time.Duration(lag * float64(time.Second))
	return b, nil
}
