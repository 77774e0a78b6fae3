package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// fastSims makes the simulated networks answer at once, with receipts a moment later.
var fastSims = map[string]string{"TUMA_SIM_LATENCY": "0s", "TUMA_SIM_RECEIPT_DELAY": "20ms", "TUMA_SIM_OUTCOMES": "delivered=1"}

func withEnv(base map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func (n *node) sql(q string, args ...any) {
	n.t.Helper()
	conn, err := pgx.Connect(context.Background(), n.dbURL)
	if err != nil {
		n.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), q, args...); err != nil {
		n.t.Fatalf("%s: %v", q, err)
	}
}

func (n *node) sqlInt(q string, args ...any) int64 {
	n.t.Helper()
	conn, err := pgx.Connect(context.Background(), n.dbURL)
	if err != nil {
		n.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var v int64
	if err := conn.QueryRow(context.Background(), q, args...).Scan(&v); err != nil {
		n.t.Fatalf("%s: %v", q, err)
	}
	return v
}

func (n *node) credit(a account, kes string) {
	n.t.Helper()
	r := n.do("POST", "/admin/accounts/"+a.ID+"/credit", fmt.Sprintf(`{"amount_kes": %s}`, kes), adminAuth()...)
	if r.Status != 200 {
		n.t.Fatalf("credit = %d %s", r.Status, r.Body)
	}
}

// approveDefaultSender gives the account an approved default sender ID (the sender-ID
// workflow is a later feature; the engine only reads the row).
func (n *node) approveDefaultSender(a account, name, network string) {
	n.sql(`INSERT INTO sender_ids (id, account_id, name, network, status, is_active, is_default, fee_paid)
		VALUES (tuma_uuidv7(), $1, $2, $3, 'approved', true, true, true)`, a.ID, name, network)
}

func (n *node) balance(a account) float64 {
	n.t.Helper()
	return n.do("GET", "/wallet", nil, key(a)...).json(n.t)["balance_kes"].(float64)
}

func (n *node) send(a account, body any, headers ...string) response {
	n.t.Helper()
	return n.do("POST", "/sms/send", body, append(key(a), headers...)...)
}

// numbers returns count distinct Safaricom numbers in national form.
func numbers(count, offset int) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = fmt.Sprintf("0712%06d", offset+i)
	}
	return out
}

func (n *node) waitDone(a account, total int) map[string]any {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := n.do("GET", "/sms/stats", nil, key(a)...).json(n.t)
		if st["total"] == float64(total) && st["queued"] == 0.0 && st["sent"] == 0.0 {
			return st
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("messages not final: %v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSegmentExamplesCostExactly(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("segments@example.com")
	// An approved default sender: no shared-sender prefix, so the text is exactly the example.
	// (Approved before the account's first engine command, which loads its state.)
	n.approveDefaultSender(a, "ACME", "all")
	n.credit(a, "10000")
	rep := strings.Repeat
	digits := func(k int) string { return rep("1234567890", k/10+1)[:k] }
	tests := []struct {
		name, text string
		parts      int
		encoding   string
	}{
		{"#1 160 a", rep("a", 160), 1, "gsm7"},
		{"#2 161 a", rep("a", 161), 2, "gsm7"},
		{"#3 306 a", rep("a", 306), 2, "gsm7"},
		{"#4 307 a", rep("a", 307), 3, "gsm7"},
		{"#5 918 a", rep("a", 918), 6, "gsm7"},
		{"#6 { + 158 digits", "{" + digits(158), 1, "gsm7"},
		{"#6 { + 159 digits", "{" + digits(159), 2, "gsm7"},
		{"#7 80 €", rep("€", 80), 1, "gsm7"},
		{"#7 81 €", rep("€", 81), 2, "gsm7"},
		{"#8 € straddling", rep("a", 152) + "€" + rep("a", 152), 3, "gsm7"},
		{"#9 70 ж", rep("ж", 70), 1, "ucs2"},
		{"#9 71 ж", rep("ж", 71), 2, "ucs2"},
		{"#10 134 ж", rep("ж", 134), 2, "ucs2"},
		{"#10 135 ж", rep("ж", 135), 3, "ucs2"},
		{"#11 smart quote", rep("a", 159) + "’", 3, "ucs2"},
		{"#12 emoji", "Hello 😀", 1, "ucs2"},
		{"#13 68 a + emoji", rep("a", 68) + "😀", 1, "ucs2"},
		{"#13 69 a + emoji", rep("a", 69) + "😀", 2, "ucs2"},
		{"#14 emoji straddling", rep("a", 66) + "😀" + rep("a", 66), 3, "ucs2"},
		{"#15 promo suffix", rep("a", 147) + " STOP*456*9*5#", 2, "gsm7"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := numbers(3, i*10)
			rs = append(rs, "+254"+rs[0][1:]) // the same number again in another form: sent once
			r := n.send(a, map[string]any{"recipients": rs, "message": tt.text})
			if r.Status != 202 {
				t.Fatalf("send = %d %s", r.Status, r.Body)
			}
			job := r.json(t)
			want := float64(tt.parts*3) * 0.50
			if job["recipients_count"] != 3.0 || job["cost_kes"] != want || job["status"] != "sent" {
				t.Fatalf("job = %v; want 3 recipients costing %.2f", job, want)
			}
			list := n.do("GET", "/sms/messages?job_id="+job["job_id"].(string), nil, key(a)...).json(t)
			for _, m := range list["data"].([]any) {
				m := m.(map[string]any)
				if m["parts"] != float64(tt.parts) || m["encoding"] != tt.encoding || m["message"] != tt.text ||
					m["cost_kes"] != float64(tt.parts)*0.5 || m["sender_id"] != "ACME" {
					t.Errorf("message = parts %v, encoding %v, cost %v, sender %v; want %d %s", m["parts"], m["encoding"],
						m["cost_kes"], m["sender_id"], tt.parts, tt.encoding)
				}
			}
		})
	}
}

func TestSharedSenderPrefixIsCharged(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("prefix@example.com") // company "Acme Ltd", no sender IDs
	n.credit(a, "100")
	text := strings.Repeat("a", 155) // 155 alone is one part; "Acme Ltd: " makes it 165 → 2
	r := n.send(a, map[string]any{"recipients": []string{"0712000001"}, "message": text})
	if r.Status != 202 || r.json(t)["cost_kes"] != 1.0 {
		t.Fatalf("send = %d %s; want 202 costing 1.00 (2 parts)", r.Status, r.Body)
	}
	n.waitDone(a, 1)
	m := n.do("GET", "/sms/messages", nil, key(a)...).json(t)["data"].([]any)[0].(map[string]any)
	if m["message"] != "Acme Ltd: "+text || m["sender_id"] != "TUMA" || m["parts"] != 2.0 || m["status"] != "delivered" ||
		m["source"] != "api" || m["network"] != "safaricom" || m["recipient"] != "+254712000001" {
		t.Fatalf("message = %v", m)
	}
	access, _ := n.login(a)
	if r := n.do("POST", "/sms/send", map[string]any{"recipients": []string{"0712000002"}, "message": "hi"}, bearer(access)...); r.Status != 202 {
		t.Fatalf("send by token = %d", r.Status)
	}
	n.waitDone(a, 2)
	if m := n.do("GET", "/sms/messages?page_size=1", nil, key(a)...).json(t)["data"].([]any)[0].(map[string]any); m["source"] != "browser" {
		t.Errorf("source of a token send = %v; want browser", m["source"])
	}
}

func TestSendValidationChargesNothing(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("validation@example.com")
	n.credit(a, "100")
	p := n.send(a, map[string]any{"recipients": []string{"0712345678", "12345", "0712345679", "0800123456"}, "message": "hi"}).
		problem(t, 422, "validation_failed")
	errs := p["errors"].([]any)
	if len(errs) != 2 || errs[0].(map[string]any)["field"] != "recipients[1]" || errs[1].(map[string]any)["field"] != "recipients[3]" {
		t.Errorf("errors = %v; want recipients[1] and recipients[3]", errs)
	}
	n.send(a, map[string]any{"recipients": []string{"0712345678", "0747123456"}, "message": "hi"}).problem(t, 422, "unsupported_network")
	many := make([]string, 300)
	for i := range many {
		many[i] = "nope"
	}
	if errs := n.send(a, map[string]any{"recipients": many, "message": "hi"}).problem(t, 422, "validation_failed")["errors"].([]any); len(errs) != 100 {
		t.Errorf("%d errors listed; want at most 100", len(errs))
	}
	p = n.send(a, map[string]any{"recipients": numbers(10_001, 0), "message": "hi"}).problem(t, 422, "validation_failed")
	if p["errors"].([]any)[0].(map[string]any)["field"] != "recipients" {
		t.Errorf("10,001 recipients errors = %v", p["errors"])
	}
	p = n.send(a, map[string]any{"recipients": []string{"0712345678"}, "message": strings.Repeat("a", 919)}).problem(t, 422, "validation_failed")
	if p["errors"].([]any)[0].(map[string]any)["field"] != "message" {
		t.Errorf("919 characters errors = %v", p["errors"])
	}
	n.send(a, map[string]any{"recipients": []string{}, "message": "hi"}).problem(t, 422, "validation_failed")
	n.send(a, map[string]any{"recipients": []string{"0712345678"}}).problem(t, 422, "validation_failed")
	n.send(a, `{"recipients": "0712345678", "message": "hi"}`).problem(t, 422, "validation_failed")
	n.send(a, `{"recipients": [712345678], "message": "hi"}`).problem(t, 422, "validation_failed")
	n.send(a, `{"recipients": ["0712345678"], "message": "hi"`).problem(t, 400, "malformed_json")
	n.send(a, map[string]any{"recipients": []string{"0712345678"}, "message": "hi", "sender_id": "NOTMINE"}).
		problem(t, 422, "sender_not_approved")
	if b := n.balance(a); b != 100 {
		t.Errorf("balance %v after rejected sends; want 100", b)
	}
	if jobs := n.sqlInt(`SELECT count(*) FROM jobs`); jobs != 0 {
		t.Errorf("%d jobs written by rejected sends", jobs)
	}
}

func TestInsufficientBalanceIs402(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("broke@example.com")
	n.credit(a, "1.20")
	p := n.send(a, map[string]any{"recipients": numbers(3, 0), "message": "hi"}).problem(t, 402, "insufficient_balance")
	if !strings.Contains(p["detail"].(string), "1.20") || !strings.Contains(p["detail"].(string), "1.50") {
		t.Errorf("detail %q; want the balance and the cost", p["detail"])
	}
	if b := n.balance(a); b != 1.20 {
		t.Errorf("balance %v; want 1.20 untouched", b)
	}
}

func TestIdempotentSend(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("idem@example.com")
	n.credit(a, "0.50")
	body := map[string]any{"recipients": numbers(2, 0), "message": "hi"}
	// A failed request (402) releases its key: the client can top up and retry with it.
	n.send(a, body, "Idempotency-Key", "order-42").problem(t, 402, "insufficient_balance")
	n.credit(a, "9.50")
	first := n.send(a, body, "Idempotency-Key", "order-42")
	if first.Status != 202 || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first = %d %s", first.Status, first.Body)
	}
	again := n.send(a, body, "Idempotency-Key", "order-42")
	if again.Status != 202 || again.Header.Get("Idempotent-Replayed") != "true" || again.json(t)["job_id"] != first.json(t)["job_id"] {
		t.Fatalf("replay = %d %s (replayed %q); want the same job", again.Status, again.Body, again.Header.Get("Idempotent-Replayed"))
	}
	if b := n.balance(a); b != 9.0 {
		t.Errorf("balance %v; want 9.00 (charged once)", b)
	}
	n.send(a, map[string]any{"recipients": numbers(3, 0), "message": "hi"}, "Idempotency-Key", "order-42").
		problem(t, 422, "idempotency_key_reused")
	// Keys are per account.
	b := n.register("idem2@example.com")
	n.credit(b, "10")
	if r := n.send(b, body, "Idempotency-Key", "order-42"); r.Status != 202 || r.json(t)["job_id"] == first.json(t)["job_id"] {
		t.Errorf("another account's same key = %d %s; want its own job", r.Status, r.Body)
	}
	n.send(a, body, "Idempotency-Key", strings.Repeat("k", 256)).problem(t, 400, "invalid_idempotency_key")
}

func TestMessagesAreTenantScoped(t *testing.T) {
	n := startNode(t, fastSims)
	a, b := n.register("tenant-a@example.com"), n.register("tenant-b@example.com")
	n.credit(a, "10")
	n.send(a, map[string]any{"recipients": numbers(1, 0), "message": "secret"})
	n.waitDone(a, 1)
	m := n.do("GET", "/sms/messages", nil, key(a)...).json(t)["data"].([]any)[0].(map[string]any)
	if r := n.do("GET", "/sms/messages/"+m["id"].(string), nil, key(a)...); r.Status != 200 {
		t.Fatalf("own message = %d", r.Status)
	}
	n.do("GET", "/sms/messages/"+m["id"].(string), nil, key(b)...).problem(t, 404, "not_found")
	n.do("GET", "/sms/delivery/"+m["provider_message_id"].(string), nil, key(b)...).problem(t, 404, "not_found")
	n.do("GET", "/sms/messages/not-a-uuid", nil, key(a)...).problem(t, 404, "not_found")
	if l := n.do("GET", "/sms/messages", nil, key(b)...).json(t); l["total"] != 0.0 || len(l["data"].([]any)) != 0 {
		t.Errorf("tenant B sees %v", l)
	}
	if st := n.do("GET", "/sms/stats", nil, key(b)...).json(t); st["total"] != 0.0 {
		t.Errorf("tenant B stats %v", st)
	}
}

func TestListMessagesPagination(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("pages@example.com")
	n.credit(a, "10")
	first := n.send(a, map[string]any{"recipients": numbers(3, 0), "message": "one"}).json(t)["job_id"].(string)
	n.send(a, map[string]any{"recipients": numbers(2, 100), "message": "two"})
	n.waitDone(a, 5)
	l := n.do("GET", "/sms/messages?page=2&page_size=2", nil, key(a)...).json(t)
	if l["total"] != 5.0 || l["pages"] != 3.0 || l["page"] != 2.0 || l["page_size"] != 2.0 || len(l["data"].([]any)) != 2 {
		t.Errorf("page 2 = %v", l)
	}
	all := n.do("GET", "/sms/messages", nil, key(a)...).json(t)["data"].([]any)
	if all[0].(map[string]any)["message"] != "Acme Ltd: two" {
		t.Errorf("newest first: first item %v", all[0])
	}
	if l := n.do("GET", "/sms/messages?page=9", nil, key(a)...).json(t); len(l["data"].([]any)) != 0 || l["total"] != 5.0 {
		t.Errorf("page past the end = %v; want empty data", l)
	}
	if l := n.do("GET", "/sms/messages?job_id="+first, nil, key(a)...).json(t); l["total"] != 3.0 {
		t.Errorf("job filter = %v", l)
	}
	if l := n.do("GET", "/sms/messages?status=delivered", nil, key(a)...).json(t); l["total"] != 5.0 {
		t.Errorf("status filter = %v", l)
	}
	if l := n.do("GET", "/sms/messages?status=failed", nil, key(a)...).json(t); l["total"] != 0.0 || l["pages"] != 0.0 {
		t.Errorf("empty filter = %v; want total 0, pages 0", l)
	}
	for _, q := range []string{"page=0", "page_size=101", "status=lost"} { // well-formed, out of range
		n.do("GET", "/sms/messages?"+q, nil, key(a)...).problem(t, 422, "validation_failed")
	}
	for _, q := range []string{"page_size=x", "job_id=nope"} { // malformed (CONTRACT §1)
		n.do("GET", "/sms/messages?"+q, nil, key(a)...).problem(t, 400, "malformed_query")
	}
}

func TestLiveDeliveryCheck(t *testing.T) {
	n := startNode(t, withEnv(fastSims, "TUMA_SIM_RECEIPT_DELAY", "1500ms"))
	a := n.register("live@example.com")
	n.credit(a, "10")
	n.send(a, map[string]any{"recipients": numbers(1, 0), "message": "hi"})
	var pid string
	deadline := time.Now().Add(10 * time.Second)
	for pid == "" {
		if m := n.do("GET", "/sms/messages", nil, key(a)...).json(t)["data"].([]any); len(m) == 1 && m[0].(map[string]any)["status"] == "sent" {
			pid = m[0].(map[string]any)["provider_message_id"].(string)
		}
		if time.Now().After(deadline) {
			t.Fatal("message never reached sent")
		}
	}
	m := n.do("GET", "/sms/delivery/"+pid, nil, key(a)...).json(t)
	if m["status"] != "sent" || m["provider_status"] != "ENROUTE" {
		t.Fatalf("before the receipt: %v; want sent/ENROUTE", m)
	}
	deadline = time.Now().Add(10 * time.Second)
	for m["status"] == "sent" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		m = n.do("GET", "/sms/delivery/"+pid, nil, key(a)...).json(t)
	}
	if m["status"] != "delivered" || m["provider_status"] != "DELIVRD" || m["delivered_at"] == nil {
		t.Fatalf("after the receipt delay: %v; want delivered", m)
	}
	n.do("GET", "/sms/delivery/unknown-id", nil, key(a)...).problem(t, 404, "not_found")
}

func TestTierUpgrade(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("volume@example.com")
	n.credit(a, "1000")
	if p := n.do("GET", "/pricing/my", nil, key(a)...).json(t); p["tier_name"] != "Starter" || p["price_per_sms"] != 0.5 || p["sms_to_next_tier"] != 1000.0 {
		t.Fatalf("pricing = %v", p)
	}
	r := n.send(a, map[string]any{"recipients": numbers(999, 0), "message": "hi"})
	if r.json(t)["cost_kes"] != 499.5 {
		t.Fatalf("999 at Starter = %s", r.Body)
	}
	if c := n.do("GET", "/notifications/unread-count", nil, key(a)...).json(t)["count"]; c != 0.0 {
		t.Fatalf("notifications before crossing: %v", c)
	}
	// This send crosses 1,000: it is still priced at Starter, and raises one notification.
	if r := n.send(a, map[string]any{"recipients": numbers(2, 5000), "message": "hi"}); r.json(t)["cost_kes"] != 1.0 {
		t.Fatalf("crossing send = %s; want 1.00", r.Body)
	}
	if r := n.send(a, map[string]any{"recipients": numbers(10, 6000), "message": "hi"}); r.json(t)["cost_kes"] != 4.8 {
		t.Fatalf("next send = %s; want 10 × 0.48 = 4.80", r.Body)
	}
	ns := n.do("GET", "/notifications", nil, key(a)...)
	list := []any{}
	for _, x := range ns.json2(t) {
		if x.(map[string]any)["type"] == "tier_upgrade" {
			list = append(list, x)
		}
	}
	if len(list) != 1 {
		t.Fatalf("tier_upgrade notifications %v; want exactly one", list)
	}
	note := list[0].(map[string]any)
	text := note["title"].(string) + " " + note["message"].(string)
	for _, want := range []string{"Basic", "0.48", "Growth", "5,000"} {
		if !strings.Contains(text, want) {
			t.Errorf("notification %q does not name %s", text, want)
		}
	}
	p := n.do("GET", "/wallet/pricing", nil, key(a)...).json(t)
	if p["tier_name"] != "Basic" || p["price_per_sms"] != 0.48 || p["lifetime_sms"] != 1011.0 || p["sms_to_next_tier"] != 3989.0 ||
		p["next_tier"].(map[string]any)["name"] != "Growth" || len(p["all_tiers"].([]any)) != 5 {
		t.Errorf("pricing after upgrade = %v", p)
	}
}

func TestAdminPricingCreditAndPromo(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("pinned@example.com")
	n.credit(a, "1000") // stays above the low-balance threshold: the only notification is the promo
	p := n.do("PUT", "/admin/accounts/"+a.ID+"/pricing", map[string]any{"tier": "enterprise", "is_internal": false}, adminAuth()...).json(t)
	if p["tier_name"] != "Enterprise" || p["price_per_sms"] != 0.42 || p["is_override"] != true {
		t.Fatalf("pinned pricing = %v", p)
	}
	if r := n.send(a, map[string]any{"recipients": numbers(10, 0), "message": "hi"}); r.json(t)["cost_kes"] != 4.2 {
		t.Errorf("send at Enterprise = %s", r.Body)
	}
	n.do("PUT", "/admin/accounts/"+a.ID+"/pricing", map[string]any{"tier": nil, "is_internal": true}, adminAuth()...)
	if r := n.send(a, map[string]any{"recipients": numbers(10, 100), "message": "hi"}); r.json(t)["cost_kes"] != 0.0 {
		t.Errorf("internal send = %s; want free", r.Body)
	}
	n.do("PUT", "/admin/accounts/"+a.ID+"/pricing", map[string]any{"tier": "Platinum", "is_internal": false}, adminAuth()...).problem(t, 422, "validation_failed")
	for _, amt := range []string{"0", "-5", "1.005", `"ten"`, "1e9"} {
		n.do("POST", "/admin/accounts/"+a.ID+"/credit", `{"amount_kes": `+amt+`}`, adminAuth()...).problem(t, 422, "validation_failed")
	}
	n.do("POST", "/admin/accounts/01a2016b-4839-76f3-894e-7e3c82ebe08d/credit", `{"amount_kes": 5}`, adminAuth()...).problem(t, 404, "not_found")
	if r := n.do("POST", "/admin/accounts/"+a.ID+"/credit", `{"amount_kes": 12.34, "description": "goodwill"}`, adminAuth()...); r.json(t)["credited_kes"] != 12.34 {
		t.Errorf("credit = %s", r.Body)
	}
	tx := n.do("GET", "/wallet/transactions?type=topup", nil, key(a)...).json(t)
	if tx["total"] != 2.0 || tx["data"].([]any)[0].(map[string]any)["description"] != "goodwill" {
		t.Errorf("top-ups = %v", tx)
	}
	n.do("GET", "/wallet/transactions?type=bonus", nil, key(a)...).problem(t, 422, "validation_failed")

	b := n.register("everyone@example.com")
	r := n.do("POST", "/admin/notifications/promo", map[string]any{"title": "Holiday rates", "message": "Cheaper SMS all week"}, adminAuth()...)
	if r.Status != 201 || r.json(t)["created"] != 2.0 {
		t.Fatalf("promo to all = %d %s", r.Status, r.Body)
	}
	n.do("POST", "/admin/notifications/promo", map[string]any{"title": "Just you", "message": "A gift", "account_ids": []string{b.ID}}, adminAuth()...)
	if c := n.do("GET", "/notifications/unread-count", nil, key(b)...).json(t)["count"]; c != 2.0 {
		t.Errorf("b unread = %v; want 2", c)
	}
	if c := n.do("GET", "/notifications/unread-count", nil, key(a)...).json(t)["count"]; c != 1.0 {
		t.Errorf("a unread = %v; want 1", c)
	}
	list := n.do("GET", "/notifications", nil, key(b)...).json2(t)
	newest := list[0].(map[string]any)
	if newest["title"] != "Just you" || newest["type"] != "promo" || newest["is_read"] != false {
		t.Errorf("newest notification = %v", newest)
	}
	if r := n.do("PATCH", "/notifications/"+newest["id"].(string)+"/read", nil, key(b)...); r.json(t)["is_read"] != true {
		t.Errorf("mark read = %s", r.Body)
	}
	n.do("PATCH", "/notifications/"+newest["id"].(string)+"/read", nil, key(a)...).problem(t, 404, "not_found")
	if r := n.do("PATCH", "/notifications/read-all", nil, key(b)...); r.json(t)["updated"] != 1.0 {
		t.Errorf("read-all = %s", r.Body)
	}
	if c := n.do("GET", "/notifications/unread-count", nil, key(b)...).json(t)["count"]; c != 0.0 {
		t.Errorf("unread after read-all = %v", c)
	}
}

// A refund's ledger entry counts SMS parts, as the debit it gives back does: a send of two
// 2-part messages, both failed, is debited 4 SMS and refunded 4 (it said 2, the messages).
func TestRefundCountsPartsAsTheDebit(t *testing.T) {
	n := startNode(t, withEnv(fastSims, "TUMA_SIM_OUTCOMES", "undeliverable=1"))
	a := n.register("refund-parts@example.com")
	n.credit(a, "100")
	r := n.send(a, map[string]any{"recipients": []string{"0712000001", "0712000002"}, "message": strings.Repeat("a", 200)})
	if r.Status != 202 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	job := r.json(t)["job_id"]
	deadline := time.Now().Add(20 * time.Second)
	// Every cent back (both messages refunded, in one entry or two), then the counts.
	for n.sqlInt(`SELECT coalesce(sum(amount_cents), 0) FROM wallet_transactions WHERE job_id = $1 AND type = 'refund'`, job) <
		n.sqlInt(`SELECT amount_cents FROM wallet_transactions WHERE job_id = $1 AND type = 'debit'`, job) {
		if time.Now().After(deadline) {
			t.Fatal("no refund")
		}
		time.Sleep(20 * time.Millisecond)
	}
	debit := n.sqlInt(`SELECT sms_count FROM wallet_transactions WHERE job_id = $1 AND type = 'debit'`, job)
	refunded := n.sqlInt(`SELECT sum(sms_count) FROM wallet_transactions WHERE job_id = $1 AND type = 'refund'`, job)
	if debit != 4 || refunded != 4 {
		t.Errorf("debit sms_count %d, refunds %d; want 4 and 4", debit, refunded)
	}
}
