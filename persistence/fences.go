// Tenant fences: the fencing token of an account's tenant incarnation (migration 027). A
// tenant takes the next epoch when it starts; the debit of a send and the submit mark before
// a carrier submit carry it and lock its row FOR SHARE, so an incarnation that another one
// replaced (a paused node the cluster gave up on) can neither spend nor send.

package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ErrFenced refuses a write made for a tenant incarnation whose epoch another incarnation of
// the same account has since replaced. Nothing of it was written.
var ErrFenced = errors.New("fenced: a newer incarnation of this account's tenant has taken over")

// Fence is a tenant incarnation's token.
type Fence struct {
	Epoch int64
	// Replaced: an earlier incarnation held the account, on node Previous. When that is
	// another node, its submit marks may cover messages it sent.
	Replaced bool
	Previous string
}

// TakeFence gives the account's next epoch to an incarnation starting on node. It waits for
// writes that hold the current epoch to commit, so everything the previous incarnation wrote
// is visible once it returns, and nothing it tries afterwards is.
func (s *Store) TakeFence(ctx context.Context, accountID uuid.UUID, node string) (Fence, error) {
	var f Fence
	var prev *string
	err := s.pool.QueryRow(ctx, `
		WITH prev AS (SELECT node FROM tenant_fences WHERE account_id = $1)
		INSERT INTO tenant_fences AS f (account_id, epoch, node) VALUES ($1, 1, $2)
		ON CONFLICT (account_id) DO UPDATE SET epoch = f.epoch + 1, node = $2, taken_at = now()
		RETURNING f.epoch, (SELECT node FROM prev)`, accountID, node).Scan(&f.Epoch, &prev)
	if isForeignKeyViolation(err) {
		return Fence{}, ErrNotFound
	}
	if err != nil {
		return Fence{}, fmt.Errorf("take tenant fence: %w", err)
	}
	if prev != nil {
		f.Replaced, f.Previous = true, *prev
	}
	return f, nil
}

// FenceKey is a tenant incarnation: an account and the epoch it took.
type FenceKey struct {
	AccountID uuid.UUID
	Epoch     int64
}

// fenceCheck locks the held fences among the pairs (accounts[i], epochs[i]) FOR SHARE, in
// account order, and returns the pairs whose epoch still holds. Writes made outside any
// tenant carry epoch 0 and are left out of the arguments by the caller: they are not fenced.
const fenceCheck = `
	SELECT f.account_id, f.epoch FROM tenant_fences f
	JOIN (SELECT DISTINCT a, e FROM unnest($1::uuid[], $2::bigint[]) AS x(a, e)) u ON f.account_id = u.a AND f.epoch = u.e
	ORDER BY f.account_id FOR SHARE OF f`

// fencePairs are the distinct fenced (account, epoch) pairs of a write.
type fencePairs struct {
	accounts []uuid.UUID
	epochs   []int64
	seen     map[FenceKey]bool
}

func (p *fencePairs) add(account uuid.UUID, epoch int64) {
	k := FenceKey{account, epoch}
	if epoch == 0 || p.seen[k] {
		return
	}
	if p.seen == nil {
		p.seen = map[FenceKey]bool{}
	}
	p.seen[k] = true
	p.accounts, p.epochs = append(p.accounts, account), append(p.epochs, epoch)
}

// missing returns the pairs not among live (those whose fence holds), nil when none is.
func (p *fencePairs) missing(live []FenceKey) map[FenceKey]bool {
	held := make(map[FenceKey]bool, len(live))
	for _, k := range live {
		held[k] = true
	}
	var out map[FenceKey]bool
	for i, a := range p.accounts {
		if k := (FenceKey{a, p.epochs[i]}); !held[k] {
			if out == nil {
				out = map[FenceKey]bool{}
			}
			out[k] = true
		}
	}
	return out
}

// held returns the pairs whose fence holds, locking them until tx ends.
func (p *fencePairs) held(ctx context.Context, tx pgx.Tx) (map[FenceKey]bool, error) {
	out := map[FenceKey]bool{}
	if len(p.accounts) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, fenceCheck, p.accounts, p.epochs)
	if err != nil {
		return nil, fmt.Errorf("check tenant fences: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[FenceKey])
	if err != nil {
		return nil, fmt.Errorf("check tenant fences: %w", err)
	}
	for _, k := range keys {
		out[k] = true
	}
	return out, nil
}

// fenced reports whether a write of account with epoch is refused given the held pairs.
func fenced(held map[FenceKey]bool, account uuid.UUID, epoch int64) bool {
	return epoch != 0 && !held[FenceKey{account, epoch}]
}

// MarkedMessage is a queued message under a submit mark, and how long ago (by the
// database's clock) its newest mark was written.
type MarkedMessage struct {
	ID  uuid.UUID
	Age time.Duration
}

// AccountMarks returns the account's messages under a submit mark that are still queued:
// a previous incarnation on another node may have submitted them, so the next asks the
// network before sending any of them again (once a submit marked Age ago can have arrived).
func (s *Store) AccountMarks(ctx context.Context, accountID uuid.UUID) ([]MarkedMessage, error) {
	rows, err := s.pool.Query(ctx, `SELECT m.id, greatest(now() - max(s.marked_at), interval '0')
		FROM submit_marks s, unnest(s.accounts, s.messages) AS u(account_id, id)
		JOIN messages m ON m.account_id = u.account_id AND m.id = u.id
		WHERE u.account_id = $1 AND m.status = 'queued'
		GROUP BY m.id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("read the account's submit marks: %w", err)
	}
	marked, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (MarkedMessage, error) {
		var m MarkedMessage
		err := r.Scan(&m.ID, &m.Age)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the account's submit marks: %w", err)
	}
	return marked, nil
}

// StillQueued reports whether a message is still queued: after another node's submit of it,
// that node records its outcome (sent or failed), which no fence holds back. A message that
// is gone is not.
func (s *Store) StillQueued(ctx context.Context, accountID, id uuid.UUID) (bool, error) {
	var queued bool
	err := s.pool.QueryRow(ctx, `SELECT status = 'queued' FROM messages WHERE account_id = $1 AND id = $2`,
		accountID, id).Scan(&queued)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read a message's status: %w", err)
	}
	return queued, nil
}
