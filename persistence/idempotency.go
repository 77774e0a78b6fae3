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

// IdempotencyKey names one key, and the claim that holds it.
type IdempotencyKey struct {
	AccountID uuid.UUID
	Key       string
	// Claim is the token of the request that holds the key (set by ClaimIdempotencyKey).
	// Completing the key checks it: a request whose claim lapsed and was taken over by a retry
	// can no longer commit its effect.
	Claim uuid.UUID
}

// ErrIdempotencyLost means a request's claim on its key lapsed and another request holds it
// now; the request's effect was not committed.
var ErrIdempotencyLost = errors.New("the idempotency key was taken over by a later request")

// ClaimIdempotencyKey claims key for a request whose canonical hash is requestHash.
//
// It returns the key with its Claim set when the caller now owns it and must run the request,
// then complete the key with the request's effect (or ReleaseIdempotencyKey when the request
// provably wrote nothing). It returns the stored response when the same request already
// completed, ErrIdempotencyUsed when the key was used for a different request, and
// ErrIdempotencyBusy while the first request is still running. lease bounds how long an
// in-flight claim blocks a retry if its request never finishes; a retry that takes over a
// lapsed claim fences the first request out (see IdempotencyKey.Claim).
func (s *Store) ClaimIdempotencyKey(ctx context.Context, k IdempotencyKey, requestHash []byte, lease time.Duration) (IdempotencyKey, *StoredResponse, error) {
	k.Claim = NewID()
	for range 3 { // a concurrent release can delete the row between our two statements
		var claimed bool
		err := s.pool.QueryRow(ctx, `
			INSERT INTO idempotency_keys (account_id, key, request_hash, locked_until, claim)
			VALUES ($1, $2, $3, now() + $4::interval, $6)
			ON CONFLICT (account_id, key) DO UPDATE SET
				request_hash = EXCLUDED.request_hash, state = 'in_flight', locked_until = EXCLUDED.locked_until,
				claim = EXCLUDED.claim, response_status = NULL, response_body = NULL, resource_id = NULL, created_at = now()
			WHERE idempotency_keys.created_at < now() - $5::interval
			   OR (idempotency_keys.state = 'in_flight' AND idempotency_keys.locked_until < now()
			       AND idempotency_keys.request_hash = EXCLUDED.request_hash)
			RETURNING true`, k.AccountID, k.Key, requestHash, lease, IdempotencyWindow, k.Claim).Scan(&claimed)
		if err == nil {
			return k, nil, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return k, nil, fmt.Errorf("claim idempotency key: %w", err)
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
			return k, nil, fmt.Errorf("read idempotency key: %w", err)
		}
		switch {
		case !bytes.Equal(hash, requestHash):
			return k, nil, ErrIdempotencyUsed
		case state == "done" && status != nil:
			return k, &StoredResponse{Status: *status, Body: body, ResourceID: resource}, nil
		default:
			return k, nil, ErrIdempotencyBusy
		}
	}
	return k, nil, fmt.Errorf("claim idempotency key: lost the race three times")
}

// CompleteIdempotencyKey stores the response for a claimed key; ErrIdempotencyLost if the
// claim no longer holds it.
func (s *Store) CompleteIdempotencyKey(ctx context.Context, k IdempotencyKey, resp StoredResponse) error {
	return completeIdempotencyKey(ctx, s.pool, k, resp)
}

// completeIdempotencyKey stores the response, in the transaction of the request's effect when
// db is one: a lost claim fails it, and the caller rolls the effect back.
func completeIdempotencyKey(ctx context.Context, db execer, k IdempotencyKey, resp StoredResponse) error {
	tag, err := db.Exec(ctx, `UPDATE idempotency_keys SET state = 'done', response_status = $3, response_body = $4, resource_id = $6
		WHERE account_id = $1 AND key = $2 AND claim = $5 AND state = 'in_flight'`,
		k.AccountID, k.Key, resp.Status, resp.Body, k.Claim, resp.ResourceID)
	if err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrIdempotencyLost
	}
	return nil
}

// SaveIdempotentBody keeps the body a completed key replays, when the effect's transaction
// could only record its resource (the body is rendered after the commit). A key completed
// without a body replays from its resource.
func (s *Store) SaveIdempotentBody(ctx context.Context, k IdempotencyKey, body []byte) error {
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET response_body = $4
		WHERE account_id = $1 AND key = $2 AND claim = $3 AND state = 'done' AND response_body IS NULL`, k.AccountID, k.Key, k.Claim, body)
	if err != nil {
		return fmt.Errorf("save idempotent body: %w", err)
	}
	return nil
}

// ReleaseIdempotencyKey gives back a claimed key whose request provably wrote nothing (it was
// refused before any effect), so the client may retry with it. Only the holder's own claim is
// released.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, k IdempotencyKey) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND state = 'in_flight' AND claim = $3`,
		k.AccountID, k.Key, k.Claim)
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
