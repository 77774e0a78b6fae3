package app_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

// suppress puts a number on the account's list through the API.
func (n *node) suppress(a account, phone string) {
	n.t.Helper()
	if r := n.do("POST", "/suppressions", map[string]any{"phone": phone}, key(a)...); r.Status != 201 {
		n.t.Fatalf("suppress %s = %d %s", phone, r.Status, r.Body)
	}
}

// The very next send after a number is suppressed leaves it out and charges only the rest, 20
// times over; a send with nothing else is refused and charges nothing; the quote and a replay
// say the same; no message is ever made for a suppressed number.
func TestNextSendLeavesSuppressedNumbersOut(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("suppressed-send@example.com")
	n.approveDefaultSender(a, "ACME", "all") // no shared-sender prefix: one part, KES 0.50
	n.credit(a, "1000")
	sent := 0
	for i := range 20 {
		nums := numbers(2, 100+2*i)
		n.suppress(a, nums[0])
		r := n.send(a, map[string]any{"recipients": nums, "message": "Hello"})
		if r.Status != 202 {
			t.Fatalf("send %d = %d %s", i, r.Status, r.Body)
		}
		got := r.json(t)
		if got["recipients_count"] != 1.0 || got["suppressed_count"] != 1.0 || got["sms_count"] != 1.0 || got["cost_kes"] != 0.5 {
			t.Fatalf("send %d right after suppressing %s = %v; want 1 recipient, 1 suppressed, KES 0.50", i, nums[0], got)
		}
		sent++
	}
	before := n.balance(a)
	r := n.send(a, map[string]any{"recipients": []string{"0712000100", "+254712000102"}, "message": "Hello"})
	if r.Status != 422 || r.json(t)["code"] != "all_recipients_suppressed" {
		t.Fatalf("send to suppressed numbers only = %d %s; want 422 all_recipients_suppressed", r.Status, r.Body)
	}
	if b := n.balance(a); b != before {
		t.Errorf("balance %v after a refused send; want %v", b, before)
	}

	q := n.do("POST", "/sms/quote", map[string]any{"recipients": []string{"0712000100", "0712999999"}, "message": "Hello"}, key(a)...)
	if qb := q.json(t); q.Status != 200 || qb["recipients_count"] != 1.0 || qb["suppressed_count"] != 1.0 || qb["cost_kes"] != 0.5 {
		t.Errorf("quote = %d %v; want 1 recipient, 1 suppressed, KES 0.50", q.Status, qb)
	}
	body := map[string]any{"recipients": []string{"0712000100", "0712999998"}, "message": "Hello"}
	first := n.send(a, body, "Idempotency-Key", "suppressed-replay")
	again := n.send(a, body, "Idempotency-Key", "suppressed-replay")
	sent++
	if first.Status != 202 || again.Status != 202 || again.Header.Get("Idempotent-Replayed") != "true" ||
		again.json(t)["suppressed_count"] != 1.0 || again.json(t)["job_id"] != first.json(t)["job_id"] {
		t.Errorf("replay = %d %s (first %d %s); want the same 202 with suppressed_count 1", again.Status, again.Body, first.Status, first.Body)
	}
	n.waitDone(a, sent)
	if got := n.sqlInt(`SELECT count(*) FROM messages m JOIN suppressions s ON s.account_id = m.account_id
		AND s.nsn = substr(m.recipient, 5)::integer WHERE m.account_id = $1`, a.ID); got != 0 {
		t.Errorf("%d messages made for suppressed numbers", got)
	}
}

// A campaign leaves its group's suppressed members out (suppressed_count, not charged); a
// contact opted out puts its number on the list, and the next send leaves it out.
func TestCampaignsAndOptOutsHonourSuppressions(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("suppressed-campaign@example.com")
	n.approveDefaultSender(a, "ACME", "all")
	n.credit(a, "1000")
	g := n.group(a, "Customers")
	for i, p := range numbers(4, 500) {
		n.contact(a, g, p, "C", string(rune('a'+i)))
	}
	n.suppress(a, "0712000500")
	r := n.do("POST", "/campaigns", map[string]any{"name": "Promo", "message": "Hi {first_name}", "group_id": g}, key(a)...)
	c := r.json(t)
	if r.Status != 201 || c["total_recipients"] != 3.0 || c["suppressed_count"] != 1.0 || c["cost_kes"] != 1.5 {
		t.Fatalf("campaign = %d %v; want 3 recipients, 1 suppressed, KES 1.50", r.Status, c)
	}
	if got := n.campaignDone(a, c["id"].(string)); got["total_delivered"].(float64)+got["total_failed"].(float64) != 3 {
		t.Errorf("campaign finished with %v", got)
	}

	list := n.do("GET", "/contacts?search=0712000501", nil, key(a)...).json(t)["data"].([]any)
	if len(list) != 1 {
		t.Fatalf("contacts found %v", list)
	}
	id := list[0].(map[string]any)["id"].(string)
	if r := n.do("DELETE", "/contacts/"+id, nil, key(a)...); r.Status != 204 {
		t.Fatalf("opt out = %d %s", r.Status, r.Body)
	}
	s := n.do("GET", "/suppressions?search=0712000501", nil, key(a)...).json(t)["data"].([]any)
	if len(s) != 1 || s[0].(map[string]any)["source"] != "contact" {
		t.Fatalf("suppressions after the opt-out: %v; want the number, source contact", s)
	}
	r = n.send(a, map[string]any{"recipients": []string{"0712000501", "0712000777"}, "message": "Hello"})
	if got := r.json(t); r.Status != 202 || got["suppressed_count"] != 1.0 || got["recipients_count"] != 1.0 {
		t.Errorf("send right after the opt-out = %d %v; want the opted-out number left out", r.Status, got)
	}
}

// importSuppressions posts a CSV to /suppressions/import.
func (n *node) importSuppressions(a account, data []byte) response {
	n.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, _ := w.CreateFormFile("file", "optouts.csv")
	part.Write(data)
	w.Close()
	req, _ := http.NewRequest("POST", n.base+"/suppressions/import", &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("X-API-Key", a.APIKey)
	return n.roundTrip(req)
}

// 100,000 numbers from a CSV, in mixed forms with repeats and bad rows: the good ones are
// added once, the bad counted and listed, and the very next send leaves every one out.
func TestSuppressionImportOf100000(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("suppression-import@example.com")
	n.approveDefaultSender(a, "ACME", "all")
	n.credit(a, "1000")
	n.suppress(a, "0722000000") // there before
	var csv bytes.Buffer
	csv.WriteString("phone,reason\r\n")
	for i := range 100_000 {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&csv, "07220%05d,moved from another provider\r\n", i)
		case 1:
			fmt.Fprintf(&csv, "+254 722 0%05d,\r\n", i)
		default:
			fmt.Fprintf(&csv, "2547220%05d\r\n", i)
		}
	}
	csv.WriteString("0722000001\r\nnot a number,x\r\n12345\r\n0722000002,\"" + strings.Repeat("r", 201) + "\"\r\n")
	r := n.importSuppressions(a, csv.Bytes())
	res := r.json(t)
	if r.Status != 200 || res["added"] != 99_999.0 || res["already_suppressed"] != 2.0 || res["invalid"] != 3.0 ||
		len(res["errors"].([]any)) != 3 {
		t.Fatalf("import = %d %v; want 99,999 added, 2 already, 3 invalid", r.Status, res)
	}
	if e := res["errors"].([]any)[0].(map[string]any); e["line"] != 100_003.0 || e["value"] != "not a number" {
		t.Errorf("first refused row %v; want line 100,003", e)
	}
	if got := n.suppressed(a); got != 100_000 {
		t.Errorf("%d numbers on the list; want 100,000", got)
	}
	send := n.send(a, map[string]any{"recipients": []string{"0722000000", "0722099999", "0722050000", "0733000001"}, "message": "Hi"})
	if got := send.json(t); send.Status != 202 || got["suppressed_count"] != 3.0 || got["recipients_count"] != 1.0 {
		t.Errorf("send right after the import = %d %v; want 3 left out", send.Status, got)
	}
	if r := n.importSuppressions(a, []byte("\x00\x01binary")); r.Status != 200 || r.json(t)["invalid"] == 0.0 {
		t.Errorf("binary file = %d %s; want its rows refused", r.Status, r.Body)
	}
	// A NUL in a reason is that row's error; the file's other rows are added (it was a 500).
	r = n.importSuppressions(a, []byte("phone,reason\n0733100001,fine\n0733100002,bad\x00reason\n"))
	if got := r.json(t); r.Status != 200 || got["added"] != 1.0 || got["invalid"] != 1.0 {
		t.Errorf("a reason with a NUL = %d %s; want 1 added and 1 invalid", r.Status, r.Body)
	}
}
