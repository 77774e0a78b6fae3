// Recording attempts' outcomes: a failure whose endpoint is to be disabled, and what a success
// does to the endpoint's other waiting deliveries.

package persistence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

// deliveryState is a delivery's status and due time (nil: none).
func deliveryState(t *testing.T, conn *pgx.Conn, id uuid.UUID) (string, *time.Time) {
	t.Helper()
	var status string
	var due *time.Time
	if err := conn.QueryRow(context.Background(), `SELECT status, next_attempt_at FROM webhook_deliveries WHERE id = $1`, id).
		Scan(&status, &due); err != nil {
		t.Fatal(err)
	}
	return status, due
}

func endpointEnabled(t *testing.T, conn *pgx.Conn, id uuid.UUID) bool {
	t.Helper()
	var on bool
	if err := conn.QueryRow(context.Background(), `SELECT enabled FROM webhook_endpoints WHERE id = $1`, id).Scan(&on); err != nil {
		t.Fatal(err)
	}
	return on
}

// A 410 whose disabling does not commit (here: the subscriptions' lock is held until the
// record gives up) leaves the delivery due on its retry, not waiting with no due time on an
// enabled endpoint, which would hold the endpoint's circuit open for good; its next attempt
// disables the endpoint.
func TestWebhookGoneWhoseDisableFailed(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 10_000)
	w := newHook(t, st, acct, 1, "message.sent")
	sent(t, st, acct, 1, "g")
	d := claim(t, st, 1, 8)
	if len(d) != 1 {
		t.Fatalf("claimed %d; want 1", len(d))
	}
	locker, conn := connect(t, url), connect(t, url)
	if _, err := locker.Exec(ctx, `SELECT pg_advisory_lock($1)`, persistence.HookLockKey); err != nil {
		t.Fatal(err)
	}
	gone := func(d persistence.WebhookDelivery) persistence.WebhookAttempt {
		return persistence.WebhookAttempt{DeliveryID: d.ID, EndpointID: d.EndpointID, LeaseUntil: d.LeaseUntil, At: time.Now(),
			StatusCode: 410, Error: "HTTP 410", RetryAt: time.Now(), Disable: "the endpoint answered 410 Gone"}
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	disabled, err := st.WebhookFailed(short, gone(d[0]), 0)
	cancel()
	if err == nil || errors.Is(err, persistence.ErrLeaseLost) || disabled != nil {
		t.Fatalf("recording the 410 with the lock held: %v, %+v; want the disable's timeout", err, disabled)
	}
	if status, due := deliveryState(t, conn, d[0].ID); status != "pending" || due == nil {
		t.Fatalf("after a failure whose disable did not commit: %s due %v; want pending with its retry time", status, due)
	}
	if !endpointEnabled(t, conn, w.ID) {
		t.Fatal("the endpoint was disabled although its disable did not commit")
	}
	if _, err := locker.Exec(ctx, `SELECT pg_advisory_unlock($1)`, persistence.HookLockKey); err != nil {
		t.Fatal(err)
	}
	again := claim(t, st, 1, 8)
	if len(again) != 1 || again[0].ID != d[0].ID {
		t.Fatalf("claimed %d after its retry time; want delivery %s again", len(again), d[0].ID)
	}
	disabled, err = st.WebhookFailed(ctx, gone(again[0]), 0)
	if err != nil || disabled == nil || disabled.ID != w.ID {
		t.Fatalf("the second 410: %v, %+v; want the endpoint disabled", err, disabled)
	}
	if status, due := deliveryState(t, conn, d[0].ID); status != "pending" || due != nil {
		t.Errorf("on a disabled endpoint: %s due %v; want pending with no due time until it is enabled", status, due)
	}
	if endpointEnabled(t, conn, w.ID) {
		t.Error("the endpoint is still enabled after the second 410")
	}
}

// A success closes the endpoint's circuit and makes its waiting retries due at once, except one
// told to wait by a 429 (Retry-After).
func TestWebhookSuccessKeepsRetryAfter(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 10_000)
	newHook(t, st, acct, 1, "message.sent")
	sent(t, st, acct, 3, "r")
	ds := claim(t, st, 3, 8)
	if len(ds) != 3 {
		t.Fatalf("claimed %d; want 3", len(ds))
	}
	later := time.Now().Add(time.Hour)
	for i, code := range []int{429, 500} {
		a := persistence.WebhookAttempt{DeliveryID: ds[i].ID, EndpointID: ds[i].EndpointID, LeaseUntil: ds[i].LeaseUntil,
			At: time.Now(), StatusCode: code, Error: "HTTP", RetryAt: later}
		if _, err := st.WebhookFailed(ctx, a, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := recordSuccess(ctx, st, ds[2], 200); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, url)
	if _, due := deliveryState(t, conn, ds[0].ID); due == nil || due.Before(later.Add(-time.Minute)) {
		t.Errorf("the 429's retry is due %v after another delivery's success; want %v (Retry-After)", due, later)
	}
	if _, due := deliveryState(t, conn, ds[1].ID); due == nil || due.After(time.Now().Add(time.Minute)) {
		t.Errorf("the 500's retry is due %v after another delivery's success; want now (the circuit closed)", due)
	}
}
