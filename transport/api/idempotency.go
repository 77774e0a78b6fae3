// Idempotency-Key: a POST that changes money or messages runs once per key.

package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/actors"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/payments"
)

// maxIdempotencyKey bounds the Idempotency-Key header.
const maxIdempotencyKey = 255

// persistenceLeaseMargin keeps an in-flight claim a little longer than its request may run.
const persistenceLeaseMargin = 5 * time.Second

// KeyStore stores Idempotency-Key claims and responses.
type KeyStore interface {
	ClaimIdempotencyKey(ctx context.Context, k persistence.IdempotencyKey, requestHash []byte, lease time.Duration) (persistence.IdempotencyKey, *persistence.StoredResponse, error)
	ReleaseIdempotencyKey(ctx context.Context, k persistence.IdempotencyKey) error
	CompleteIdempotencyKey(ctx context.Context, k persistence.IdempotencyKey, resp persistence.StoredResponse) error
}

// Keys runs requests under their Idempotency-Key.
type Keys struct {
	store  KeyStore
	log    *slog.Logger
	lease  time.Duration // how long a claim holds: a request's time and a margin
	faults Faults
}

// NewKeys returns Keys for a front door configured with opts (its request timeout bounds a
// claim's lease).
func NewKeys(store KeyStore, opts Options, log *slog.Logger) *Keys {
	opts = opts.withDefaults()
	return &Keys{store: store, log: log, lease: opts.RequestTimeout + persistenceLeaseMargin, faults: opts.Faults}
}

// Op says whose key space a request's Idempotency-Key lives in and how to answer a replay
// whose first response was recorded only as the resource it created.
type Op struct {
	Scope        uuid.UUID // the account the key belongs to
	Namespace    string    // keeps operators' keys apart from the tenant's own ("admin:")
	FromResource func(ctx context.Context, scope, resource uuid.UUID) (any, error)
	// Wait: a request whose key's first request is still running waits for its outcome (a
	// dashboard form sent twice). Otherwise it is 409 idempotency_key_in_use at once, as the
	// API promises (CONTRACT §1).
	Wait bool
}

// Run runs a POST that honours Idempotency-Key. A replay of a completed request answers as
// the first time did and runs nothing; a retry of one still running is 409 (or, with
// Op.Wait, waits for its outcome).
// run completes the key in the transaction that makes its effect durable (key is nil without
// the header). When run fails, the key is given back only if the failure provably wrote
// nothing (see wroteNothing): after a timeout the effect may still commit, so the key stays
// claimed and a retry replays it.
func (k *Keys) Run(ctx context.Context, rc *fasthttp.RequestCtx, op Op, run func(key *persistence.IdempotencyKey) error) error {
	raw := rc.Request.Header.Peek("Idempotency-Key")
	if len(raw) == 0 {
		return run(nil)
	}
	h := sha256.New()
	h.Write(rc.Method())
	h.Write([]byte{0})
	h.Write(rc.Path())
	h.Write([]byte{0})
	h.Write(rc.PostBody())
	r, err := k.Do(ctx, op, string(raw), h.Sum(nil), run)
	if r == nil {
		return err
	}
	rc.Response.Header.Set("Idempotent-Replayed", "true")
	if err != nil {
		return err
	}
	if r.Value != nil {
		return WriteJSON(rc, r.Status, r.Value)
	}
	WriteJSONBody(rc, r.Status, r.Body)
	return nil
}

// Replay is the first outcome of a request whose idempotency key was used already: its
// status, and its body as stored or as rebuilt from the resource it created (Op.FromResource).
type Replay struct {
	Status int
	Value  any    // rebuilt from the resource; nil when Body holds the answer
	Body   []byte // the JSON stored with the key
}

// Do is Run for a caller that is not an HTTP request (a dashboard form sends its token as the
// key): fingerprint identifies the request (a different request under the same key is
// refused as idempotency_key_reused). The first request with a key runs, and Do returns a nil
// Replay and run's error; a request made already does not run again: Do returns its first
// outcome (and the error, if rebuilding it failed).
func (k *Keys) Do(ctx context.Context, op Op, key string, fingerprint []byte, run func(key *persistence.IdempotencyKey) error) (*Replay, error) {
	// Not UTF-8, it could not even be looked up: PostgreSQL text refuses it.
	if key == "" || len(key) > maxIdempotencyKey || !utf8.ValidString(key) {
		return nil, NewProblem("invalid_idempotency_key", "Idempotency-Key must be at most 255 characters of UTF-8 text")
	}
	claimed, stored, err := k.claim(ctx, persistence.IdempotencyKey{AccountID: op.Scope, Key: op.Namespace + key}, fingerprint, op.Wait)
	if err != nil {
		return nil, err
	}
	if stored != nil {
		return replay(ctx, op, stored)
	}
	if err := run(&claimed); err != nil {
		if wroteNothing(err) || k.faults.releaseKeys() {
			if rerr := k.store.ReleaseIdempotencyKey(context.WithoutCancel(ctx), claimed); rerr != nil {
				k.log.Warn("release idempotency key", "error", rerr) // the lease frees it in time
			}
		}
		return nil, err
	}
	return nil, nil
}

// CreateOnce runs create under a dashboard form's key (one per render; Do with Op.Wait): the
// first request with the key creates, and a later one with the same key and fingerprint (the
// browser sending the form again: a reload of the answer, a double click) creates nothing and
// gets the first one's resource id, replayed true. The key is completed after create, not in
// its transaction: should that fail, the resource stands and the key's lease lapses.
func (k *Keys) CreateOnce(ctx context.Context, scope uuid.UUID, namespace, key string, fingerprint []byte,
	create func() (uuid.UUID, error)) (id uuid.UUID, replayed bool, err error) {
	op := Op{Scope: scope, Namespace: namespace, Wait: true,
		FromResource: func(_ context.Context, _, resource uuid.UUID) (any, error) { return resource, nil }}
	r, err := k.Do(ctx, op, key, fingerprint, func(claimed *persistence.IdempotencyKey) error {
		var err error
		if id, err = create(); err != nil {
			return err
		}
		if cerr := k.store.CompleteIdempotencyKey(context.WithoutCancel(ctx), *claimed,
			persistence.StoredResponse{Status: http.StatusCreated, ResourceID: &id}); cerr != nil {
			k.log.Warn("complete a form's key", "error", cerr) // the lease frees it in time
		}
		return nil
	})
	if r == nil || err != nil {
		return id, r != nil, err
	}
	if v, ok := r.Value.(uuid.UUID); ok {
		return v, true, nil
	}
	return uuid.Nil, true, errors.New("replay of a form without the resource it created")
}

// wroteNothing reports a failure that provably happened before any effect: a refused request
// (validation, an unknown sender), a send the balance cannot cover or whose every recipient is
// suppressed, an engine not taking commands, a payment provider that never opened the
// checkout. Timeouts and store errors are unknown outcomes.
func wroteNothing(err error) bool {
	var p *Problem
	switch {
	case errors.As(err, &p):
		return p.Status < 500
	case errors.As(err, new(*actors.InsufficientBalanceError)),
		errors.Is(err, actors.ErrAllSuppressed), // refused by the tenant before any write
		errors.Is(err, actors.ErrStopping),
		errors.Is(err, persistence.ErrFenced), // refused by the fence check, which writes nothing
		errors.Is(err, payments.ErrUnavailable):
		return true
	}
	return false
}

// claim takes the key for this request, or returns the stored response of an earlier
// identical request. While that request is still running, claim answers ErrIdempotencyBusy,
// or with wait, waits for its outcome (polling, within this request's deadline).
func (k *Keys) claim(ctx context.Context, key persistence.IdempotencyKey, fingerprint []byte, wait bool) (persistence.IdempotencyKey, *persistence.StoredResponse, error) {
	pause := 20 * time.Millisecond
	for {
		claimed, stored, err := k.store.ClaimIdempotencyKey(ctx, key, fingerprint, k.lease)
		if wait && errors.Is(err, persistence.ErrIdempotencyBusy) {
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) > pause+time.Second {
				select {
				case <-time.After(pause):
					pause = min(2*pause, 500*time.Millisecond)
					continue
				case <-ctx.Done():
				}
			}
		}
		return claimed, stored, err
	}
}

// replay is a completed key's first response.
func replay(ctx context.Context, op Op, stored *persistence.StoredResponse) (*Replay, error) {
	r := &Replay{Status: stored.Status, Body: stored.Body}
	if stored.Body == nil && stored.ResourceID != nil && op.FromResource != nil {
		v, err := op.FromResource(ctx, op.Scope, *stored.ResourceID)
		if err != nil {
			return r, err
		}
		r.Value = v
	}
	return r, nil
}
