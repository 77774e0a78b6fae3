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

// whileUncommitted runs write while another transaction holds what the SQL statements (each
// with the endpoint's id as $1) changed, uncommitted; it commits once write waits on a lock or
// has finished, then waits for write. It returns a connection to look with.
func whileUncommitted(t *testing.T, url string, endpoint uuid.UUID, write func(), sql ...string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	watch, locker := connect(t, url), connect(t, url)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, q := range sql {
		if _, err := tx.Exec(ctx, q, endpoint); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		write()
	}()
	waitForLockOrDone(t, watch, done)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	return watch
}

// What enabling an endpoint writes (UpdateWebhook).
const (
	enableEndpoint  = `UPDATE webhook_endpoints SET enabled = true, disabled_reason = NULL WHERE id = $1`
	dueWhenEnabled  = `UPDATE webhook_deliveries SET next_attempt_at = now() WHERE endpoint_id = $1 AND status = 'pending'`
	disableEndpoint = `UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'the endpoint answered 410 Gone' WHERE id = $1`
)

// disabledHook is an account's endpoint, disabled.
func disabledHook(t *testing.T, st *persistence.Store, acct uuid.UUID) persistence.Webhook {
	t.Helper()
	w := newHook(t, st, acct, 1, "message.sent")
	off := false
	if _, err := st.UpdateWebhook(context.Background(), acct, w.ID, persistence.WebhookPatch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	return w
}

// An endpoint disabled (a 410) while a PATCH of its description is under way stays disabled:
// the PATCH writes back what it finds under the row's lock, not what it read before.
func TestWebhookPatchDuringDisable(t *testing.T) {
	st, url := pgtest.NewStore(t)
	acct := fundedAccount(t, st, 10_000)
	w := newHook(t, st, acct, 1, "message.sent")
	desc := "renamed"
	var got persistence.Webhook
	var err error
	watch := whileUncommitted(t, url, w.ID, func() {
		got, err = st.UpdateWebhook(context.Background(), acct, w.ID, persistence.WebhookPatch{Description: &desc})
	}, disableEndpoint)
	if err != nil {
		t.Fatal(err)
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
	newHook(t, st, acct, 1, "message.sent") // the delivery's endpoint is the next
	sent(t, st, acct, 1, "e")
	d := claim(t, st, 1, 8)
	if len(d) != 1 {
		t.Fatalf("claimed %d; want 1", len(d))
	}
	final := persistence.WebhookAttempt{DeliveryID: d[0].ID, EndpointID: d[0].EndpointID, LeaseUntil: d[0].LeaseUntil,
		At: time.Now(), StatusCode: 500, Error: "HTTP 500"} // no RetryAt: the delivery has failed
	if _, err := st.WebhookFailed(ctx, final, 0); err != nil {
		t.Fatal(err)
	}
	off := false
	if _, err := st.UpdateWebhook(ctx, acct, d[0].EndpointID, persistence.WebhookPatch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	var err error
	watch := whileUncommitted(t, url, d[0].EndpointID, func() {
		err = st.RetryWebhookDelivery(ctx, acct, d[0].EndpointID, d[0].ID)
	}, enableEndpoint, dueWhenEnabled)
	if err != nil {
		t.Fatal(err)
	}
	if status, due := deliveryState(t, watch, d[0].ID); status != "pending" || due == nil {
		t.Errorf("retried during the enable: %s due %v; want pending and due", status, due)
	}
}

// A test event queued while its endpoint is being enabled is due once both commit.
func TestWebhookTestDuringEnable(t *testing.T) {
	st, url := pgtest.NewStore(t)
	acct := fundedAccount(t, st, 10_000)
	w := disabledHook(t, st, acct)
	var id uuid.UUID
	var err error
	watch := whileUncommitted(t, url, w.ID, func() {
		id, err = st.TestWebhook(context.Background(), acct, w.ID)
	}, enableEndpoint, dueWhenEnabled)
	if err != nil {
		t.Fatal(err)
	}
	if status, due := deliveryState(t, watch, id); status != "pending" || due == nil {
		t.Errorf("a test event queued during the enable: %s due %v; want pending and due", status, due)
	}
}
