package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

// fakeKeyStore is the database: one account, counting its queries.
type fakeKeyStore struct {
	id           uuid.UUID
	keyHash      []byte
	access       persistence.Access
	keyQueries   int
	stateQueries int
}

func (f *fakeKeyStore) AccountByKeyHash(_ context.Context, h []byte) (uuid.UUID, persistence.Access, error) {
	f.keyQueries++
	if string(h) != string(f.keyHash) {
		return uuid.Nil, persistence.Access{}, persistence.ErrNotFound
	}
	return f.id, f.access, nil
}

func (f *fakeKeyStore) AccountAccess(_ context.Context, id uuid.UUID) (persistence.Access, error) {
	f.stateQueries++
	if id != f.id {
		return persistence.Access{}, persistence.ErrNotFound
	}
	return f.access, nil
}

// fakeCache is the Redis principal cache; down makes every lookup a miss, as in an outage.
type fakeCache struct {
	down   bool
	keys   map[string]string
	access map[string]persistence.Access
}

func newFakeCache() *fakeCache {
	return &fakeCache{keys: map[string]string{}, access: map[string]persistence.Access{}}
}

func (c *fakeCache) KeyAccount(_ context.Context, h []byte) (string, bool, bool) {
	v, ok := c.keys[string(h)]
	if c.down || !ok {
		return "", false, false
	}
	return v, v != "", true
}

func (c *fakeCache) FillKey(_ context.Context, h []byte, id string) {
	if !c.down {
		c.keys[string(h)] = id
	}
}

func (c *fakeCache) AccountAccess(_ context.Context, id string) (string, int64, bool) {
	a, ok := c.access[id]
	if c.down || !ok {
		return "", 0, false
	}
	return string(a.Status), a.TokenVersion, true
}

func (c *fakeCache) FillAccountAccess(_ context.Context, id, status string, v int64) {
	if !c.down {
		c.access[id] = persistence.Access{Status: persistence.AccountStatus(status), TokenVersion: v}
	}
}

// TestUnknownKeysAreRememberedWhileRedisIsDown: a client repeating a wrong API key costs one
// database query, not one per request, even when Redis cannot answer.
func TestUnknownKeysAreRememberedWhileRedisIsDown(t *testing.T) {
	store := &fakeKeyStore{id: uuid.New(), access: persistence.Access{Status: persistence.StatusActive}}
	a := NewAuthenticator(store, &fakeCache{down: true}, NewTokens([]byte("0123456789abcdef0123456789abcdef"), nil))
	now := time.Now()
	a.unknown.now = func() time.Time { return now }
	wrong, _, _, err := NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if _, err := a.APIKey(context.Background(), wrong); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("APIKey(unknown) error = %v; want ErrUnauthenticated", err)
		}
	}
	if store.keyQueries != 1 {
		t.Errorf("100 requests with one unknown key made %d database queries; want 1", store.keyQueries)
	}
	now = now.Add(unknownKeysTTL + time.Second) // forgotten after a while: asked again
	a.APIKey(context.Background(), wrong)
	if store.keyQueries != 2 {
		t.Errorf("after the TTL: %d database queries; want 2", store.keyQueries)
	}
	// The memory is bounded: a flood of distinct keys never holds more than the cap.
	for range unknownKeysMax + 100 {
		k, _, _, _ := NewAPIKey()
		a.APIKey(context.Background(), k)
	}
	if n := a.unknown.m.Len(); n != unknownKeysMax {
		t.Errorf("unknown keys held = %d; want the cap %d", n, unknownKeysMax)
	}
}

// TestBearerTokenVersion: a token issued before a password change (an older token version) is
// refused, and checking it costs no database query while the cache answers.
func TestBearerTokenVersion(t *testing.T) {
	id := uuid.New()
	store := &fakeKeyStore{id: id, access: persistence.Access{Status: persistence.StatusActive, TokenVersion: 0}}
	cache := newFakeCache()
	tokens := NewTokens([]byte("0123456789abcdef0123456789abcdef"), nil)
	a := NewAuthenticator(store, cache, tokens)
	old, err := tokens.Issue(id, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 10 {
		if p, err := a.Bearer(ctx, old); err != nil || p.AccountID != id {
			t.Fatalf("Bearer = %+v, %v; want the account", p, err)
		}
	}
	if store.stateQueries != 1 {
		t.Errorf("10 bearer requests made %d database queries; want 1 (then the cache answers)", store.stateQueries)
	}
	// The password changes: the database and every node's cache learn version 1.
	store.access.TokenVersion = 1
	cache.access[id.String()] = store.access
	if _, err := a.Bearer(ctx, old); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("token from before the password change: error %v; want ErrUnauthenticated", err)
	}
	fresh, _ := tokens.Issue(id, 1)
	if _, err := a.Bearer(ctx, fresh); err != nil {
		t.Errorf("token issued after the change: %v", err)
	}
	// Redis down: the database decides.
	cache.down = true
	if _, err := a.Bearer(ctx, old); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("old token with Redis down: error %v; want ErrUnauthenticated", err)
	}
	if _, err := a.Bearer(ctx, fresh); err != nil {
		t.Errorf("fresh token with Redis down: %v", err)
	}
}
