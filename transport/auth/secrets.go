// Package auth authenticates API callers: password hashing, API keys, refresh tokens, JWT
// access tokens, header parsing, and the cache-aside lookup that turns a credential into a
// Principal.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"

	"golang.org/x/crypto/bcrypt"
)

// APIKeyPrefix starts every live API key, so leaked keys are easy to recognise and scan for.
const APIKeyPrefix = "sk_live_"

// apiKeyDisplayLen is how much of a key is kept in clear (api_key_prefix).
const apiKeyDisplayLen = 12

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// apiKeyRandomLen base62 characters carry ~256 bits.
const apiKeyRandomLen = 43

// NewAPIKey returns a fresh key, the part of it shown as its prefix, and the hash to store.
func NewAPIKey() (key, prefix string, hash []byte, err error) {
	b := make([]byte, 0, len(APIKeyPrefix)+apiKeyRandomLen)
	b = append(b, APIKeyPrefix...)
	max := big.NewInt(int64(len(base62)))
	for range apiKeyRandomLen {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", "", nil, fmt.Errorf("generate api key: %w", err)
		}
		b = append(b, base62[n.Int64()])
	}
	key = string(b)
	return key, key[:apiKeyDisplayLen], HashSecret(key), nil
}

// SMPPPasswordLen is an SMPP password's length: SMPP 3.4 gives it 9 octets with its NUL.
const SMPPPasswordLen = 8

// SMPPPasswordCost is the most bcrypt cost SMPP passwords are hashed at. They are random (8
// base62 characters, 47 bits), not chosen by people, and every bind of an ESME is checked
// against one: cost 8 takes about 20 ms where 10 takes 80, so a node's binds coming back
// after a restart cost a quarter of the CPU, while a stolen hash still takes a GPU a century.
const SMPPPasswordCost = 8

// NewSMPPPassword returns a random SMPP password: SMPPPasswordLen base62 characters, which
// every ESME's configuration can hold.
func NewSMPPPassword() (string, error) {
	b := make([]byte, SMPPPasswordLen)
	max := big.NewInt(int64(len(base62)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", fmt.Errorf("generate smpp password: %w", err)
		}
		b[i] = base62[n.Int64()]
	}
	return string(b), nil
}

// NewRefreshToken returns an opaque single-use refresh token and the hash to store.
func NewRefreshToken() (token string, hash []byte, err error) { return NewToken("rt_") }

// NewToken returns an opaque token of 256 random bits (for links and refresh tokens) with a
// prefix saying what it is for, and the hash to store.
func NewToken(prefix string) (token string, hash []byte, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("generate token: %w", err)
	}
	token = prefix + base64.RawURLEncoding.EncodeToString(b)
	return token, HashSecret(token), nil
}

// HashSecret is how high-entropy secrets (API keys, refresh tokens) are stored: SHA-256 is
// enough when the input is 256 random bits, and fast enough for every request.
func HashSecret(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// Passwords hashes and checks passwords with bcrypt.
type Passwords struct {
	Cost  int    // bcrypt cost; tests lower it
	dummy []byte // compared against when the account does not exist, so timing reveals nothing
}

// NewPasswords returns a hasher at the given bcrypt cost.
func NewPasswords(cost int) (*Passwords, error) {
	if cost < bcrypt.MinCost || cost > bcrypt.MaxCost {
		return nil, fmt.Errorf("bcrypt cost %d out of range %d..%d", cost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	p := &Passwords{Cost: cost}
	d, err := bcrypt.GenerateFromPassword(prehash("not a password"), cost)
	if err != nil {
		return nil, err
	}
	p.dummy = d
	return p, nil
}

// Hash returns the stored form of a password.
func (p *Passwords) Hash(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword(prehash(password), p.Cost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// Verify reports whether password matches hash. An empty hash (unknown account) still costs
// one bcrypt comparison.
func (p *Passwords) Verify(hash, password string) bool {
	if hash == "" {
		_ = bcrypt.CompareHashAndPassword(p.dummy, prehash(password))
		return false
	}
	err := bcrypt.CompareHashAndPassword([]byte(hash), prehash(password))
	return err == nil
}

// prehash lets passwords of any length count in full: bcrypt reads at most 72 bytes.
func prehash(password string) []byte {
	h := sha512.Sum384([]byte(password))
	return []byte(base64.StdEncoding.EncodeToString(h[:])) // 64 bytes, no NULs
}

// ErrMalformedHeader is returned for credentials that cannot be well-formed.
var ErrMalformedHeader = errors.New("malformed credentials")
