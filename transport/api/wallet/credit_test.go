package wallet

import (
	"testing"

	"github.com/tuma-sms/tuma/transport/api/apitest"
)

// PostgreSQL cannot store U+0000: a credit with one is a 422 naming the field, before
// anything reaches the store.
func TestNulInABodyIsRefused(t *testing.T) {
	apitest.CheckNulRefused(t, map[string]func() error{
		"credit": func() error {
			_, _, err := parseCredit([]byte(`{"amount_kes":1,"description":"\u0000"}`))
			return err
		},
	})
}
