// Worker leases (migration 028): background work that one node at a time should do.

package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// HoldLease takes or renews the lease of the named work for node for ttl, and reports whether
// node holds it: false while another node's lease runs.
func (s *Store) HoldLease(ctx context.Context, name, node string, ttl time.Duration) (bool, error) {
	var epoch int64
	err := s.pool.QueryRow(ctx, `
		INSERT INTO worker_leases AS l (name, node, epoch, lease_until) VALUES ($1, $2, 1, now() + $3::interval)
		ON CONFLICT (name) DO UPDATE SET node = $2, lease_until = now() + $3::interval,
			epoch = l.epoch + CASE WHEN l.node = $2 THEN 0 ELSE 1 END
		WHERE l.node = $2 OR l.lease_until < now()
		RETURNING l.epoch`, name, node, ttl).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("hold the %s lease: %w", name, err)
	}
	return true, nil
}

// ReleaseLeases ends every lease node holds, so that another node may take each at once: a
// node that stops hands its work over rather than leaving it idle until the leases lapse.
func (s *Store) ReleaseLeases(ctx context.Context, node string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE worker_leases SET lease_until = now() WHERE node = $1 AND lease_until > now()`, node); err != nil {
		return fmt.Errorf("release the leases of %s: %w", node, err)
	}
	return nil
}
