package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

func newHook(t *testing.T, st *persistence.Store, acct uuid.UUID, batch int, events ...string) persistence.Webhook {
	t.Helper()
	w, secret, err := st.CreateWebhook(context.Background(), persistence.NewWebhook{AccountID: acct, URL: "https://example.com/hook",
		Events: events, BatchSize: batch})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "whsec_") || len(secret) != len("whsec_")+44 {
		t.Fatalf("secret %q; want whsec_ and 32 bytes in base64", secret)
	}
	return w
}

// sent accepts a job of n messages for the account and records them sent (provider ids
// p<k>-<i>); it returns the message ids.
func sent(t *testing.T, st *persistence.Store, acct uuid.UUID, n int, tag string) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	j := job(acct, int64(n))
	j.Recipients, j.Units, j.CostCents, j.Inline = n, int64(n), int64(n), nil
	for i := 0; i < n; i++ {
		j.Inline = append(j.Inline, persistence.NewMessage{ID: persistence.NewID(), Recipient: fmt.Sprintf("+2547%08d", i),
			Network: carriers.Safaricom, Sender: "TUMA", Parts: 1, Encoding: carriers.GSM7, CostCents: 1})
	}
	j.NetworkCounts[carriers.Safaricom] = n
	if res, err := st.AcceptJobs(ctx, []persistence.NewJob{j}); err != nil || res[0].Err != nil {
		t.Fatalf("accept: %v %+v", err, res)
	}
	var subs []persistence.Submitted
	var ids []uuid.UUID
	for i, m := range j.Inline {
		subs = append(subs, persistence.Submitted{AccountID: acct, MessageID: m.ID, ProviderID: fmt.Sprintf("%s-%d", tag, i),
			Network: carriers.Safaricom, At: time.Now()})
		ids = append(ids, m.ID)
	}
	if _, err := st.FlushReceipts(ctx, persistence.ReceiptBatch{Submitted: subs}); err != nil {
		t.Fatal(err)
	}
	return ids
}

func receipts(t *testing.T, st *persistence.Store, tag string, delivered ...bool) persistence.FlushResult {
	t.Helper()
	var rs []persistence.Receipt
	for i, d := range delivered {
		rs = append(rs, persistence.Receipt{ProviderID: fmt.Sprintf("%s-%d", tag, i), Network: carriers.Safaricom, Delivered: d,
			ProviderStatus: map[bool]string{true: "DELIVRD", false: "UNDELIV"}[d], At: time.Now()})
	}
	res, err := st.FlushReceipts(context.Background(), persistence.ReceiptBatch{Receipts: rs})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func claim(t *testing.T, st *persistence.Store, limit, lanes int) []persistence.WebhookDelivery {
	t.Helper()
	ds, err := st.ClaimWebhookDeliveries(context.Background(), persistence.WebhookClaim{Limit: limit, Lanes: lanes, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// recordSuccess records a delivery's success as a node's recorder does; ErrLeaseLost when its
// claim had lapsed.
func recordSuccess(ctx context.Context, st *persistence.Store, d persistence.WebhookDelivery, code int) error {
	res, err := st.WebhookSucceeded(ctx, []persistence.WebhookAttempt{{DeliveryID: d.ID, EndpointID: d.EndpointID,
		LeaseUntil: d.LeaseUntil, At: time.Now(), StatusCode: code, Succeeded: true}}, nil, persistence.WebhookClaim{})
	if err != nil {
		return err
	}
	if len(res.Lost) > 0 {
		return persistence.ErrLeaseLost
	}
	return nil
}

func types(d persistence.WebhookDelivery) string {
	var out []string
	for _, e := range d.Events {
		out = append(out, strings.TrimPrefix(string(e.Type), "message."))
	}
	return strings.Join(out, ",")
}

func TestWebhookEndpointRules(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	acct, other := fundedAccount(t, st, 0), fundedAccount(t, st, 0)
	var field *persistence.WebhookFieldError
	for _, tt := range []struct {
		in    persistence.NewWebhook
		field string
	}{
		{persistence.NewWebhook{URL: "https://x.example", Events: []string{"message.sent", "nope"}}, "events"},
		{persistence.NewWebhook{URL: "https://x.example", Events: nil}, "events"},
		{persistence.NewWebhook{URL: "https://x.example", Events: []string{"*", "message.sent"}}, "events"},
		{persistence.NewWebhook{URL: "https://x.example", Events: []string{"*"}, BatchSize: 101}, "batch_size"},
		{persistence.NewWebhook{URL: "https://x.example", Events: []string{"*"}, BatchSize: -1}, "batch_size"},
		{persistence.NewWebhook{URL: "", Events: []string{"*"}}, "url"},
	} {
		tt.in.AccountID = acct
		if _, _, err := st.CreateWebhook(ctx, tt.in); !errors.As(err, &field) || field.Field != tt.field {
			t.Errorf("CreateWebhook(%+v) = %v; want a %s field error", tt.in, err, tt.field)
		}
	}
	var first persistence.Webhook
	for i := 0; i < persistence.MaxWebhooks; i++ {
		w := newHook(t, st, acct, 0, "*")
		if i == 0 {
			first = w
		}
		if w.BatchSize != 1 || !w.Enabled || len(w.Events) != 1 {
			t.Fatalf("created %+v; want batch 1, enabled, events [*]", w)
		}
	}
	if _, _, err := st.CreateWebhook(ctx, persistence.NewWebhook{AccountID: acct, URL: "https://x.example", Events: []string{"*"}}); !errors.Is(err, persistence.ErrWebhookLimit) {
		t.Errorf("11th endpoint: %v; want ErrWebhookLimit", err)
	}
	if ws, _ := st.Webhooks(ctx, acct); len(ws) != persistence.MaxWebhooks {
		t.Errorf("%d endpoints stored; want %d (nothing stored by refusals)", len(ws), persistence.MaxWebhooks)
	}
	if _, err := st.WebhookByID(ctx, other, first.ID); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("another account's endpoint: %v; want ErrNotFound", err)
	}
	if _, err := st.UpdateWebhook(ctx, other, first.ID, persistence.WebhookPatch{}); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("patch of another account's endpoint: %v; want ErrNotFound", err)
	}
	if err := st.DeleteWebhook(ctx, other, first.ID); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("delete of another account's endpoint: %v; want ErrNotFound", err)
	}
	if _, err := st.RollWebhookSecret(ctx, other, first.ID, 0); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("roll of another account's endpoint: %v; want ErrNotFound", err)
	}
	off, batch, evs := false, 50, []string{"message.delivered"}
	w, err := st.UpdateWebhook(ctx, acct, first.ID, persistence.WebhookPatch{Enabled: &off, BatchSize: &batch, Events: &evs})
	if err != nil || w.Enabled || w.BatchSize != 50 || w.DisabledReason == nil || w.Events[0] != "message.delivered" {
		t.Errorf("patch = %+v, %v; want disabled with a reason, batch 50, delivered only", w, err)
	}
	bad := 0
	if _, err := st.UpdateWebhook(ctx, acct, first.ID, persistence.WebhookPatch{BatchSize: &bad}); !errors.As(err, &field) {
		t.Errorf("patch batch 0: %v; want a field error", err)
	}
	if _, err := st.RollWebhookSecret(ctx, acct, first.ID, 8*24*time.Hour); !errors.As(err, &field) {
		t.Errorf("roll with 8 days overlap: %v; want a field error", err)
	}
	if err := st.DeleteWebhook(ctx, acct, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.CreateWebhook(ctx, persistence.NewWebhook{AccountID: acct, URL: "https://x.example", Events: []string{"*"}}); err != nil {
		t.Errorf("10th endpoint after a delete: %v", err)
	}
}

// Events are written by the flush that makes the transitions, only for accounts with an
// enabled endpoint subscribed to their type, and an endpoint created through another node's
// store is honoured by this node's very next flush.
func TestWebhookEventsWrittenWithFlushes(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	other, err := persistence.Open(ctx, persistence.Options{URL: url}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	subscribed, quiet := fundedAccount(t, st, 10_000), fundedAccount(t, st, 10_000)

	// No endpoint yet: nothing is written (and this node's view is loaded, at version 0).
	sent(t, st, subscribed, 2, "a")
	if res := receipts(t, st, "a", true, false); res.WebhookEvents != 0 {
		t.Fatalf("%d events without an endpoint", res.WebhookEvents)
	}
	// Created on the other node: this node's next flush writes the events.
	w := newHook(t, other, subscribed, 100, "message.sent", "message.delivered")
	ids := sent(t, st, subscribed, 3, "b")
	sent(t, st, quiet, 3, "q")
	if res := receipts(t, st, "b", true, false, true); res.WebhookEvents != 2 {
		t.Errorf("receipts flush wrote %d events; want 2 (two delivered, the failure is not subscribed)", res.WebhookEvents)
	}
	receipts(t, st, "q", true, true, true)
	ds := claim(t, st, 10, 4)
	if len(ds) != 1 || ds[0].EndpointID != w.ID || types(ds[0]) != "sent,sent,sent,delivered,delivered" {
		t.Fatalf("claimed %d deliveries (%v); want one of the endpoint's 5 events, sent first", len(ds), ds)
	}
	d := ds[0]
	if d.Events[0].MessageID != ids[0] || d.Events[3].MessageID != ids[0] || d.Events[4].MessageID != ids[2] {
		t.Errorf("events %+v; want the messages in order", d.Events)
	}
	if len(d.Secrets) != 1 || !strings.HasPrefix(d.Secrets[0], "whsec_") || d.URL != "https://example.com/hook" {
		t.Errorf("delivery endpoint %q, secrets %v", d.URL, d.Secrets)
	}
	msgs, err := st.WebhookMessages(ctx, subscribed, []uuid.UUID{ids[0], ids[1]})
	if err != nil || len(msgs) != 2 || msgs[ids[0]].Status != persistence.MessageDelivered || msgs[ids[1]].Status != persistence.MessageFailed {
		t.Errorf("messages %+v, %v", msgs, err)
	}
	// Disabled on the other node: this node's flushes stop writing at once.
	off := false
	if _, err := other.UpdateWebhook(ctx, subscribed, w.ID, persistence.WebhookPatch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	sent(t, st, subscribed, 1, "c")
	if res := receipts(t, st, "c", true); res.WebhookEvents != 0 {
		t.Errorf("%d events for a disabled endpoint", res.WebhookEvents)
	}
}

// A message's later events wait while its message.sent is in a pending delivery, and batches
// hold at most batch_size events; a failure opens the endpoint's circuit, a success closes it.
func TestWebhookDeliveryOrderAndCircuit(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 10_000)
	w := newHook(t, st, acct, 2, "message.sent", "message.delivered", "message.failed")
	sent(t, st, acct, 3, "a")
	receipts(t, st, "a", true, true, false)
	// 6 events, batch 2, 4 lanes: [s0 s1] [s2 f2] (f2 after its sent, in the batch) — d0 and
	// d1 wait for the first batch.
	ds := claim(t, st, 10, 4)
	if len(ds) != 2 || types(ds[0]) != "sent,sent" || types(ds[1]) != "sent,failed" {
		t.Fatalf("claimed %d: %v; want [sent sent] [sent failed], the rest held", len(ds), ds)
	}
	if again := claim(t, st, 10, 4); len(again) != 0 {
		t.Fatalf("claimed %d more while the message.sent deliveries are pending", len(again))
	}
	ok := func(d persistence.WebhookDelivery) {
		if err := recordSuccess(ctx, st, d, 204); err != nil {
			t.Fatal(err)
		}
	}
	ok(ds[0])
	ds2 := claim(t, st, 10, 4)
	if len(ds2) != 1 || types(ds2[0]) != "delivered,delivered" {
		t.Fatalf("after the first batch: %v; want [delivered delivered]", ds2)
	}
	// The pending [s2 f2] fails: the circuit opens, nothing new is formed.
	retry := time.Now().Add(time.Hour)
	if _, err := st.WebhookFailed(ctx, persistence.WebhookAttempt{DeliveryID: ds[1].ID, LeaseUntil: ds[1].LeaseUntil, EndpointID: w.ID, At: time.Now(),
		StatusCode: 500, Error: "HTTP 500", RetryAt: retry}, 72*time.Hour); err != nil {
		t.Fatal(err)
	}
	sent(t, st, acct, 1, "b")
	if got := claim(t, st, 10, 4); len(got) != 0 {
		t.Fatalf("claimed %v with the circuit open", got)
	}
	log, err := st.WebhookDeliveries(ctx, acct, w.ID, persistence.DeliveryPending, persistence.Page{Size: 10})
	if err != nil || len(log) != 2 || log[1].ID != ds[1].ID || log[1].Attempts != 1 || *log[1].LastStatusCode != 500 ||
		!log[1].NextAttemptAt.After(time.Now().Add(50*time.Minute)) {
		t.Fatalf("pending log %+v, %v; want the failed delivery waiting an hour, behind the delivered batch", log, err)
	}
	// Another delivery of the endpoint succeeds: the circuit closes, the retry is due at once.
	ok(ds2[0])
	due := claim(t, st, 1, 4)
	if len(due) != 1 || due[0].ID != ds[1].ID || due[0].Attempts != 1 {
		t.Fatalf("due %v; want the failed delivery again, the same id", due)
	}
	ok(due[0])
	rest := claim(t, st, 10, 4)
	if len(rest) != 1 || types(rest[0]) != "sent" {
		t.Fatalf("after the circuit closed: %v; want [sent]", rest)
	}
	// A delivery that has failed for good is retried by hand: due now, one more attempt.
	if _, err := st.WebhookFailed(ctx, persistence.WebhookAttempt{DeliveryID: rest[0].ID, LeaseUntil: rest[0].LeaseUntil, EndpointID: w.ID, At: time.Now(),
		Error: "timeout"}, 72*time.Hour); err != nil {
		t.Fatal(err)
	}
	if failed, _ := st.WebhookDeliveries(ctx, acct, w.ID, persistence.DeliveryFailed, persistence.Page{Size: 10}); len(failed) != 1 {
		t.Fatalf("failed deliveries %+v; want the one given up", failed)
	}
	if err := st.RetryWebhookDelivery(ctx, acct, w.ID, rest[0].ID); err != nil {
		t.Fatal(err)
	}
	if again := claim(t, st, 10, 4); len(again) != 1 || again[0].ID != rest[0].ID || again[0].Attempts != 1 {
		t.Fatalf("after retry: %v; want the failed delivery due", again)
	}
	if err := st.RetryWebhookDelivery(ctx, fundedAccount(t, st, 0), w.ID, rest[0].ID); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("retry by another account: %v; want ErrNotFound", err)
	}
	all, _ := st.WebhookDeliveries(ctx, acct, w.ID, "", persistence.Page{Size: 10})
	if len(all) != 4 || all[0].ID != rest[0].ID {
		t.Errorf("log has %d deliveries, newest %v; want 4, newest first", len(all), all)
	}
	page2, _ := st.WebhookDeliveries(ctx, acct, w.ID, "", persistence.Page{Size: 10, After: &all[1].ID})
	if len(page2) != 2 || page2[0].ID != all[2].ID {
		t.Errorf("page after the second: %v", page2)
	}
}

// A success forms its endpoint's next deliveries in its transaction, under the same rules as a
// claim: the held events wait for their message.sent, lanes bound it, another endpoint's events
// stay in the outbox, a success whose claim lapsed is not recorded, and while a retry waits
// nothing new is formed (the success makes the retry due at once instead).
func TestWebhookSuccessFormsTheNext(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	acct, other := fundedAccount(t, st, 10_000), fundedAccount(t, st, 10_000)
	w := newHook(t, st, acct, 2, "message.sent", "message.delivered")
	newHook(t, st, other, 2, "message.sent")
	sent(t, st, acct, 3, "f")
	receipts(t, st, "f", true, true, true)
	sent(t, st, other, 2, "o")
	// A test event is a delivery due at once: each stands for an attempt under way.
	attempt := func() persistence.WebhookDelivery {
		t.Helper()
		if _, err := st.TestWebhook(ctx, acct, w.ID); err != nil {
			t.Fatal(err)
		}
		ds := claim(t, st, 1, 4)
		if len(ds) != 1 || ds[0].EndpointID != w.ID || ds[0].Events[0].Type != persistence.EventTest {
			t.Fatalf("claimed %v; want the test delivery", ds)
		}
		return ds[0]
	}
	succeed := func(d persistence.WebhookDelivery, limit, lanes int) ([]persistence.WebhookDelivery, error) {
		t.Helper()
		var forms []persistence.WebhookForm
		if limit > 0 {
			forms = []persistence.WebhookForm{{Endpoint: w.ID, Batch: 2, Limit: limit}}
		}
		res, err := st.WebhookSucceeded(ctx, []persistence.WebhookAttempt{{DeliveryID: d.ID, LeaseUntil: d.LeaseUntil, EndpointID: w.ID,
			At: time.Now(), StatusCode: 204, Succeeded: true}}, forms, persistence.WebhookClaim{Lanes: lanes, Lease: time.Minute})
		if err == nil && len(res.Lost) > 0 {
			err = persistence.ErrLeaseLost
		}
		for _, d := range res.Formed {
			if d.EndpointID != w.ID || d.BatchSize != 2 || len(d.Secrets) != 1 || d.AccountID != acct {
				t.Fatalf("formed %+v; want the endpoint's, batch size 2, signed", d)
			}
		}
		return res.Formed, err
	}
	t0 := attempt()
	if ds, err := succeed(t0, 1, 4); err != nil || len(ds) != 1 || types(ds[0]) != "sent,sent" {
		t.Fatalf("limit 1: %v, %v; want [sent sent]", ds, err)
	}
	if ds, err := succeed(t0, 0, 4); !errors.Is(err, persistence.ErrLeaseLost) || len(ds) != 0 {
		t.Fatalf("the same success again: %v, %v; want it lost and nothing formed", ds, err)
	}
	ds, err := succeed(attempt(), 10, 2)
	if err != nil || len(ds) != 1 || types(ds[0]) != "sent,delivered" {
		t.Fatalf("second lane: %v, %v; want [sent delivered] and no more (2 lanes)", ds, err)
	}
	if again, err := succeed(attempt(), 10, 4); err != nil || len(again) != 0 {
		t.Fatalf("formed %v, %v while every message.sent is pending", again, err)
	}
	if _, err := st.WebhookFailed(ctx, persistence.WebhookAttempt{DeliveryID: ds[0].ID, LeaseUntil: ds[0].LeaseUntil, EndpointID: w.ID, At: time.Now(),
		StatusCode: 500, Error: "HTTP 500", RetryAt: time.Now().Add(time.Hour)}, 72*time.Hour); err != nil {
		t.Fatal(err)
	}
	if got, err := succeed(attempt(), 10, 4); err != nil || len(got) != 0 {
		t.Fatalf("formed %v, %v with a retry waiting", got, err)
	}
	// The retry is due at once; the other endpoint's events were left for it.
	got := claim(t, st, 10, 4)
	if len(got) != 2 || got[0].ID != ds[0].ID || got[0].Attempts != 1 || got[1].EndpointID == w.ID || types(got[1]) != "sent,sent" {
		t.Fatalf("claim: %v; want the retry, then the other endpoint's [sent sent]", got)
	}
	log, err := st.WebhookDeliveries(ctx, acct, w.ID, persistence.DeliverySucceeded, persistence.Page{Size: 10})
	if err != nil || len(log) != 4 {
		t.Fatalf("succeeded deliveries: %d, %v; want the four test deliveries", len(log), err)
	}
}

// Successes of several endpoints are recorded in one transaction, each with its attempt in the
// log, one whose claim lapsed left as it was, and each endpoint's next deliveries formed.
func TestWebhookSuccessesTogether(t *testing.T) {
	st, url := pgtest.NewStore(t)
	ctx := context.Background()
	a, b := fundedAccount(t, st, 10_000), fundedAccount(t, st, 10_000)
	wa, wb := newHook(t, st, a, 2, "message.sent"), newHook(t, st, b, 2, "message.sent")
	var tests []persistence.WebhookDelivery
	for _, w := range []persistence.Webhook{wa, wb, wa} {
		if _, err := st.TestWebhook(ctx, w.AccountID, w.ID); err != nil {
			t.Fatal(err)
		}
	}
	tests = claim(t, st, 3, 4)
	if len(tests) != 3 {
		t.Fatalf("claimed %d test deliveries; want 3", len(tests))
	}
	sent(t, st, a, 3, "a")
	sent(t, st, b, 2, "b")
	var as []persistence.WebhookAttempt
	for i, d := range tests {
		lease := d.LeaseUntil
		if i == 2 {
			lease = lease.Add(-time.Second) // another claim's: not this attempt's to record
		}
		as = append(as, persistence.WebhookAttempt{DeliveryID: d.ID, LeaseUntil: lease, EndpointID: d.EndpointID, At: time.Now(),
			Duration: 30 * time.Millisecond, StatusCode: 200, Succeeded: true})
	}
	res, err := st.WebhookSucceeded(ctx, as, []persistence.WebhookForm{{Endpoint: wa.ID, Batch: 2, Limit: 4},
		{Endpoint: wb.ID, Batch: 2, Limit: 4}}, persistence.WebhookClaim{Lanes: 4, Lease: time.Minute})
	if err != nil || res.Unformed != nil {
		t.Fatal(err, res.Unformed)
	}
	if len(res.Lost) != 1 || res.Lost[0] != tests[2].ID {
		t.Fatalf("lost %v; want only %s, whose lease was another's", res.Lost, tests[2].ID)
	}
	perEndpoint := map[uuid.UUID]string{}
	for _, d := range res.Formed {
		perEndpoint[d.EndpointID] += "[" + types(d) + "]"
	}
	if perEndpoint[wa.ID] != "[sent,sent][sent]" || perEndpoint[wb.ID] != "[sent,sent]" {
		t.Fatalf("formed %v; want a's three events in two deliveries and b's two in one", perEndpoint)
	}
	for _, w := range []persistence.Webhook{wa, wb} {
		done, err := st.WebhookDeliveries(ctx, w.AccountID, w.ID, persistence.DeliverySucceeded, persistence.Page{Size: 10})
		if err != nil || len(done) != 1 || done[0].Attempts != 1 || done[0].LastStatusCode == nil || *done[0].LastStatusCode != 200 {
			t.Fatalf("%s succeeded: %+v, %v; want its one test delivery, attempted once with 200", w.ID, done, err)
		}
	}
	if pending, err := st.WebhookDeliveries(ctx, a, wa.ID, persistence.DeliveryPending, persistence.Page{Size: 10}); err != nil ||
		len(pending) != 3 {
		t.Fatalf("a's pending: %d, %v; want the lost test delivery and the two formed", len(pending), err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var logged []string
	if err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(format('%s %s %s %s', delivery_id, attempt, status_code, duration_ms)
		ORDER BY delivery_id), '{}') FROM webhook_attempts`).Scan(&logged); err != nil {
		t.Fatal(err)
	}
	want := []string{tests[0].ID.String() + " 1 200 30", tests[1].ID.String() + " 1 200 30"}
	if tests[1].ID.String() < tests[0].ID.String() {
		want[0], want[1] = want[1], want[0]
	}
	if strings.Join(logged, "|") != strings.Join(want, "|") {
		t.Fatalf("attempts logged %v; want %v", logged, want)
	}
}

// A message's events that must wait for its message.sent stay in the outbox while the events
// after them go: other messages do not wait on it, and its events still go in order.
func TestWebhookHeldEventsLetOthersPass(t *testing.T) {
	st, _ := pgtest.NewStore(t)
	ctx := context.Background()
	acct := fundedAccount(t, st, 10_000)
	newHook(t, st, acct, 2, "message.sent", "message.delivered")
	first := sent(t, st, acct, 2, "h")
	receipts(t, st, "h", true, true)
	later := sent(t, st, acct, 2, "l")
	ds := claim(t, st, 10, 4)
	if len(ds) != 2 || types(ds[0]) != "sent,sent" || types(ds[1]) != "sent,sent" ||
		ds[0].Events[0].MessageID != first[0] || ds[1].Events[0].MessageID != later[0] {
		t.Fatalf("claimed %v; want the first two sent, then the later two past the held delivered", ds)
	}
	if err := recordSuccess(ctx, st, ds[0], 204); err != nil {
		t.Fatal(err)
	}
	next := claim(t, st, 10, 4)
	if len(next) != 1 || types(next[0]) != "delivered,delivered" || next[0].Events[0].MessageID != first[0] ||
		next[0].Events[0].Seq <= ds[0].Events[1].Seq || next[0].Events[0].Seq >= ds[1].Events[0].Seq {
		t.Fatalf("after the first batch: %v; want the held delivered events, their ids between the batches'", next)
	}
	if again := claim(t, st, 10, 4); len(again) != 0 {
		t.Fatalf("claimed %v; the outbox should be empty", again)
	}
	if b, err := st.WebhookBacklog(ctx); err != nil || b.Queued != 0 {
		t.Fatalf("backlog %+v, %v; want nothing queued", b, err)
	}
}
