// Claims of deliveries: several claimers at once, leases that lapse, secrets that no longer open.

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

// Two claimers at once never take the same delivery, and a lease that lapses (its node died)
// lets another take it, the same delivery id.
func TestWebhookClaimsDoNotOverlap(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 10_000)
	newHook(t, st, acct, 1, "message.sent")
	sent(t, st, acct, 40, "a")
	seen := map[uuid.UUID]int{}
	got := make(chan []persistence.WebhookDelivery, 2)
	for i := 0; i < 2; i++ {
		go func() {
			var all []persistence.WebhookDelivery
			for j := 0; j < 20; j++ {
				ds, err := st.ClaimWebhookDeliveries(ctx, persistence.WebhookClaim{Limit: 3, Lanes: 100, Lease: time.Minute})
				if err != nil {
					t.Error(err)
				}
				all = append(all, ds...)
			}
			got <- all
		}()
	}
	for i := 0; i < 2; i++ {
		for _, d := range <-got {
			seen[d.ID]++
			if seen[d.ID] > 1 {
				t.Errorf("delivery %s claimed twice", d.ID)
			}
		}
	}
	if len(seen) != 40 {
		t.Errorf("%d deliveries claimed; want 40", len(seen))
	}
	// A lapsed lease: due again, same id.
	sent(t, st, acct, 1, "b")
	d := claim(t, st, 1, 100)
	if len(d) != 1 {
		t.Fatalf("claimed %d", len(d))
	}
	if _, err := st.ClaimWebhookDeliveries(ctx, persistence.WebhookClaim{Limit: 5, Lanes: 100, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	expireLeases(t, url)
	again := claim(t, st, 100, 100)
	if len(again) != 41 {
		t.Fatalf("%d due after the leases lapsed; want all 41", len(again))
	}
	var taken persistence.WebhookDelivery
	for _, x := range again {
		if x.ID == d[0].ID {
			taken = x
		}
	}
	if taken.ID != d[0].ID {
		t.Fatalf("the lapsed delivery %s was not claimed again", d[0].ID)
	}
	// The first claimant's late outcome is dropped; the second's is recorded.
	late := persistence.WebhookAttempt{DeliveryID: d[0].ID, EndpointID: d[0].EndpointID, LeaseUntil: d[0].LeaseUntil,
		At: time.Now(), StatusCode: 500, Error: "HTTP 500", RetryAt: time.Now().Add(time.Hour)}
	if _, err := st.WebhookFailed(ctx, late, 0); !errors.Is(err, persistence.ErrLeaseLost) {
		t.Fatalf("an outcome under a lapsed lease: %v; want ErrLeaseLost", err)
	}
	if err := recordSuccess(ctx, st, taken, 204); err != nil {
		t.Fatalf("the new claimant's outcome: %v", err)
	}
	if err := recordSuccess(ctx, st, taken, 204); !errors.Is(err, persistence.ErrLeaseLost) {
		t.Errorf("an outcome recorded twice: %v; want ErrLeaseLost", err)
	}
	var attempts int
	var status string
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, `SELECT attempts, status FROM webhook_deliveries WHERE id = $1`, taken.ID).Scan(&attempts, &status); err != nil {
		t.Fatal(err)
	}
	if attempts != 1 || status != "succeeded" {
		t.Errorf("delivery after a lost lease: %d attempts, %s; want 1, succeeded", attempts, status)
	}
}

// expireLeases makes every lease lapse, as if the nodes holding them had died.
func expireLeases(t *testing.T, url string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE webhook_deliveries SET lease_until = now() - interval '1 second'
		WHERE lease_until IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
}

// An endpoint whose secret no longer opens (the key changed) holds up no other endpoint, whether
// its deliveries are being formed or are due again.
func TestWebhookSecretThatDoesNotOpen(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	good, bad := fundedAccount(t, st, 10_000), fundedAccount(t, st, 10_000)
	newHook(t, st, good, 10, "message.sent")
	broken := newHook(t, st, bad, 10, "message.sent")
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	spoil := func() {
		t.Helper()
		if _, err := conn.Exec(ctx, `UPDATE webhook_endpoints SET secret = '\x00ff'::bytea WHERE id = $1`, broken.ID); err != nil {
			t.Fatal(err)
		}
	}
	sent(t, st, bad, 5, "a")
	sent(t, st, good, 5, "a")
	spoil()
	ds, err := st.ClaimWebhookDeliveries(ctx, persistence.WebhookClaim{Limit: 10, Lanes: 4, Lease: time.Minute})
	if err == nil || len(ds) != 1 || ds[0].AccountID != good {
		t.Fatalf("forming beside a spoilt secret: %d deliveries, %v; want the good endpoint's one and an error", len(ds), err)
	}
	// Both formed before the secret was spoilt; both due again once their leases lapse.
	sent(t, st, bad, 5, "b")
	if _, err := conn.Exec(ctx, `UPDATE webhook_endpoints SET secret = (SELECT secret FROM webhook_endpoints WHERE account_id = $1)
		WHERE id = $2`, good, broken.ID); err != nil {
		t.Fatal(err)
	}
	if ds := claim(t, st, 10, 4); len(ds) != 1 || ds[0].AccountID != bad {
		t.Fatalf("formed %d deliveries; want the other endpoint's one", len(ds))
	}
	spoil()
	expireLeases(t, url)
	ds, err = st.ClaimWebhookDeliveries(ctx, persistence.WebhookClaim{Limit: 10, Lanes: 4, Lease: time.Minute})
	if !errors.Is(err, persistence.ErrSealed) || len(ds) != 1 || ds[0].AccountID != good {
		t.Fatalf("due beside a spoilt secret: %d deliveries, %v; want the good endpoint's one and ErrSealed", len(ds), err)
	}
}
