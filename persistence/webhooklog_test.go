// Retention of delivered events and their attempts, and reading a delivery back.

package persistence_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

func TestWebhookRetention(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 10_000)
	w := newHook(t, st, acct, 1, "message.sent")
	sent(t, st, acct, 3, "a")
	ds := claim(t, st, 10, 10)
	for _, d := range ds[:2] {
		if err := recordSuccess(ctx, st, d, 200); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing is old enough yet.
	if n, err := st.PruneWebhooks(ctx, time.Now().Add(-30*24*time.Hour), 100); err != nil || n != 0 {
		t.Fatalf("pruned %d, %v; want nothing younger than 30 days", n, err)
	}
	// Everything finished is, a day from now (one at a time); the pending one stays.
	var total int64
	for {
		n, err := st.PruneWebhooks(ctx, time.Now().Add(time.Hour), 1)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		total += n
	}
	left, _ := st.WebhookDeliveries(ctx, acct, w.ID, "", persistence.Page{Size: 10})
	if total != 2 || len(left) != 1 || left[0].Status != persistence.DeliveryPending {
		t.Errorf("pruned %d, left %+v; want the 2 succeeded gone and the pending one kept", total, left)
	}
}

// Deliveries formed together, one of message events only and one with an account event, read
// back after their claim lapses: each has its events, the data of the event that has any (a
// delivery of message events stores none), and none of the other's.
func TestWebhookDeliveriesKeepTheirData(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 10_000)
	newHook(t, st, acct, 2, "message.sent", "wallet.low_balance")
	msgs := sent(t, st, acct, 3, "t")
	if ok, err := st.LowBalanceAlert(ctx, acct, persistence.NewNotification{Type: "low_balance", Title: "Low", Message: "Low"}); err != nil || !ok {
		t.Fatalf("low balance alert: %v, %v", ok, err)
	}
	formed := claim(t, st, 10, 4)
	if len(formed) != 2 || types(formed[0]) != "sent,sent" || types(formed[1]) != "sent,wallet.low_balance" {
		t.Fatalf("formed %v; want [sent sent] [sent wallet.low_balance]", formed)
	}
	expireLeases(t, url)
	again := claim(t, st, 10, 4)
	if len(again) != 2 {
		t.Fatalf("claimed %d again; want both", len(again))
	}
	byID := map[uuid.UUID]persistence.WebhookDelivery{again[0].ID: again[0], again[1].ID: again[1]}
	for i, f := range formed {
		got, ok := byID[f.ID]
		if !ok || len(got.Events) != len(f.Events) {
			t.Fatalf("delivery %d read back as %+v; want its %d events", i, got, len(f.Events))
		}
		for k, e := range got.Events {
			if e.Seq != f.Events[k].Seq || e.Type != f.Events[k].Type || e.MessageID != f.Events[k].MessageID {
				t.Errorf("delivery %d event %d read back as %+v; want %+v", i, k, e, f.Events[k])
			}
			if hasData := e.Data != nil; hasData != (e.Type == persistence.EventLowBalance) {
				t.Errorf("delivery %d event %d (%s) data %s", i, k, e.Type, e.Data)
			}
		}
	}
	if low := byID[formed[1].ID].Events[1]; !strings.Contains(string(low.Data), `"balance_kes"`) {
		t.Errorf("low balance event data %s; want its balance", low.Data)
	}
	if got := byID[formed[0].ID].Events; got[0].MessageID != msgs[0] || got[1].MessageID != msgs[1] {
		t.Errorf("first delivery's messages %v; want %v", got, msgs[:2])
	}
}

// A delivery reads back with its attempts, newest first, each as it was recorded; another
// endpoint's or another account's delivery is ErrNotFound.
func TestWebhookDeliveryAttempts(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 10_000)
	w := newHook(t, st, acct, 1, "message.sent")
	other := newHook(t, st, acct, 1, "message.sent")
	sent(t, st, acct, 1, "a")
	ds := claim(t, st, 10, 10)
	var d persistence.WebhookDelivery
	for _, x := range ds {
		if x.EndpointID == w.ID {
			d = x
		}
	}
	if d.ID == uuid.Nil {
		t.Fatalf("no delivery of the endpoint in %+v", ds)
	}
	if _, got, err := st.WebhookDelivery(ctx, acct, w.ID, d.ID); err != nil || len(got) != 0 {
		t.Fatalf("before any attempt: %+v, %v", got, err)
	}
	retry := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	if _, err := st.WebhookFailed(ctx, persistence.WebhookAttempt{DeliveryID: d.ID, LeaseUntil: d.LeaseUntil, EndpointID: w.ID,
		At: time.Now(), Duration: 1500 * time.Millisecond, StatusCode: 503, Error: "HTTP 503", RetryAt: retry}, 0); err != nil {
		t.Fatal(err)
	}
	if err := st.RetryWebhookDelivery(ctx, acct, w.ID, d.ID); err != nil {
		t.Fatal(err)
	}
	again := claim(t, st, 10, 10)
	if len(again) != 1 || again[0].ID != d.ID {
		t.Fatalf("claimed %+v after the retry; want %s", again, d.ID)
	}
	if err := recordSuccess(ctx, st, again[0], 204); err != nil {
		t.Fatal(err)
	}
	rec, got, err := st.WebhookDelivery(ctx, acct, w.ID, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.ID != d.ID || rec.Status != persistence.DeliverySucceeded || rec.Attempts != 2 || len(rec.EventIDs) != 1 {
		t.Errorf("the delivery reads %+v; want it succeeded after 2 attempts, with its event", rec)
	}
	if len(got) != 2 {
		t.Fatalf("attempts %+v; want 2", got)
	}
	second, first := got[0], got[1]
	if second.Attempt != 2 || second.StatusCode == nil || *second.StatusCode != 204 || second.Error != nil || second.NextAttemptAt != nil {
		t.Errorf("the second attempt reads %+v; want 204, no error, no retry", second)
	}
	if first.Attempt != 1 || first.StatusCode == nil || *first.StatusCode != 503 || first.Error == nil || *first.Error != "HTTP 503" ||
		first.Duration != 1500*time.Millisecond || first.NextAttemptAt == nil || !first.NextAttemptAt.Equal(retry) {
		t.Errorf("the first attempt reads %+v; want 503 after 1.5 s, retry due at %v", first, retry)
	}

	stranger := fundedAccount(t, st, 10_000)
	for name, try := range map[string]func() error{
		"another endpoint": func() error { _, _, err := st.WebhookDelivery(ctx, acct, other.ID, d.ID); return err },
		"another account":  func() error { _, _, err := st.WebhookDelivery(ctx, stranger, w.ID, d.ID); return err },
	} {
		if err := try(); !errors.Is(err, persistence.ErrNotFound) {
			t.Errorf("%s: %v; want ErrNotFound", name, err)
		}
	}
}
