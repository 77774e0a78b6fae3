// Package apitest holds what the front door's groups test their inputs with.
package apitest

import (
	"errors"
	"net/http"
	"testing"

	"github.com/tuma-sms/tuma/transport/api"
)

// CheckInputError asserts that a rejected body gets a client error with a problem, never a 500.
func CheckInputError(t *testing.T, body []byte, err error) {
	t.Helper()
	var p *api.Problem
	if !errors.As(err, &p) {
		t.Fatalf("body %q: error %v is not a problem", body, err)
	}
	if p.Status != http.StatusBadRequest && p.Status != http.StatusUnprocessableEntity {
		t.Fatalf("body %q: status %d; want 400 or 422", body, p.Status)
	}
	if p.Status == http.StatusUnprocessableEntity && len(p.Errors) == 0 {
		t.Fatalf("body %q: 422 without field errors", body)
	}
}

// CheckNulRefused asserts that each parse, given a body with NUL in a member, fails with a
// 422 naming the field: PostgreSQL cannot store U+0000, so such a body never reaches the store.
func CheckNulRefused(t *testing.T, parses map[string]func() error) {
	t.Helper()
	for name, parse := range parses {
		var p *api.Problem
		if err := parse(); !errors.As(err, &p) || p.Status != http.StatusUnprocessableEntity || len(p.Errors) == 0 {
			t.Errorf("%s with NUL = %v; want a 422 naming the field", name, err)
		}
	}
}
