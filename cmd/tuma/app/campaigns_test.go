package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/cmd/tuma/app"
)

// contact adds a contact to a group.
func (n *node) contact(a account, group, phone, first, last string) {
	n.t.Helper()
	r := n.do("POST", "/contacts", map[string]any{"phone": phone, "first_name": first, "last_name": last, "group_id": group}, key(a)...)
	if r.Status != 201 {
		n.t.Fatalf("create contact %s = %d %s", phone, r.Status, r.Body)
	}
}

// campaignDone waits until the campaign reaches a final status and returns it.
func (n *node) campaignDone(a account, id string) map[string]any {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := n.do("GET", "/campaigns/"+id, nil, key(a)...).json(n.t)
		switch c["status"] {
		case "completed", "failed", "cancelled":
			return c
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("campaign not finished: %v", c)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Merge tags change each contact's text, so its parts: one contact's name keeps it in one
// GSM-7 part, a longer name pushes it into a second, and a name with a letter GSM-7 lacks
// makes it UCS-2. The campaign is charged the sum, exactly, and each message carries its own
// text, parts, campaign and source.
func TestCampaignMergeTagsBilledExactly(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("campaign@example.com")
	n.approveDefaultSender(a, "ACME", "all") // no shared-sender prefix: the text is exactly the template's
	n.credit(a, "100")
	g := n.group(a, "Customers")
	n.contact(a, g, "0712000001", "Jo", "Kamau")           // "Hi Jo! " + 150 = 157 GSM-7: 1 part
	n.contact(a, g, "0712000002", "Bartholomew", "Otieno") // 166 GSM-7: 2 parts
	n.contact(a, g, "0712000003", "Zoë", "Wanjiru")        // 158 UCS-2: 3 parts
	n.contact(a, g, "0712000004", "Gone", "Away")
	n.sql(`UPDATE contacts SET opted_out_at = now() WHERE phone = '+254712000004'`)
	filler := strings.Repeat("x", 150)
	r := n.do("POST", "/campaigns", map[string]any{"name": "November promo", "message": "Hi {first_name}! " + filler, "group_id": g}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("create campaign = %d %s", r.Status, r.Body)
	}
	c := r.json(t)
	if c["status"] != "queued" || c["total_recipients"] != 3.0 || c["cost_kes"] != 3.0 || c["group_name"] != "Customers" {
		t.Fatalf("campaign = %v; want queued, 3 recipients (the opted-out one left out), KES 3.00 (6 parts × 0.50)", c)
	}
	if b := n.balance(a); b != 97 {
		t.Errorf("balance %v after the campaign; want 97.00", b)
	}
	id := c["id"].(string)
	done := n.campaignDone(a, id)
	if done["status"] != "completed" || done["total_delivered"] != 3.0 || done["delivery_rate"] != 100.0 || done["started_at"] == nil || done["completed_at"] == nil {
		t.Fatalf("finished campaign = %v", done)
	}
	msgs := n.do("GET", "/sms/messages?campaign_id="+id, nil, key(a)...).json(t)["data"].([]any)
	parts := map[string]float64{}
	for _, m := range msgs {
		m := m.(map[string]any)
		// Created with an API key: its messages are the API's (CONTRACT §1).
		if m["source"] != "api" || m["campaign_id"] != id || m["sender_id"] != "ACME" {
			t.Errorf("message %v: want source api, campaign_id %s, sender ACME", m, id)
		}
		parts[m["recipient"].(string)] = m["parts"].(float64)
		if name := map[string]string{"+254712000001": "Jo", "+254712000002": "Bartholomew", "+254712000003": "Zoë"}[m["recipient"].(string)]; m["message"] != "Hi "+name+"! "+filler {
			t.Errorf("message to %s = %q; want its contact's name rendered", m["recipient"], m["message"])
		}
	}
	if len(msgs) != 3 || parts["+254712000001"] != 1 || parts["+254712000002"] != 2 || parts["+254712000003"] != 3 {
		t.Errorf("parts by recipient = %v (%d messages); want 1, 2 and 3", parts, len(msgs))
	}
	rep := n.do("GET", "/campaigns/"+id+"/report", nil, key(a)...).json(t)
	if st := rep["stats"].(map[string]any); st["delivered"] != 3.0 || st["pending"] != 0.0 || rep["cost_kes"] != 3.0 {
		t.Errorf("report = %v", rep)
	}
	if got := n.sqlInt(`SELECT count(*) FROM notifications WHERE account_id = $1 AND type = 'campaign_completed'`, a.ID); got != 1 {
		t.Errorf("%d campaign_completed notifications; want 1", got)
	}
	list := n.do("GET", "/campaigns", nil, key(a)...).json2(t)
	if len(list) != 1 || list[0].(map[string]any)["id"] != id {
		t.Errorf("GET /campaigns = %v", list)
	}

	// Reports: today's spend is the campaign's 6 parts; the days are zero-filled and ordered.
	days := n.do("GET", "/reports/spend-trend?period=7", nil, key(a)...).json2(t)
	if len(days) != 7 {
		t.Fatalf("spend trend has %d days; want 7", len(days))
	}
	today := time.Now().UTC().Format(time.DateOnly)
	for i, d := range days {
		d := d.(map[string]any)
		want := time.Now().UTC().AddDate(0, 0, i-6).Format(time.DateOnly)
		if d["date"] != want {
			t.Errorf("day %d is %v; want %s", i, d["date"], want)
		}
		if d["date"] == today && (d["spend_kes"] != 3.0 || d["sms_count"] != 6.0 || d["cost_per_sms"] != 0.5) {
			t.Errorf("today = %v; want KES 3.00 for 6 SMS at 0.50", d)
		} else if d["date"] != today && (d["spend_kes"] != 0.0 || d["sms_count"] != 0.0) {
			t.Errorf("day %v = %v; want zeros", d["date"], d)
		}
	}
	n.do("GET", "/reports/spend-trend?period=14", nil, key(a)...).problem(t, 422, "validation_failed")
	perf := n.do("GET", "/reports/campaign-performance", nil, key(a)...).json2(t)
	if len(perf) != 1 || perf[0].(map[string]any)["cost_per_delivered"] != 1.0 || perf[0].(map[string]any)["delivery_rate"] != 100.0 {
		t.Errorf("campaign performance = %v; want one row, KES 1.00 per delivered", perf)
	}
	groups := n.do("GET", "/reports/group-performance", nil, key(a)...).json2(t)
	if len(groups) != 1 || groups[0].(map[string]any)["name"] != "Customers" || groups[0].(map[string]any)["total_spend"] != 3.0 ||
		groups[0].(map[string]any)["campaign_count"] != 1.0 {
		t.Errorf("group performance = %v", groups)
	}
}

// The daily figures agree with the ledger to the cent, refunds included: failed messages are
// refunded to the day of their send.
func TestSpendTrendAgreesWithLedger(t *testing.T) {
	n := startNode(t, withEnv(fastSims, "TUMA_SIM_OUTCOMES", "delivered=1,undeliverable=1"))
	a := n.register("ledger@example.com")
	n.credit(a, "1000")
	g := n.group(a, "Half")
	for _, p := range numbers(40, 500) {
		n.contact(a, g, p, "Amina", "")
	}
	r := n.do("POST", "/campaigns", map[string]any{"name": "Half", "message": "Habari {first_name}", "group_id": g}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	done := n.campaignDone(a, r.json(t)["id"].(string))
	if done["total_failed"] == 0.0 || done["total_delivered"] == 0.0 {
		t.Fatalf("campaign = %v; want some delivered and some failed", done)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ledger := n.sqlInt(`SELECT coalesce(sum(CASE type WHEN 'debit' THEN amount_cents WHEN 'refund' THEN -amount_cents END), 0)
			FROM wallet_transactions WHERE account_id = $1`, a.ID)
		days := n.sqlInt(`SELECT coalesce(sum(spend_cents), 0) FROM account_days WHERE account_id = $1`, a.ID)
		refunded := n.sqlInt(`SELECT count(*) FROM wallet_transactions WHERE account_id = $1 AND type = 'refund'`, a.ID)
		if ledger == days && refunded > 0 && ledger == int64(done["total_delivered"].(float64))*50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ledger net %d cents, daily figures %d cents, %d refunds; want equal, the delivered messages' cost", ledger, days, refunded)
		}
		time.Sleep(20 * time.Millisecond)
	}
	today := n.do("GET", "/reports/spend-trend", nil, key(a)...).json2(t)[6].(map[string]any)
	if today["spend_kes"] != done["total_delivered"].(float64)*0.5 {
		t.Errorf("today = %v; want the delivered messages' cost", today)
	}
}

func TestCampaignRefusals(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("refusals@example.com")
	other := n.register("other@example.com")
	g := n.group(a, "Empty")
	// Nothing to send to: 400, nothing charged.
	n.do("POST", "/campaigns", map[string]any{"name": "x", "message": "hello", "group_id": g}, key(a)...).problem(t, 400, "group_empty")
	n.contact(a, g, "0712000001", "Jo", "")
	// The balance cannot cover it: 402.
	n.do("POST", "/campaigns", map[string]any{"name": "x", "message": "hello", "group_id": g}, key(a)...).problem(t, 402, "insufficient_balance")
	n.credit(a, "10")
	// Another tenant's group is not there.
	n.do("POST", "/campaigns", map[string]any{"name": "x", "message": "hello", "group_id": g}, key(other)...).problem(t, 404, "not_found")
	// A time in the past, or no text besides the tags: 422.
	n.do("POST", "/campaigns", map[string]any{"name": "x", "message": "hello", "group_id": g,
		"scheduled_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)}, key(a)...).problem(t, 422, "validation_failed")
	n.do("POST", "/campaigns", map[string]any{"name": "x", "message": "{first_name}", "group_id": g}, key(a)...).problem(t, 422, "validation_failed")
	n.do("POST", "/campaigns", map[string]any{"message": "hello", "group_id": g}, key(a)...).problem(t, 422, "validation_failed")
	if b := n.balance(a); b != 10 {
		t.Fatalf("balance %v after refusals; want 10.00 untouched", b)
	}
	// Idempotency: the same key and body answer the first campaign again, charged once.
	body := map[string]any{"name": "Once", "message": "hello", "group_id": g}
	first := n.do("POST", "/campaigns", body, append(key(a), "Idempotency-Key", "camp-1")...)
	again := n.do("POST", "/campaigns", body, append(key(a), "Idempotency-Key", "camp-1")...)
	if first.Status != 201 || again.Status != 201 || again.Header.Get("Idempotent-Replayed") != "true" ||
		first.json(t)["id"] != again.json(t)["id"] {
		t.Fatalf("replay = %d %s / %d %s", first.Status, first.Body, again.Status, again.Body)
	}
	if b := n.balance(a); b != 9.5 {
		t.Errorf("balance %v after a campaign and its replay; want 9.50", b)
	}
	id := first.json(t)["id"].(string)
	n.do("GET", "/campaigns/"+id, nil, key(other)...).problem(t, 404, "not_found")
	n.do("GET", "/campaigns/"+id+"/report", nil, key(other)...).problem(t, 404, "not_found")
	if list := n.do("GET", "/campaigns", nil, key(other)...).json2(t); len(list) != 0 {
		t.Errorf("another tenant lists %v", list)
	}
}

// A scheduled campaign is paid at creation and waits; it starts when its time comes (the
// node's clock, injected), on whichever run of the node is up then, and sends every
// recipient exactly once.
func TestScheduledCampaignFiresOnceAcrossRestart(t *testing.T) {
	clk := &clock{}
	clk.ns.Store(time.Now().UnixNano())
	env := withEnv(fastSims)
	n := startNode(t, env, app.WithClock(clk.now))
	env["TUMA_DATABASE_URL"] = n.dbURL
	a := n.register("scheduled@example.com")
	n.approveDefaultSender(a, "ACME", "all")
	n.credit(a, "100")
	g := n.group(a, "Later")
	for i := range 5 {
		n.contact(a, g, numbers(5, 100)[i], "Friend", "")
	}
	at := clk.now().Add(time.Hour).UTC().Format(time.RFC3339)
	r := n.do("POST", "/campaigns", map[string]any{"name": "Later", "message": "See you {first_name}", "group_id": g, "scheduled_at": at}, key(a)...)
	if r.Status != 201 || r.json(t)["status"] != "scheduled" || r.json(t)["cost_kes"] != 2.5 {
		t.Fatalf("create scheduled = %d %s", r.Status, r.Body)
	}
	id := r.json(t)["id"].(string)
	if b := n.balance(a); b != 97.5 {
		t.Errorf("balance %v; want 97.50: a scheduled campaign is paid at creation", b)
	}
	if got := n.sqlInt(`SELECT count(*) FROM messages WHERE campaign_id = $1`, id); got != 0 {
		t.Errorf("%d messages before the campaign's time", got)
	}
	n.stop()

	clk.advance(2 * time.Hour) // its time passed while no node ran
	n2 := startNode(t, env, app.WithClock(clk.now))
	done := n2.campaignDone(a, id)
	if done["status"] != "completed" || done["total_delivered"] != 5.0 {
		t.Fatalf("campaign after its time = %v", done)
	}
	if got := n2.sqlInt(`SELECT count(*) FROM messages WHERE campaign_id = $1`, id); got != 5 {
		t.Errorf("%d messages; want 5, one per recipient", got)
	}
	if got := n2.sqlInt(`SELECT count(*) FROM wallet_transactions WHERE account_id = $1 AND type = 'debit'`, a.ID); got != 1 {
		t.Errorf("%d debits; want 1", got)
	}
	if b := n2.balance(a); b != 97.5 {
		t.Errorf("balance %v; want 97.50", b)
	}
}

// Cancel refunds exactly what was not sent: all of a scheduled campaign, and of a sending one
// every message no network was handed, while those that went are settled as usual.
func TestCampaignCancel(t *testing.T) {
	n := startNode(t, withEnv(fastSims, "TUMA_LINK_TPS", "safaricom=100"))
	a := n.register("cancel@example.com")
	other := n.register("cancel-other@example.com")
	n.approveDefaultSender(a, "ACME", "all")
	n.credit(a, "1000")
	g := n.group(a, "Many")
	csv := "phone,first_name\n"
	for _, p := range numbers(300, 700) {
		csv += p + ",Wafula\n"
	}
	if r := n.importCSV(a, []byte(csv), g, ""); r.Status != 200 {
		t.Fatalf("import = %d %s", r.Status, r.Body)
	}

	// Scheduled: nothing went, everything comes back.
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r := n.do("POST", "/campaigns", map[string]any{"name": "Later", "message": "Hello {first_name}", "group_id": g, "scheduled_at": at}, key(a)...)
	if r.Status != 201 || r.json(t)["cost_kes"] != 150.0 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	later := r.json(t)["id"].(string)
	n.do("POST", "/campaigns/"+later+"/cancel", nil, key(other)...).problem(t, 404, "not_found")
	c := n.do("POST", "/campaigns/"+later+"/cancel", nil, key(a)...)
	if c.Status != 200 || c.json(t)["status"] != "cancelled" {
		t.Fatalf("cancel scheduled = %d %s", c.Status, c.Body)
	}
	if b := n.balance(a); b != 1000 {
		t.Errorf("balance %v after cancelling a scheduled campaign; want 1000.00, all of it back", b)
	}
	if p := n.do("POST", "/campaigns/"+later+"/cancel", nil, key(a)...).problem(t, 409, "invalid_state"); p["detail"] != "cannot cancel a campaign that is cancelled" {
		t.Errorf("detail %q", p["detail"])
	}
	if got := n.sqlInt(`SELECT count(*) FROM messages WHERE campaign_id = $1`, later); got != 0 {
		t.Errorf("%d messages of a campaign cancelled before its time", got)
	}

	// Sending: at 100 messages a second, 300 take three seconds; cancel once some went.
	r = n.do("POST", "/campaigns", map[string]any{"name": "Now", "message": "Hello {first_name}", "group_id": g}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	now := r.json(t)["id"].(string)
	deadline := time.Now().Add(20 * time.Second)
	for n.sqlInt(`SELECT count(*) FROM messages WHERE campaign_id = $1 AND status IN ('sent', 'delivered')`, now) < 20 {
		if time.Now().After(deadline) {
			t.Fatal("the campaign sent nothing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c := n.do("POST", "/campaigns/"+now+"/cancel", nil, key(a)...); c.Status != 200 || c.json(t)["status"] != "cancelled" {
		t.Fatalf("cancel sending = %d %s", c.Status, c.Body)
	}
	// Every message ends delivered (it went) or failed as cancelled (it did not), and the
	// refunds are exactly the cancelled ones' cost.
	deadline = time.Now().Add(20 * time.Second)
	for {
		final := n.sqlInt(`SELECT count(*) FROM messages WHERE campaign_id = $1 AND status IN ('delivered', 'failed')`, now)
		refunded := n.sqlInt(`SELECT refunded_cents FROM jobs j JOIN campaigns c ON c.job_id = j.id WHERE c.id = $1`, now)
		cancelled := n.sqlInt(`SELECT count(*) FROM messages WHERE campaign_id = $1 AND status = 'failed' AND provider_status = 'CANCELLED'`, now)
		if final == 300 && refunded == cancelled*50 && n.sqlInt(`SELECT count(*) FROM progress_log`) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 300 messages final, %d cents refunded for %d cancelled", final, refunded, cancelled)
		}
		time.Sleep(20 * time.Millisecond)
	}
	delivered := n.sqlInt(`SELECT count(*) FROM messages WHERE campaign_id = $1 AND status = 'delivered'`, now)
	cancelled := n.sqlInt(`SELECT count(*) FROM messages WHERE campaign_id = $1 AND provider_status = 'CANCELLED'`, now)
	if delivered == 0 || cancelled == 0 || delivered+cancelled != 300 {
		t.Fatalf("%d delivered, %d cancelled; want both, 300 in all", delivered, cancelled)
	}
	if b := n.balance(a); b != 1000-float64(delivered)*0.5 {
		t.Errorf("balance %v; want 1000 less the %d delivered messages at 0.50", b, delivered)
	}
	if got := n.do("GET", "/campaigns/"+now, nil, key(a)...).json(t)["status"]; got != "cancelled" {
		t.Errorf("status %v after its job finished; want cancelled", got)
	}
}

// A tenant's own inline send does not wait for its large campaign: the links take the two
// jobs' messages in turn, so the send is delivered while most of the campaign still waits.
func TestCampaignSharesTheLinksWithSends(t *testing.T) {
	n := startNode(t, withEnv(fastSims, "TUMA_LINK_TPS", "safaricom=500"))
	a := n.register("fair@example.com")
	n.approveDefaultSender(a, "ACME", "all")
	n.credit(a, "10000")
	g := n.group(a, "Big")
	csv := "phone\n"
	for _, p := range numbers(3000, 10_000) {
		csv += p + "\n"
	}
	if r := n.importCSV(a, []byte(csv), g, ""); r.Status != 200 {
		t.Fatalf("import = %d %s", r.Status, r.Body)
	}
	r := n.do("POST", "/campaigns", map[string]any{"name": "Big", "message": "Hello", "group_id": g}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	id := r.json(t)["id"].(string)
	deadline := time.Now().Add(20 * time.Second)
	for n.sqlInt(`SELECT count(*) FROM messages WHERE campaign_id = $1 AND status <> 'queued'`, id) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the campaign did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	s := n.send(a, map[string]any{"recipients": []string{"0712999999"}, "message": "urgent"})
	if s.Status != 202 {
		t.Fatalf("send = %d %s", s.Status, s.Body)
	}
	job := s.json(t)["job_id"].(string)
	for n.sqlInt(`SELECT count(*) FROM messages WHERE job_id = $1 AND status = 'delivered'`, job) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the send was not delivered within 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// At 500 a second the campaign takes 6 s; the send went in well under that.
	if left := n.sqlInt(`SELECT count(*) FROM messages WHERE campaign_id = $1 AND status = 'queued'`, id); left < 1000 {
		t.Errorf("the send was delivered with only %d of 3,000 campaign messages still queued: it waited behind the campaign", left)
	}
	n.campaignDone(a, id)
}

// A campaign names an approved sender of its own, else the account's default, else the shared
// sender with the company prefix, which it pays for in every contact's parts.
func TestCampaignSenders(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("senders@example.com")
	n.credit(a, "100")
	g := n.group(a, "One")
	n.contact(a, g, "0712000001", "Jo", "")
	// No sender of its own: the shared sender, with the company's prefix counted in the parts.
	text := strings.Repeat("y", 155) // alone one part; after "Acme Ltd: " (10 more) two
	r := n.do("POST", "/campaigns", map[string]any{"name": "Shared", "message": text, "group_id": g}, key(a)...)
	if r.Status != 201 || r.json(t)["cost_kes"] != 1.0 {
		t.Fatalf("campaign on the shared sender = %d %s; want KES 1.00 (two parts with the prefix)", r.Status, r.Body)
	}
	shared := n.campaignDone(a, r.json(t)["id"].(string))
	msgs := n.do("GET", "/sms/messages?campaign_id="+shared["id"].(string), nil, key(a)...).json(t)["data"].([]any)
	if len(msgs) != 1 || !strings.HasSuffix(msgs[0].(map[string]any)["message"].(string), ": "+text) {
		t.Fatalf("shared-sender message = %v; want the company prefix before the text", msgs)
	}
	// An approved sender of its own, named by id: no prefix, one part.
	n.sql(`INSERT INTO sender_ids (id, account_id, name, network, status, is_active, fee_paid)
		VALUES (tuma_uuidv7(), $1, 'OWNSEND', 'all', 'approved', true, true)`, a.ID)
	sid := n.sqlString(`SELECT id::text FROM sender_ids WHERE account_id = $1 AND name = 'OWNSEND'`, a.ID)
	r = n.do("POST", "/campaigns", map[string]any{"name": "Own", "message": text, "group_id": g, "sender_id": sid}, key(a)...)
	if r.Status != 201 || r.json(t)["cost_kes"] != 0.5 || r.json(t)["sender_id"] != sid {
		t.Fatalf("campaign on its own sender = %d %s; want KES 0.50 and sender_id %s", r.Status, r.Body, sid)
	}
	own := n.campaignDone(a, r.json(t)["id"].(string))
	msgs = n.do("GET", "/sms/messages?campaign_id="+own["id"].(string), nil, key(a)...).json(t)["data"].([]any)
	if len(msgs) != 1 || msgs[0].(map[string]any)["sender_id"] != "OWNSEND" || msgs[0].(map[string]any)["message"] != text {
		t.Fatalf("own-sender message = %v", msgs)
	}
	// Another account's sender, or none approved: 422 sender_not_approved, nothing charged.
	n.do("POST", "/campaigns", map[string]any{"name": "x", "message": "hi", "group_id": g, "sender_id": "NOSUCH"}, key(a)...).
		problem(t, 422, "sender_not_approved")
}

// Contacts who opt out after a campaign was created, before their turn, are never messaged:
// their messages fail as OPTED_OUT and are refunded, exactly, while the others go.
func TestCampaignSkipsContactsOptedOutSinceCreation(t *testing.T) {
	clk := &clock{}
	clk.ns.Store(time.Now().UnixNano())
	n := startNode(t, fastSims, app.WithClock(clk.now))
	a := n.register("optout@example.com")
	n.approveDefaultSender(a, "ACME", "all")
	n.credit(a, "100")
	g := n.group(a, "Members")
	for i := range 6 {
		n.contact(a, g, numbers(6, 300)[i], "Friend", "")
	}
	r := n.do("POST", "/campaigns", map[string]any{"name": "Soon", "message": "Hello {first_name}", "group_id": g,
		"scheduled_at": clk.now().Add(time.Hour).UTC().Format(time.RFC3339)}, key(a)...)
	if r.Status != 201 {
		t.Fatalf("create scheduled = %d %s", r.Status, r.Body)
	}
	id := r.json(t)["id"].(string)
	contacts := n.do("GET", "/contacts?group_id="+g, nil, key(a)...).json(t)["data"].([]any)
	gone := map[string]bool{}
	for _, c := range contacts[:2] { // two of them leave before the campaign's time
		c := c.(map[string]any)
		if d := n.do("DELETE", "/contacts/"+c["id"].(string), nil, key(a)...); d.Status != 204 {
			t.Fatalf("delete contact = %d %s", d.Status, d.Body)
		}
		gone[c["phone"].(string)] = true
	}
	clk.advance(2 * time.Hour)
	done := n.campaignDone(a, id)
	if done["status"] != "completed" || done["total_delivered"] != 4.0 || done["total_failed"] != 2.0 {
		t.Fatalf("campaign = %v; want 4 delivered, 2 failed (opted out)", done)
	}
	msgs := n.do("GET", "/sms/messages?campaign_id="+id, nil, key(a)...).json(t)["data"].([]any)
	for _, m := range msgs {
		m := m.(map[string]any)
		want := "delivered"
		if gone[m["recipient"].(string)] {
			want = "failed"
			if m["provider_status"] != "OPTED_OUT" || m["sent_at"] != nil {
				t.Errorf("opted-out contact's message = %v; want OPTED_OUT, never sent", m)
			}
		}
		if m["status"] != want {
			t.Errorf("message to %v is %v; want %s", m["recipient"], m["status"], want)
		}
	}
	waitFor(t, 10*time.Second, "the refund of the skipped messages", func() bool { return n.balance(a) == 98 }) // 6 × 0.50 paid, 2 × 0.50 back
}
