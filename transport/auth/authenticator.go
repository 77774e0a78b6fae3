package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/lru"
)

// Source says how a request authenticated; it is recorded on the messages it sends.
type Source string

// Sources.
const (
	SourceAPI     Source = "api"     // X-API-Key
	SourceBrowser Source = "browser" // Authorization: Bearer <access token>, or a dashboard session
	SourceSMPP    Source = "smpp"    // a bind to the SMPP server (transport/smppserver)
)

// Principal is the authenticated caller.
type Principal struct {
	AccountID uuid.UUID
	Source    Source
}

// KeyStore is the system of record for credentials.
type KeyStore interface {
	AccountByKeyHash(ctx context.Context, keyHash []byte) (uuid.UUID, persistence.Access, error)
	AccountAccess(ctx context.Context, id uuid.UUID) (persistence.Access, error)
}

// PrincipalCache answers from Redis client-side caching when it can (hit=false: ask the store).
type PrincipalCache interface {
	KeyAccount(ctx context.Context, hash []byte) (id string, found, hit bool)
	FillKey(ctx context.Context, hash []byte, accountID string)
	AccountAccess(ctx context.Context, accountID string) (status string, tokenVersion int64, hit bool)
	FillAccountAccess(ctx context.Context, accountID, status string, tokenVersion int64)
}

// Bounds of the in-process memory of unknown API keys.
const (
	unknownKeysMax = 10_000
	unknownKeysTTL = time.Minute
)

// Authenticator resolves credentials to principals.
type Authenticator struct {
	store   KeyStore
	cache   PrincipalCache
	tokens  *Tokens
	unknown unknownKeys
}

// NewAuthenticator wires the store, the cache and the token verifier.
func NewAuthenticator(store KeyStore, cache PrincipalCache, tokens *Tokens) *Authenticator {
	return &Authenticator{store: store, cache: cache, tokens: tokens,
		unknown: unknownKeys{m: lru.New[[sha256.Size]byte, time.Time](unknownKeysMax), now: time.Now}}
}

// APIKey authenticates an X-API-Key value.
func (a *Authenticator) APIKey(ctx context.Context, key string) (Principal, error) {
	if !ValidAPIKeyShape(key) {
		return Principal{}, ErrUnauthenticated
	}
	hash := HashSecret(key)
	idStr, found, hit := a.cache.KeyAccount(ctx, hash)
	var id uuid.UUID
	switch {
	case hit && !found:
		return Principal{}, ErrUnauthenticated
	case hit:
		var err error
		if id, err = uuid.Parse(idStr); err != nil {
			return Principal{}, fmt.Errorf("cached account id %q: %w", idStr, err)
		}
	case a.unknown.has(hash): // the cache cannot answer (Redis down) but this process can
		return Principal{}, ErrUnauthenticated
	default:
		id, acc, err := a.store.AccountByKeyHash(ctx, hash)
		if errors.Is(err, persistence.ErrNotFound) {
			// Keys are random: one the database does not know now never becomes valid, so
			// remembering it is safe. Redis keeps a tombstone too, but Redis may be down.
			a.unknown.add(hash)
			a.cache.FillKey(ctx, hash, "")
			return Principal{}, ErrUnauthenticated
		}
		if err != nil {
			return Principal{}, err
		}
		a.cache.FillKey(ctx, hash, id.String())
		a.cache.FillAccountAccess(ctx, id.String(), string(acc.Status), acc.TokenVersion)
		if acc.Status != persistence.StatusActive {
			return Principal{}, ErrSuspended
		}
		return Principal{AccountID: id, Source: SourceAPI}, nil
	}
	acc, err := a.access(ctx, id, idStr)
	if err != nil {
		return Principal{}, err
	}
	if acc.Status != persistence.StatusActive {
		return Principal{}, ErrSuspended
	}
	return Principal{AccountID: id, Source: SourceAPI}, nil
}

// Bearer authenticates an access token. A token issued before the account's latest password
// change carries an older token version and is refused.
func (a *Authenticator) Bearer(ctx context.Context, token string) (Principal, error) {
	id, version, err := a.tokens.Verify(token)
	if err != nil {
		return Principal{}, err
	}
	acc, err := a.access(ctx, id, id.String())
	if err != nil {
		return Principal{}, err
	}
	if acc.TokenVersion != version {
		return Principal{}, fmt.Errorf("%w: token issued before the password changed", ErrUnauthenticated)
	}
	if acc.Status != persistence.StatusActive {
		return Principal{}, ErrSuspended
	}
	return Principal{AccountID: id, Source: SourceBrowser}, nil
}

// Session admits a dashboard session of the account begun at tokenVersion: as a bearer token
// is, it ends when the password changes and is refused while the account is suspended.
func (a *Authenticator) Session(ctx context.Context, accountID uuid.UUID, tokenVersion int64) (Principal, error) {
	acc, err := a.access(ctx, accountID, accountID.String())
	if err != nil {
		return Principal{}, err
	}
	if acc.TokenVersion != tokenVersion {
		return Principal{}, fmt.Errorf("%w: session begun before the password changed", ErrUnauthenticated)
	}
	if acc.Status != persistence.StatusActive {
		return Principal{}, ErrSuspended
	}
	return Principal{AccountID: accountID, Source: SourceBrowser}, nil
}

// access reads an account's status and token version: from the cache, which every node
// keeps current, and from the database only when the cache cannot answer.
func (a *Authenticator) access(ctx context.Context, id uuid.UUID, idStr string) (persistence.Access, error) {
	if status, version, hit := a.cache.AccountAccess(ctx, idStr); hit {
		return persistence.Access{Status: persistence.AccountStatus(status), TokenVersion: version}, nil
	}
	acc, err := a.store.AccountAccess(ctx, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return persistence.Access{}, ErrUnauthenticated // a token for an account that no longer exists
	}
	if err != nil {
		return persistence.Access{}, err
	}
	a.cache.FillAccountAccess(ctx, idStr, string(acc.Status), acc.TokenVersion)
	return acc, nil
}

// unknownKeys remembers, in this process and for a short while, API key hashes the database
// did not know, so a client repeating a wrong key costs no query even while Redis is down.
// Bounded: a flood of distinct keys only pushes out the oldest.
type unknownKeys struct {
	mu  sync.Mutex
	m   *lru.Cache[[sha256.Size]byte, time.Time] // key hash → until
	now func() time.Time
}

func (u *unknownKeys) has(hash []byte) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	until, ok := u.m.Get([sha256.Size]byte(hash))
	if !ok {
		return false
	}
	if u.now().After(until) {
		u.m.Remove([sha256.Size]byte(hash))
		return false
	}
	return true
}

func (u *unknownKeys) add(hash []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.m.Add([sha256.Size]byte(hash), u.now().Add(unknownKeysTTL))
}
