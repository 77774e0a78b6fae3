package app_test

import (
	"net/url"
	"strings"
	"testing"
)

// A send's reference is the caller's own correlation id: stored on every message of its job,
// shown in the message object (null without one), filterable, and replayed as it was given.
func TestSendReference(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("reference@example.com")
	n.credit(a, "100")
	ref := "order 42/B&c=d" // any printable ASCII, characters a query string must escape included
	body := map[string]any{"recipients": numbers(3, 0), "message": "your order", "reference": ref}
	first := n.send(a, body, "Idempotency-Key", "ref-1")
	if first.Status != 202 {
		t.Fatalf("send with a reference = %d %s", first.Status, first.Body)
	}
	again := n.send(a, body, "Idempotency-Key", "ref-1")
	if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) {
		t.Errorf("replay = %s; want the first body %s", again.Body, first.Body)
	}
	n.send(a, map[string]any{"recipients": numbers(2, 10), "message": "no reference"})
	n.send(a, map[string]any{"recipients": numbers(1, 20), "message": "another", "reference": "order 43"})

	list := n.do("GET", "/sms/messages?reference="+url.QueryEscape(ref), nil, key(a)...).json(t)
	if list["total"] != 3.0 {
		t.Fatalf("messages with the reference = %v; want its 3", list)
	}
	for _, m := range list["data"].([]any) {
		if m := m.(map[string]any); m["reference"] != ref || m["job_id"] != first.json(t)["job_id"] {
			t.Errorf("message %v; want reference %q", m, ref)
		}
	}
	all := n.do("GET", "/sms/messages", nil, key(a)...).json(t)["data"].([]any)
	nulls := 0
	for _, m := range all {
		if v, ok := m.(map[string]any)["reference"]; ok && v == nil {
			nulls++
		}
	}
	if len(all) != 6 || nulls != 2 {
		t.Errorf("%d messages, %d with reference null; want 6 and 2", len(all), nulls)
	}
	one := n.do("GET", "/sms/messages/"+all[2].(map[string]any)["id"].(string), nil, key(a)...).json(t)
	if _, ok := one["reference"]; !ok {
		t.Errorf("message object %v has no reference member", one)
	}
	// Filters combine; a cursor is bound to its reference; pages by cursor see each once.
	if l := n.do("GET", "/sms/messages?status=failed&reference="+url.QueryEscape(ref), nil, key(a)...).json(t); l["total"] != 0.0 {
		t.Errorf("failed with the reference = %v; want none", l)
	}
	if ids := n.pageAll(t, "/sms/messages?page_size=2&reference="+url.QueryEscape(ref), a); len(ids) != 3 {
		t.Errorf("paging by cursor with the reference saw %d; want 3", len(ids))
	}
	page := n.do("GET", "/sms/messages?page_size=1&reference="+url.QueryEscape(ref), nil, key(a)...).json(t)
	cur := url.QueryEscape(page["next_cursor"].(string))
	n.do("GET", "/sms/messages?page_size=1&reference=order%2043&cursor="+cur, nil, key(a)...).problem(t, 400, "malformed_query")
	n.do("GET", "/sms/messages?page_size=1&cursor="+cur, nil, key(a)...).problem(t, 400, "malformed_query")
	if l := n.do("GET", "/sms/messages?reference=nobody", nil, key(a)...).json(t); l["total"] != 0.0 {
		t.Errorf("an unknown reference = %v; want none", l)
	}
	// Another tenant's reference shows nothing.
	b := n.register("reference-b@example.com")
	if l := n.do("GET", "/sms/messages?reference="+url.QueryEscape(ref), nil, key(b)...).json(t); l["total"] != 0.0 {
		t.Errorf("another account's view of the reference = %v", l)
	}

	for _, bad := range []string{"", strings.Repeat("r", 65), "café", "tab\there", "new\nline"} {
		p := n.send(a, map[string]any{"recipients": numbers(1, 0), "message": "hi", "reference": bad}).problem(t, 422, "validation_failed")
		if fe := p["errors"].([]any)[0].(map[string]any); fe["field"] != "reference" {
			t.Errorf("reference %q: errors %v; want reference named", bad, p["errors"])
		}
	}
	n.send(a, `{"recipients":["0712000001"],"message":"hi","reference":42}`).problem(t, 422, "validation_failed")
	for _, bad := range []string{strings.Repeat("r", 65), "caf%C3%A9", "a%09b"} {
		n.do("GET", "/sms/messages?reference="+bad, nil, key(a)...).problem(t, 422, "validation_failed")
	}
	if l := n.do("GET", "/sms/messages?reference=", nil, key(a)...).json(t); l["total"] != 6.0 {
		t.Errorf("an empty reference filter = total %v; want no filter (6)", l["total"])
	}
	if jobs := n.sqlInt(`SELECT count(*) FROM jobs`); jobs != 3 {
		t.Errorf("%d jobs; want the 3 sends (refused ones write nothing)", jobs)
	}
}

// A campaign's reference is shown on the campaign and on each of its messages, and finds them.
func TestCampaignReference(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("campaign-reference@example.com")
	n.credit(a, "100")
	g := n.group(a, "Customers")
	n.contact(a, g, "0712000001", "Jo", "Kamau")
	n.contact(a, g, "0712000002", "Ann", "Otieno")
	body := map[string]any{"name": "Promo", "message": "Hi {first_name}", "group_id": g, "reference": "promo-2026-11"}
	r := n.do("POST", "/campaigns", body, append(key(a), "Idempotency-Key", "camp-1")...)
	if r.Status != 201 || r.json(t)["reference"] != "promo-2026-11" {
		t.Fatalf("create with a reference = %d %s", r.Status, r.Body)
	}
	id := r.json(t)["id"].(string)
	if again := n.do("POST", "/campaigns", body, append(key(a), "Idempotency-Key", "camp-1")...); again.json(t)["reference"] != "promo-2026-11" {
		t.Errorf("replay = %s", again.Body)
	}
	if c := n.campaignDone(a, id); c["reference"] != "promo-2026-11" {
		t.Errorf("campaign = %v", c)
	}
	l := n.do("GET", "/sms/messages?reference=promo-2026-11", nil, key(a)...).json(t)
	if l["total"] != 2.0 {
		t.Fatalf("messages with the campaign's reference = %v; want 2", l)
	}
	for _, m := range l["data"].([]any) {
		if m := m.(map[string]any); m["campaign_id"] != id || m["reference"] != "promo-2026-11" {
			t.Errorf("message %v", m)
		}
	}
	plain := n.do("POST", "/campaigns", map[string]any{"name": "Plain", "message": "Hi", "group_id": g}, key(a)...).json(t)
	if v, ok := plain["reference"]; !ok || v != nil {
		t.Errorf("campaign without a reference = %v; want reference null", plain)
	}
	if list := n.do("GET", "/campaigns", nil, key(a)...).json2(t); list[1].(map[string]any)["reference"] != "promo-2026-11" {
		t.Errorf("campaign list = %v", list)
	}
	p := n.do("POST", "/campaigns", map[string]any{"name": "Bad", "message": "Hi", "group_id": g, "reference": strings.Repeat("x", 65)}, key(a)...).
		problem(t, 422, "validation_failed")
	if p["errors"].([]any)[0].(map[string]any)["field"] != "reference" {
		t.Errorf("a 65-character reference: %v", p["errors"])
	}
	p = n.do("POST", "/campaigns", map[string]any{"name": "Long", "message": strings.Repeat("a", 919), "group_id": g}, key(a)...).
		problem(t, 422, "validation_failed")
	if fe := p["errors"].([]any)[0].(map[string]any); fe["field"] != "message" || !strings.Contains(fe["message"].(string), "the company prefix is added on top") {
		t.Errorf("a 919-character campaign message: %v", fe)
	}
}
