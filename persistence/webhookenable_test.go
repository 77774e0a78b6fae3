// Enabling and disabling an endpoint while other writes of it are under way: each waits for
// the other, and neither leaves a delivery waiting with no due time on an enabled endpoint.

package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

// waitForLockOrDone polls until a backend of the database waits on a lock or done is closed.
func waitForLockOrDone(t *testing.T, conn *pgx.Conn, done <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return
		default:
		}
		var n int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the write neither finished nor waited on a lock within 10 s")
}

// An endpoint disabled (a 410) while a PATCH of its description is under way stays disabled:
// the PATCH writes back what it finds under the row's lock, not what it read before.
func TestWebhookPatchDuringDisable(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 10_000)
	w := newHook(t, st, acct, 1, "message.sent")
	watch, locker := connect(t, url), connect(t, url)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'the endpoint answered 410 Gone'
		WHERE id = $1`, w.ID); err != nil {
		t.Fatal(err)
	}
	desc := "renamed"
	done := make(chan struct{})
	var got persistence.Webhook
	var perr error
	go func() {
		defer close(done)
		got, perr = st.UpdateWebhook(ctx, acct, w.ID, persistence.WebhookPatch{Description: &desc})
	}()
	waitForLockOrDone(t, watch, done)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if perr != nil {
		t.Fatal(perr)
	}
	if got.Enabled || endpointEnabled(t, watch, w.ID) {
		t.Errorf("a PATCH of the description during a disable enabled the endpoint again (answered enabled=%v)", got.Enabled)
	}
	if got.Description != desc {
		t.Errorf("description %q; want %q", got.Description, desc)
	}
}

// A delivery retried by hand while its endpoint is being enabled is due once both commit.
func TestWebhookRetryDuringEnable(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 10_000)
	w := newHook(t, st, acct, 1, "message.sent")
	sent(t, st, acct, 1, "e")
	d := claim(t, st, 1, 8)
	if len(d) != 1 {
		t.Fatalf("claimed %d; want 1", len(d))
	}
	final := persistence.WebhookAttempt{DeliveryID: d[0].ID, EndpointID: w.ID, LeaseUntil: d[0].LeaseUntil, At: time.Now(),
		StatusCode: 500, Error: "HTTP 500"} // no RetryAt: the delivery has failed
	if _, err := st.WebhookFailed(ctx, final, 0); err != nil {
		t.Fatal(err)
	}
	off := false
	if _, err := st.UpdateWebhook(ctx, acct, w.ID, persistence.WebhookPatch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	watch, locker := connect(t, url), connect(t, url)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// What enabling it does (UpdateWebhook), not yet committed.
	if _, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET enabled = true, disabled_reason = NULL WHERE id = $1`, w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = now() WHERE endpoint_id = $1 AND status = 'pending'`,
		w.ID); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var rerr error
	go func() {
		defer close(done)
		rerr = st.RetryWebhookDelivery(ctx, acct, w.ID, d[0].ID)
	}()
	waitForLockOrDone(t, watch, done)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if rerr != nil {
		t.Fatal(rerr)
	}
	if status, due := deliveryState(t, watch, d[0].ID); status != "pending" || due == nil {
		t.Errorf("retried during the enable: %s due %v; want pending and due", status, due)
	}
}

// A test event queued while its endpoint is being enabled is due once both commit.
func TestWebhookTestDuringEnable(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 10_000)
	w := newHook(t, st, acct, 1, "message.sent")
	off := false
	if _, err := st.UpdateWebhook(ctx, acct, w.ID, persistence.WebhookPatch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	watch, locker := connect(t, url), connect(t, url)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE webhook_endpoints SET enabled = true, disabled_reason = NULL WHERE id = $1`, w.ID); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var id uuid.UUID
	var terr error
	go func() {
		defer close(done)
		id, terr = st.TestWebhook(ctx, acct, w.ID)
	}()
	waitForLockOrDone(t, watch, done)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if terr != nil {
		t.Fatal(terr)
	}
	if status, due := deliveryState(t, watch, id); status != "pending" || due == nil {
		t.Errorf("a test event queued during the enable: %s due %v; want pending and due", status, due)
	}
}
