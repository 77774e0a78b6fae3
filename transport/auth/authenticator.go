package auth

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

// Source says how a request authenticated; it is recorded on the messages it sends.
type Source string

// Sources.
const (
	SourceAPI     Source = "api"     // X-API-Key
	SourceBrowser Source = "browser" // Authorization: Bearer <access token>
)

// Principal is the authenticated caller.
type Principal struct {
	AccountID uuid.UUID
	Source    Source
}

// KeyStore is the system of record for credentials.
type KeyStore interface {
	AccountByKeyHash(ctx context.Context, keyHash []byte) (uuid.UUID, string, error)
	AccountStatus(ctx context.Context, id uuid.UUID) (string, error)
}

// PrincipalCache answers from Redis client-side caching when it can (hit=false: ask the store).
type PrincipalCache interface {
	KeyAccount(ctx context.Context, hash []byte) (id string, found, hit bool)
	FillKey(ctx context.Context, hash []byte, accountID string)
	AccountStatus(ctx context.Context, accountID string) (status string, hit bool)
	FillAccountStatus(ctx context.Context, accountID, status string)
}

// Authenticator resolves credentials to principals.
type Authenticator struct {
	store  KeyStore
	cache  PrincipalCache
	tokens *Tokens
}

// NewAuthenticator wires the store, the cache and the token verifier.
func NewAuthenticator(store KeyStore, cache PrincipalCache, tokens *Tokens) *Authenticator {
	return &Authenticator{store: store, cache: cache, tokens: tokens}
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
	default:
		var status string
		var err error
		id, status, err = a.store.AccountByKeyHash(ctx, hash)
		if errors.Is(err, persistence.ErrNotFound) {
			a.cache.FillKey(ctx, hash, "")
			return Principal{}, ErrUnauthenticated
		}
		if err != nil {
			return Principal{}, err
		}
		a.cache.FillKey(ctx, hash, id.String())
		a.cache.FillAccountStatus(ctx, id.String(), status)
		if status != persistence.StatusActive {
			return Principal{}, ErrSuspended
		}
		return Principal{AccountID: id, Source: SourceAPI}, nil
	}
	if err := a.checkActive(ctx, id, idStr); err != nil {
		return Principal{}, err
	}
	return Principal{AccountID: id, Source: SourceAPI}, nil
}

// Bearer authenticates an access token.
func (a *Authenticator) Bearer(ctx context.Context, token string) (Principal, error) {
	id, err := a.tokens.Verify(token)
	if err != nil {
		return Principal{}, err
	}
	if err := a.checkActive(ctx, id, id.String()); err != nil {
		return Principal{}, err
	}
	return Principal{AccountID: id, Source: SourceBrowser}, nil
}

func (a *Authenticator) checkActive(ctx context.Context, id uuid.UUID, idStr string) error {
	status, hit := a.cache.AccountStatus(ctx, idStr)
	if !hit {
		var err error
		status, err = a.store.AccountStatus(ctx, id)
		if errors.Is(err, persistence.ErrNotFound) {
			return ErrUnauthenticated // a token for an account that no longer exists
		}
		if err != nil {
			return err
		}
		a.cache.FillAccountStatus(ctx, idStr, status)
	}
	if status != persistence.StatusActive {
		return ErrSuspended
	}
	return nil
}
