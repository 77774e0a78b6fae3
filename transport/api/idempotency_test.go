package api_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
	"github.com/tuma-sms/tuma/transport/api"
)

// A request whose Idempotency-Key's first request is still running is refused at once
// (409 idempotency_key_in_use, CONTRACT §1), and runs nothing; a dashboard form (Op.Wait)
// waits for the first one's outcome instead, within its deadline.
func TestKeyStillRunningIsRefusedAtOnce(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	key := sha256.Sum256([]byte("idem-test"))
	a, err := st.CreateAccount(ctx, persistence.NewAccount{Email: "idem@example.com", PasswordHash: "x", FullName: "Test",
		CompanyName: "Acme", APIKeyHash: key[:], APIKeyPrefix: "sk_live_test"})
	if err != nil {
		t.Fatal(err)
	}
	fp := []byte("the same request")
	if _, _, err := st.ClaimIdempotencyKey(ctx, persistence.IdempotencyKey{AccountID: a.ID, Key: "k-1"}, fp, time.Minute); err != nil {
		t.Fatal(err) // the first request, still running
	}
	keys := api.NewKeys(st, api.Options{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ran := false
	run := func(*persistence.IdempotencyKey) error { ran = true; return nil }

	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second) // a request's deadline
	defer rcancel()
	start := time.Now()
	if _, err := keys.Do(rctx, api.Op{Scope: a.ID}, "k-1", fp, run); !errors.Is(err, persistence.ErrIdempotencyBusy) {
		t.Fatalf("a second request while the first runs: %v; want ErrIdempotencyBusy", err)
	}
	if took := time.Since(start); took > time.Second || ran {
		t.Errorf("refused after %v, ran %v; want at once, nothing run", took, ran)
	}

	wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := keys.Do(wctx, api.Op{Scope: a.ID, Wait: true}, "k-1", fp, run); !errors.Is(err, persistence.ErrIdempotencyBusy) || ran {
		t.Fatalf("a waiting request: %v, ran %v; want ErrIdempotencyBusy once its wait is over, nothing run", err, ran)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("a waiting request gave up after %v; want it to wait", took)
	}
}
