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

// SubmitKey names a message about to be submitted and the epoch of the tenant incarnation
// whose job dispatched it (0: none, not fenced).
type SubmitKey struct {
	AccountID, ID uuid.UUID
	Fence         int64
}

// MarkBatch is one link's submits about to go out: one mark row.
type MarkBatch struct {
	ID      uuid.UUID
	Network carriers.Network
	Msgs    []SubmitKey
}

// MarkBatches records that links of node are about to submit these batches, one mark row each
// and all in one transaction: a commit (and its WAL flush) per link batch was a third of
// PostgreSQL's CPU for 1-recipient sends (bench/RESULTS.md). A row is one insert however many
// messages it covers. Messages whose tenant incarnation was replaced are left out of it and
// must not be submitted: fenced[i] holds batch i's replaced incarnations. The fences of the
// others stay locked until the marks commit, so the incarnation replacing one sees this mark
// and asks the network about its messages rather than sending them again.
func (s *Store) MarkBatches(ctx context.Context, node string, batches []MarkBatch) (fenced []map[FenceKey]bool, err error) {
	b := &pgx.Batch{}
	pairs := make([]*fencePairs, len(batches))
	for i, mb := range batches {
		pairs[i] = queueMark(b, node, mb)
	}
	// One round trip and one implicit transaction: every mark commits, or none.
	res := s.pool.SendBatch(ctx, b)
	fenced = make([]map[FenceKey]bool, len(batches))
	for i, f := range pairs {
		if len(f.accounts) == 0 {
			if _, err = res.Exec(); err != nil {
				break
			}
			continue
		}
		var rows pgx.Rows
		if rows, err = res.Query(); err != nil {
			break
		}
		var live []FenceKey
		if live, err = pgx.CollectRows(rows, pgx.RowToStructByPos[FenceKey]); err != nil {
			break
		}
		fenced[i] = f.missing(live)
	}
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("mark submits: %w", err)
	}
	return fenced, nil
}

// queueMark queues one batch's mark; it returns the fences the statement checks (none: the
// statement is a plain insert).
func queueMark(b *pgx.Batch, node string, mb MarkBatch) *fencePairs {
	n := len(mb.Msgs)
	accts, ids, epochs := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]int64, n)
	f := &fencePairs{}
	for i, m := range mb.Msgs {
		accts[i], ids[i], epochs[i] = m.AccountID, m.ID, m.Fence
		f.add(m.AccountID, m.Fence)
	}
	if len(f.accounts) == 0 {
		b.Queue(`INSERT INTO submit_marks (id, network, accounts, messages, node) VALUES ($1, $2, $3, $4, $5)`,
			mb.ID, int16(mb.Network), accts, ids, node)
		return f
	}
	// One statement: the fence check locks, and the insert keeps only what it let through.
	b.Queue(`WITH live AS (`+fenceCheck+`),
		ins AS (
			INSERT INTO submit_marks (id, network, accounts, messages, node)
			SELECT $3, $4, array_agg(m.a ORDER BY m.o), array_agg(m.id ORDER BY m.o), $8
			FROM unnest($5::uuid[], $6::uuid[], $7::bigint[]) WITH ORDINALITY AS m(a, id, e, o)
			WHERE m.e = 0 OR (m.a, m.e) IN (SELECT account_id, epoch FROM live)
			HAVING count(*) > 0)
		SELECT account_id, epoch FROM live`, f.accounts, f.epochs, mb.ID, int16(mb.Network), accts, ids, epochs, node)
	return f
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

// Marks reads node's marks made before `before` (a UUIDv7: its earlier runs' marks, not this
// run's) and the messages under them still queued. Other nodes' marks are theirs to read
// (or, for a node that is gone, the marks of each account it held are read by the tenant
// that takes the account over: AccountMarks). Marks exist only for submits in flight, so there
// are about as many as the links' windows, whatever the backlog.
func (s *Store) Marks(ctx context.Context, before uuid.UUID, node string) (Marked, error) {
	var out Marked
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id FROM submit_marks WHERE id < $1 AND node = $2`, before, node)
		if err != nil {
			return err
		}
		if out.Marks, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID]); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT DISTINCT m.account_id, m.id
			FROM submit_marks s, unnest(s.accounts, s.messages) AS u(account_id, id)
			JOIN messages m ON m.account_id = u.account_id AND m.id = u.id
			WHERE s.id < $1 AND s.node = $2 AND m.status = 'queued'`, before, node)
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
