package auth

import (
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

func TestTokens(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tk := NewTokens([]byte("0123456789abcdef0123456789abcdef"), clock)
	id := uuid.New()
	s, err := tk.Issue(id, 7)
	if err != nil {
		t.Fatal(err)
	}
	if got, ver, err := tk.Verify(s); err != nil || got != id || ver != 7 {
		t.Fatalf("Verify = %v, %d, %v; want %v, 7", got, ver, err, id)
	}
	later := NewTokens([]byte("0123456789abcdef0123456789abcdef"), func() time.Time { return now.Add(31 * time.Minute) })
	if _, _, err := later.Verify(s); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("expired token error = %v; want ErrUnauthenticated", err)
	}
	other := NewTokens([]byte("another secret, also 32 bytes lo"), clock)
	if _, _, err := other.Verify(s); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("foreign signature error = %v; want ErrUnauthenticated", err)
	}
	// alg=none and other algorithms are refused even with valid claims.
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.RegisteredClaims{
		Issuer: "tuma", Subject: id.String(), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
	}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if _, _, err := tk.Verify(none); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("alg=none token error = %v; want ErrUnauthenticated", err)
	}
	hs512, _ := jwt.NewWithClaims(jwt.SigningMethodHS512, jwt.RegisteredClaims{
		Issuer: "tuma", Subject: id.String(), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
	}).SignedString([]byte("0123456789abcdef0123456789abcdef"))
	if _, _, err := tk.Verify(hs512); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("HS512 token error = %v; want ErrUnauthenticated", err)
	}
}
