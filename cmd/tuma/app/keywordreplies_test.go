package app_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
)

// keywordReplies are a's messages of source keyword to phone (E.164), newest first.
func (n *node) keywordReplies(a account, phone string) []map[string]any {
	n.t.Helper()
	var out []map[string]any
	for _, m := range n.do("GET", "/sms/messages?page_size=100", nil, key(a)...).json(n.t)["data"].([]any) {
		if m := m.(map[string]any); m["source"] == "keyword" && m["recipient"] == phone {
			out = append(out, m)
		}
	}
	return out
}

// deliveredReply waits for the one confirmation to phone that says text to be delivered, and
// returns it.
func (n *node) deliveredReply(a account, phone, text string) map[string]any {
	n.t.Helper()
	var got map[string]any
	waitFor(n.t, 20*time.Second, "the confirmation "+text+" delivered to "+phone, func() bool {
		for _, m := range n.keywordReplies(a, phone) {
			if m["message"] == text && m["status"] == "delivered" {
				got = m
			}
		}
		return got != nil
	})
	return got
}

// A STOP from the simulator is confirmed once that day by a free SMS from the account's own
// sender, delivered to the number that sent it although it is now suppressed; the very next
// send still leaves the number out, a second STOP is not answered again, START is confirmed
// too, and an account with only the shared sender answers nothing.
func TestKeywordRepliesAreSentOnceFree(t *testing.T) {
	n := startNode(t, withEnv(fastSims, "TUMA_RATE_LIMIT_RPS", "0"))
	a := n.register("keyword-reply@example.com")
	n.approveDefaultSender(a, "ACME", "all")
	n.credit(a, "100")
	shared := n.register("keyword-shared@example.com")
	for acct, number := range map[string]string{a.ID: "22384", shared.ID: "22385"} {
		if r := n.do("POST", "/admin/accounts/"+acct+"/inbound-numbers", map[string]any{"number": number, "network": "safaricom"}, adminAuth()...); r.Status != 201 {
			t.Fatalf("assign = %d %s", r.Status, r.Body)
		}
	}
	before := n.balance(a)

	// STOP from a number no contact has; the very next request leaves it out.
	n.mo("0712345678", "22384", "STOP")
	r := n.send(a, map[string]any{"recipients": []string{"0712345678", "0712999999"}, "message": "hi"})
	if r.Status != 202 || r.json(t)["suppressed_count"] != 1.0 || r.json(t)["recipients_count"] != 1.0 {
		t.Fatalf("send right after STOP = %d %s; want the number left out", r.Status, r.Body)
	}
	sendCost := r.json(t)["cost_kes"].(float64)
	m := n.deliveredReply(a, "+254712345678", "You will no longer receive messages from Acme Ltd. Reply START to subscribe again.")
	if m["sender_id"] != "ACME" || m["cost_kes"] != 0.0 || m["parts"] != 1.0 || m["encoding"] != "gsm7" || m["network"] != "safaricom" {
		t.Errorf("STOP's confirmation = %v; want from ACME, free, one GSM-7 part", m)
	}
	if b := n.balance(a); b != before-sendCost {
		t.Errorf("balance %v; want %v less the send's %v only: the confirmation is free", b, before, sendCost)
	}

	// Again the same day, in Swahili too: written with the message or not at all, so there is
	// nothing to wait for.
	n.mo("0712345678", "22384", "stop")
	n.mo("0712345678", "22384", "ACHA")
	if got := n.sqlInt(`SELECT count(*) FROM jobs WHERE account_id = $1 AND source = 'keyword'`, a.ID); got != 1 {
		t.Errorf("%d confirmations after three opt-outs the same day; want 1", got)
	}

	n.mo("0712345678", "22384", "START")
	n.deliveredReply(a, "+254712345678", "You are subscribed again to messages from Acme Ltd. Reply STOP to stop.")
	if r := n.send(a, map[string]any{"recipients": []string{"0712345678"}, "message": "hi"}); r.Status != 202 || r.json(t)["suppressed_count"] != 0.0 {
		t.Errorf("send after START = %d %s; want the number included", r.Status, r.Body)
	}
	if got := len(n.keywordReplies(a, "+254712345678")); got != 2 {
		t.Errorf("%d confirmations to +254712345678; want the STOP's and the START's", got)
	}
	st := n.waitDone(a, 4) // two sends and two confirmations, counted like any message
	if st["delivered"] != 4.0 {
		t.Errorf("stats %v; want 4 delivered", st)
	}

	// Only the shared sender: suppressed, never answered.
	n.mo("0712345678", "22385", "STOP")
	if r := n.send(shared, map[string]any{"recipients": []string{"0712345678"}, "message": "hi"}); r.Status != 422 {
		t.Errorf("send to the only, suppressed, number = %d %s; want 422", r.Status, r.Body)
	}
	if got := n.sqlInt(`SELECT count(*) FROM jobs WHERE account_id = $1`, shared.ID); got != 0 {
		t.Errorf("%d jobs of the account with only the shared sender; want none", got)
	}
}

// A confirmation committed with its STOP whose hand-off to the tenant never happened (the
// node stopped in between) is sent by the next node that runs, once.
func TestKeywordReplyResumedAfterLostHandOff(t *testing.T) {
	env := withEnv(fastSims)
	n := startNode(t, env)
	env["TUMA_DATABASE_URL"] = n.dbURL
	a := n.register("keyword-resume@example.com")
	n.approveDefaultSender(a, "ACME", "all")
	if r := n.do("POST", "/admin/accounts/"+a.ID+"/inbound-numbers", map[string]any{"number": "22384", "network": "safaricom"}, adminAuth()...); r.Status != 201 {
		t.Fatalf("assign = %d %s", r.Status, r.Body)
	}
	n.stop()

	// The store's half of receiving a STOP, as a node that died right after its commit left it.
	ctx := context.Background()
	st, err := persistence.Open(ctx, persistence.Options{URL: n.dbURL}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.ReceiveInbound(ctx, persistence.NewInbound{From: 712345678, To: "22384", Network: carriers.Safaricom, Text: "Sitisha"})
	st.Close()
	if err != nil || !res.Suppressed || res.ReplyJobID == uuid.Nil {
		t.Fatalf("receive SITISHA = %+v, %v; want it suppressed and its confirmation written", res, err)
	}

	n2 := startNode(t, env)
	m := n2.deliveredReply(a, "+254712345678", "Hutapokea tena ujumbe kutoka kwa Acme Ltd. Tuma ANZA kujiunga tena.")
	if m["job_id"] != res.ReplyJobID.String() || m["cost_kes"] != 0.0 || m["sender_id"] != "ACME" {
		t.Errorf("resumed confirmation = %v; want job %s, free, from ACME", m, res.ReplyJobID)
	}
	n2.waitDone(a, 1)
	if got := n2.sqlInt(`SELECT count(*) FROM messages WHERE account_id = $1`, a.ID); got != 1 {
		t.Errorf("%d messages; want the one confirmation", got)
	}
}
