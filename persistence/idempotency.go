package persistence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// IdempotencyWindow is how long a key and its response are remembered.
const IdempotencyWindow = 24 * time.Hour

// StoredResponse is the first response given for an idempotency key: a stored body, or the
// resource the request created (ResourceID), which the caller renders again.
type StoredResponse struct {
	Status     int
	Body       []byte
	ResourceID *uuid.UUID
}

// IdempotencyKey names one claimed key.
type IdempotencyKey struct {
	AccountID uuid.UUID
	Key       string
}

// ClaimIdempotencyKey claims key for a request whose canonical hash is requestHash.
//
// It returns (nil, nil) when the caller now owns the key and must run the request, then
// CompleteIdempotencyKey or ReleaseIdempotencyKey. It returns the stored response when the same
// request already completed, ErrIdempotencyUsed when the key was used for a different request,
// and ErrIdempotencyBusy while the first request is still running. lease bounds how long an
// in-flight claim blocks others if its node dies.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, k IdempotencyKey, requestHash []byte, lease time.Duration) (*StoredResponse, error) {
	for range 3 { // a concurrent release can delete the row between our two statements
		var claimed bool
		err := s.pool.QueryRow(ctx, `
			INSERT INTO idempotency_keys (account_id, key, request_hash, locked_until)
			VALUES ($1, $2, $3, now() + $4::interval)
			ON CONFLICT (account_id, key) DO UPDATE SET
				request_hash = EXCLUDED.request_hash, state = 'in_flight', locked_until = EXCLUDED.locked_until,
				response_status = NULL, response_body = NULL, resource_id = NULL, created_at = now()
			WHERE idempotency_keys.created_at < now() - $5::interval
			   OR (idempotency_keys.state = 'in_flight' AND idempotency_keys.locked_until < now()
			       AND idempotency_keys.request_hash = EXCLUDED.request_hash)
			RETURNING true`, k.AccountID, k.Key, requestHash, lease, IdempotencyWindow).Scan(&claimed)
		if err == nil {
			return nil, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("claim idempotency key: %w", err)
		}
		var (
			hash     []byte
			state    string
			status   *int
			body     []byte
			resource *uuid.UUID
		)
		err = s.pool.QueryRow(ctx, `SELECT request_hash, state, response_status, response_body, resource_id
			FROM idempotency_keys WHERE account_id = $1 AND key = $2`, k.AccountID, k.Key).
			Scan(&hash, &state, &status, &body, &resource)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read idempotency key: %w", err)
		}
		switch {
		case !bytes.Equal(hash, requestHash):
			return nil, ErrIdempotencyUsed
		case state == "done" && status != nil:
			return &StoredResponse{Status: *status, Body: body, ResourceID: resource}, nil
		default:
			return nil, ErrIdempotencyBusy
		}
	}
	return nil, fmt.Errorf("claim idempotency key: lost the race three times")
}

// CompleteIdempotencyKey stores the response for a claimed key.
func (s *Store) CompleteIdempotencyKey(ctx context.Context, k IdempotencyKey, resp StoredResponse) error {
	return completeIdempotencyKey(ctx, s.pool, k, resp)
}

func completeIdempotencyKey(ctx context.Context, db execer, k IdempotencyKey, resp StoredResponse) error {
	_, err := db.Exec(ctx, `UPDATE idempotency_keys SET state = 'done', response_status = $3, response_body = $4
		WHERE account_id = $1 AND key = $2`, k.AccountID, k.Key, resp.Status, resp.Body)
	if err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	return nil
}

// ReleaseIdempotencyKey forgets a claimed key whose request failed in a way worth retrying.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, k IdempotencyKey) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND state = 'in_flight'`,
		k.AccountID, k.Key)
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// PurgeIdempotencyKeys deletes keys older than the window; it returns how many went.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < now() - $1::interval`, IdempotencyWindow)
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys: %w", err)
	}
	return tag.RowsAffected(), nil
}
