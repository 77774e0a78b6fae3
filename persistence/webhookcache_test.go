package persistence_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/persistence/pgtest"
)

// A delivery renders a message from the node's memory of its own flushes when the memory is as
// far along as the event, and reads it otherwise: another node's flush, an evicted message,
// another account, a provider id that came late. Each message's recipient is changed behind
// the store's back after the flushes, so the recipient a read shows says where it came from.
func TestWebhookMessagesFromTheFlushesMemory(t *testing.T) {
	_, url := pgtest.NewStore(t)
	ctx := context.Background()
	open := func(cache int) *persistence.Store {
		s, err := persistence.Open(ctx, persistence.Options{URL: url, WebhookCache: cache}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	st, other := open(3), open(0)
	acct, stranger := fundedAccount(t, st, 10_000), fundedAccount(t, st, 10_000)
	newHook(t, st, acct, 100, "message.sent", "message.delivered", "message.failed")

	ref := "order-77"
	jobID, ids := acceptMessages(t, st, acct, 5, &ref)
	flush := func(s *persistence.Store, b persistence.ReceiptBatch) {
		t.Helper()
		if _, err := s.FlushReceipts(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	sub := func(i int, pid string, late bool) persistence.Submitted {
		return persistence.Submitted{AccountID: acct, MessageID: ids[i], ProviderID: pid, Network: carriers.Safaricom, At: time.Now(), Late: late}
	}
	rcpt := func(i int, delivered bool) persistence.Receipt {
		return persistence.Receipt{ProviderID: fmt.Sprintf("c-%d", i), Network: carriers.Safaricom, Delivered: delivered,
			ProviderStatus: map[bool]string{true: "DELIVRD", false: "UNDELIV"}[delivered], At: time.Now()}
	}
	// 0 and 1 sent here; 0 delivered here, 1 on the other node. 2 sent with no provider id, which
	// comes late. 3 and 4, sent here last, push the oldest two out of the three places.
	flush(st, persistence.ReceiptBatch{Submitted: []persistence.Submitted{sub(0, "c-0", false), sub(1, "c-1", false), sub(2, "", false)}})
	flush(st, persistence.ReceiptBatch{Receipts: []persistence.Receipt{rcpt(0, true)}})
	flush(other, persistence.ReceiptBatch{Receipts: []persistence.Receipt{rcpt(1, false)}})
	flush(st, persistence.ReceiptBatch{Submitted: []persistence.Submitted{sub(2, "c-2", true)}})
	before, err := st.WebhookMessages(ctx, acct, ids)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE messages SET recipient = '+254799999999' WHERE job_id = $1`, jobID); err != nil {
		t.Fatal(err)
	}
	ev := func(i int, typ persistence.EventType) persistence.WebhookEvent {
		return persistence.WebhookEvent{Type: typ, MessageID: ids[i]}
	}
	check := func(what string, e persistence.WebhookEvent, remembered bool) {
		t.Helper()
		got, err := st.WebhookEventMessages(ctx, acct, []persistence.WebhookEvent{e})
		if err != nil {
			t.Fatal(err)
		}
		m := got[0]
		want := before[e.MessageID]
		if !remembered {
			want.Recipient = "+254799999999"
		}
		if show(m) != show(want) {
			t.Errorf("%s: %+v\nwant %+v", what, m, want)
		}
		if m.Reference == nil || *m.Reference != ref {
			t.Errorf("%s: reference %v, want %s", what, m.Reference, ref)
		}
	}
	check("message.sent of one delivered here since", ev(0, persistence.EventMessageSent), true)
	check("message.delivered written here", ev(0, persistence.EventMessageDelivered), true)
	check("message.failed written on another node", ev(1, persistence.EventMessageFailed), false)
	if got, err := st.WebhookEventMessages(ctx, acct, []persistence.WebhookEvent{ev(1, persistence.EventMessageSent)}); err != nil ||
		got[0].Recipient != "+254700000001" || got[0].Status != persistence.MessageSent {
		// Its message.sent renders the same from either (a sent event shows "sent").
		t.Errorf("message.sent of that one: %+v (%v); want it from memory, as sent", got, err)
	}
	check("message.sent whose provider id came late", ev(2, persistence.EventMessageSent), false)

	flush(st, persistence.ReceiptBatch{Submitted: []persistence.Submitted{sub(3, "c-3", false), sub(4, "c-4", false)}})
	if _, err := conn.Exec(ctx, `UPDATE messages SET recipient = '+254788888888' WHERE id = ANY($1)`, ids[3:]); err != nil {
		t.Fatal(err)
	}
	check("message.sent of one pushed out by newer ones", ev(0, persistence.EventMessageSent), false)
	if got, err := st.WebhookEventMessages(ctx, stranger, []persistence.WebhookEvent{ev(3, persistence.EventMessageSent)}); err != nil || len(got) != 1 || got[0].ID != uuid.Nil {
		t.Errorf("another account reads %+v (%v); want nothing", got, err)
	}
	after, err := st.WebhookEventMessages(ctx, acct, []persistence.WebhookEvent{ev(3, persistence.EventMessageSent),
		ev(4, persistence.EventMessageSent), ev(4, persistence.EventMessageDelivered)})
	if err != nil {
		t.Fatal(err)
	}
	if m := after[0]; m.Recipient != "+254799999999" || m.Status != persistence.MessageSent || m.ProviderMessageID == nil || *m.ProviderMessageID != "c-3" {
		t.Errorf("message 3 %+v; want it as its flush left it", m)
	}
	if m, d := after[1], after[2]; m.Recipient != "+254788888888" || d.Recipient != m.Recipient || d.ID != m.ID {
		t.Errorf("message 4 with a final event the memory has not seen: %+v; want it read", m)
	}
}

// acceptMessages accepts a job of n messages for the account, with the reference given; it
// returns the job's id and the messages'.
func acceptMessages(t *testing.T, st *persistence.Store, acct uuid.UUID, n int, ref *string) (uuid.UUID, []uuid.UUID) {
	t.Helper()
	j := job(acct, int64(n))
	j.Recipients, j.Units, j.CostCents, j.Inline, j.Reference = n, int64(n), int64(n), nil, ref
	var ids []uuid.UUID
	for i := range n {
		id := persistence.NewID()
		j.Inline = append(j.Inline, persistence.NewMessage{ID: id, Recipient: fmt.Sprintf("+2547%08d", i),
			Network: carriers.Safaricom, Sender: "TUMA", Parts: 1, Encoding: carriers.GSM7, CostCents: 1})
		ids = append(ids, id)
	}
	j.NetworkCounts[carriers.Safaricom] = n
	if res, err := st.AcceptJobs(context.Background(), []persistence.NewJob{j}); err != nil || res[0].Err != nil {
		t.Fatalf("accept: %v %+v", err, res)
	}
	return j.ID, ids
}

// show is a message's fields, pointers followed, times in UTC.
func show(m persistence.MessageEventData) string {
	opt := func(v any) string {
		switch v := v.(type) {
		case *string:
			if v != nil {
				return *v
			}
		case *uuid.UUID:
			if v != nil {
				return v.String()
			}
		case uuid.UUID:
			if v != uuid.Nil {
				return v.String()
			}
		case time.Time:
			if !v.IsZero() {
				return v.UTC().Format(time.RFC3339Nano)
			}
		}
		return "-"
	}
	return fmt.Sprintln(m.ID, m.JobID, opt(m.CampaignID), opt(m.Reference), m.Recipient, m.Network, m.Sender, m.Status,
		m.ProviderStatus, opt(m.ProviderMessageID), m.Parts, m.CostCents, opt(m.SentAt), opt(m.DeliveredAt), opt(m.FailedAt))
}

// Every status write the flushes make is remembered (a receipt keyed by message, a failure at
// submission), for accounts that want message events only: another account's messages, in the
// same flushes, are read.
func TestWebhookMessagesRememberedByEveryFlushPath(t *testing.T) {
	_, url := pgtest.NewStore(t)
	ctx := context.Background()
	st, err := persistence.Open(ctx, persistence.Options{URL: url, WebhookCache: 100}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	acct, quiet, other := fundedAccount(t, st, 10_000), fundedAccount(t, st, 10_000), fundedAccount(t, st, 10_000)
	newHook(t, st, acct, 100, "message.sent", "message.delivered", "message.failed")
	newHook(t, st, other, 100, "wallet.low_balance") // an endpoint, but for no message event
	_, mine := acceptMessages(t, st, acct, 2, nil)
	_, theirs := acceptMessages(t, st, quiet, 1, nil)
	_, others := acceptMessages(t, st, other, 1, nil)
	now := time.Now()
	var b persistence.ReceiptBatch
	for i, m := range []struct{ acct, id uuid.UUID }{{acct, mine[0]}, {quiet, theirs[0]}, {other, others[0]}} {
		b.Submitted = append(b.Submitted, persistence.Submitted{AccountID: m.acct, MessageID: m.id, ProviderID: fmt.Sprintf("k-%d", i),
			Network: carriers.Safaricom, At: now})
	}
	b.Failed = []persistence.Failure{{AccountID: acct, MessageID: mine[1], ProviderStatus: "REJECTD", Error: "invalid destination", At: now}}
	if _, err := st.FlushReceipts(ctx, b); err != nil {
		t.Fatal(err)
	}
	keyed := persistence.ReceiptBatch{}
	for i, m := range []struct{ acct, id uuid.UUID }{{acct, mine[0]}, {quiet, theirs[0]}, {other, others[0]}} {
		keyed.Receipts = append(keyed.Receipts, persistence.Receipt{ProviderID: fmt.Sprintf("k-%d", i), Network: carriers.Safaricom,
			Delivered: true, ProviderStatus: "DELIVRD", At: now, AccountID: m.acct, MessageID: m.id})
	}
	if _, err := st.FlushReceipts(ctx, keyed); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE messages SET recipient = '+254799999999'`); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		what       string
		acct       uuid.UUID
		e          persistence.WebhookEvent
		remembered bool
	}{
		{"delivered by a receipt keyed by message", acct, persistence.WebhookEvent{Type: persistence.EventMessageDelivered, MessageID: mine[0]}, true},
		{"failed at submission", acct, persistence.WebhookEvent{Type: persistence.EventMessageFailed, MessageID: mine[1]}, true},
		{"an account without an endpoint", quiet, persistence.WebhookEvent{Type: persistence.EventMessageDelivered, MessageID: theirs[0]}, false},
		{"an account with no message event subscribed", other, persistence.WebhookEvent{Type: persistence.EventMessageDelivered, MessageID: others[0]}, false},
	} {
		got, err := st.WebhookEventMessages(ctx, tt.acct, []persistence.WebhookEvent{tt.e})
		if err != nil {
			t.Fatal(err)
		}
		m := got[0]
		if remembered := m.Recipient != "+254799999999"; remembered != tt.remembered || m.ID != tt.e.MessageID {
			t.Errorf("%s: %+v; want remembered %v", tt.what, m, tt.remembered)
		}
		if tt.remembered {
			read, err := st.WebhookMessages(ctx, tt.acct, []uuid.UUID{tt.e.MessageID})
			if err != nil {
				t.Fatal(err)
			}
			want := read[tt.e.MessageID]
			want.Recipient = m.Recipient
			if show(m) != show(want) {
				t.Errorf("%s: remembered %s, the row reads %s", tt.what, show(m), show(want))
			}
		}
	}
}
