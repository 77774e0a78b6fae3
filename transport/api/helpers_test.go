package api

import (
	"crypto/sha256"

	"github.com/tuma-sms/tuma/persistence"
)

func newTestAccount(email string) persistence.NewAccount {
	h := sha256.Sum256([]byte(email))
	return persistence.NewAccount{Email: email, PasswordHash: "x", FullName: "Bench", CompanyName: "Bench Ltd",
		APIKeyHash: h[:], APIKeyPrefix: "sk_live_xxxx"}
}
