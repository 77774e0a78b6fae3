package auth

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// AccessTokenTTL is fixed by the API: login answers expires_in 1800.
const AccessTokenTTL = 30 * time.Minute

const issuer = "tuma"

// Tokens issues and verifies HS256 access tokens.
type Tokens struct {
	secret []byte
	now    func() time.Time
	parser *jwt.Parser
}

// NewTokens returns a signer with the given secret; now is injectable for tests.
func NewTokens(secret []byte, now func() time.Time) *Tokens {
	if now == nil {
		now = time.Now
	}
	return &Tokens{
		secret: secret,
		now:    now,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), // never "none", never RS/HS confusion
			jwt.WithIssuer(issuer),
			jwt.WithExpirationRequired(),
			jwt.WithIssuedAt(),
			jwt.WithLeeway(5*time.Second),
			jwt.WithTimeFunc(now),
		),
	}
}

// claims are an access token's: the registered ones plus the account's token version at
// issue, so a new password (which bumps the version) ends every token issued before it.
type claims struct {
	jwt.RegisteredClaims
	TokenVersion int64 `json:"tv,omitempty"`
}

// Issue returns a signed access token for the account at its current token version.
func (t *Tokens) Issue(accountID uuid.UUID, tokenVersion int64) (string, error) {
	now := t.now()
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    issuer,
			Subject:   accountID.String(),
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(AccessTokenTTL)),
		},
		TokenVersion: tokenVersion,
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.secret)
	if err != nil {
		return "", fmt.Errorf("sign access token: %w", err)
	}
	return s, nil
}

// Verify checks signature, algorithm, issuer and expiry and returns the account id and the
// token version the token was issued at (0 for tokens issued before versions existed).
func (t *Tokens) Verify(token string) (uuid.UUID, int64, error) {
	var c claims
	_, err := t.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil })
	if err != nil {
		return uuid.Nil, 0, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	id, err := uuid.Parse(c.Subject)
	if err != nil {
		return uuid.Nil, 0, fmt.Errorf("%w: bad subject", ErrUnauthenticated)
	}
	return id, c.TokenVersion, nil
}

// Errors of authentication.
var (
	ErrUnauthenticated = errors.New("missing or invalid credentials")
	ErrSuspended       = errors.New("account suspended")
)
