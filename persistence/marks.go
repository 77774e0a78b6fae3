// Submit marks: what a carrier link was about to submit, written before it submits, so that a
// crash leaves a record of the submits whose outcome it may have lost.

package persistence

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
)

// MessageKey names a message.
type MessageKey struct{ AccountID, ID uuid.UUID }

// Mark records that a link is about to submit these messages. One row per batch: the mark is
// one insert however many messages it covers.
func (s *Store) Mark(ctx context.Context, id uuid.UUID, network carriers.Network, msgs []MessageKey) error {
	accts, ids := make([]uuid.UUID, len(msgs)), make([]uuid.UUID, len(msgs))
	for i, m := range msgs {
		accts[i], ids[i] = m.AccountID, m.ID
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO submit_marks (id, network, accounts, messages) VALUES ($1, $2, $3, $4)`,
		id, int16(network), accts, ids)
	if err != nil {
		return fmt.Errorf("mark submits: %w", err)
	}
	return nil
}

// Unmark deletes marks whose every submit has a durable outcome.
func (s *Store) Unmark(ctx context.Context, ids []uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM submit_marks WHERE id = ANY($1)`, ids); err != nil {
		return fmt.Errorf("unmark submits: %w", err)
	}
	return nil
}

// Marked is what the marks left by earlier runs say.
type Marked struct {
	Marks []uuid.UUID // every mark row read
	// Unsettled are marked messages still queued: their submit may have reached the network
	// and its answer was lost.
	Unsettled []MessageKey
}

// Marks reads the marks made before `before` (a UUIDv7: earlier runs' marks, not this run's)
// and the messages under them still queued. Marks exist only for submits in flight, so there
// are about as many as the links' windows, whatever the backlog.
func (s *Store) Marks(ctx context.Context, before uuid.UUID) (Marked, error) {
	var out Marked
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id FROM submit_marks WHERE id < $1`, before)
		if err != nil {
			return err
		}
		if out.Marks, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID]); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT DISTINCT m.account_id, m.id
			FROM submit_marks s, unnest(s.accounts, s.messages) AS u(account_id, id)
			JOIN messages m ON m.account_id = u.account_id AND m.id = u.id
			WHERE s.id < $1 AND m.status = 'queued'`, before)
		if err != nil {
			return err
		}
		out.Unsettled, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (MessageKey, error) {
			var k MessageKey
			err := r.Scan(&k.AccountID, &k.ID)
			return k, err
		})
		return err
	})
	if err != nil {
		return Marked{}, fmt.Errorf("read submit marks: %w", err)
	}
	return out, nil
}
