package app_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// mo is a subscriber's message through the simulator: it must be taken (201).
func (n *node) mo(from, to, text string) map[string]any {
	n.t.Helper()
	r := n.do("POST", "/admin/sim/inbound", map[string]any{"from": from, "to": to, "text": text}, adminAuth()...)
	if r.Status != 201 {
		n.t.Fatalf("sim inbound %q from %s to %s = %d %s", text, from, to, r.Status, r.Body)
	}
	return r.json(n.t)
}

// inbox is the texts of a's inbound messages, newest first, every page walked.
func (n *node) inbox(a account, query string) []string {
	n.t.Helper()
	var texts []string
	next := "/sms/inbound?page_size=2&" + query
	for range 100 {
		r := n.do("GET", next, nil, key(a)...)
		if r.Status != 200 {
			n.t.Fatalf("GET %s = %d %s", next, r.Status, r.Body)
		}
		m := r.json(n.t)
		for _, row := range m["data"].([]any) {
			texts = append(texts, row.(map[string]any)["text"].(string))
		}
		c, ok := m["next_cursor"].(string)
		if !ok {
			return texts
		}
		next = "/sms/inbound?page_size=2&" + query + "&cursor=" + url.QueryEscape(c)
	}
	n.t.Fatal("the inbox never ended")
	return nil
}

// An operator gives a number to one account only; messages to it are that account's alone,
// filtered by sender in any form; one to a number no account has is kept unrouted and listed
// to no one. Bad input is a 422 naming the field.
func TestInboundNumbersAndInbox(t *testing.T) {
	n := startNode(t, noRateLimit)
	a, b := n.register("inbound-a@example.com"), n.register("inbound-b@example.com")

	r := n.do("POST", "/admin/accounts/"+a.ID+"/inbound-numbers", map[string]any{"number": "22384", "network": "safaricom"}, adminAuth()...)
	if r.Status != 201 {
		t.Fatalf("assign = %d %s", r.Status, r.Body)
	}
	if m := r.json(t); m["number"] != "22384" || m["network"] != "safaricom" || m["account_id"] != a.ID {
		t.Errorf("assigned %v", m)
	}
	if r := n.do("POST", "/admin/accounts/"+a.ID+"/inbound-numbers", map[string]any{"number": "22384", "network": "airtel"}, adminAuth()...); r.Status != 200 || r.json(t)["network"] != "safaricom" {
		t.Errorf("assign again = %d %s; want 200 as it was", r.Status, r.Body)
	}
	n.do("POST", "/admin/accounts/"+b.ID+"/inbound-numbers", map[string]any{"number": "22384", "network": "safaricom"}, adminAuth()...).
		problem(t, 409, "inbound_number_taken")
	r = n.do("POST", "/admin/accounts/"+b.ID+"/inbound-numbers", map[string]any{"number": "0700 123 456", "network": "safaricom"}, adminAuth()...)
	if r.Status != 201 || r.json(t)["number"] != "+254700123456" {
		t.Errorf("assign a long number = %d %s", r.Status, r.Body)
	}
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"number": "12", "network": "safaricom"}, "number"},
		{map[string]any{"number": "123456789", "network": "safaricom"}, "number"},
		{map[string]any{"number": "22-384", "network": "safaricom"}, "number"},
		{map[string]any{"network": "safaricom"}, "number"},
		{map[string]any{"number": "22385"}, "network"},
		{map[string]any{"number": "22385", "network": "orange"}, "network"},
	} {
		namesField(t, n.do("POST", "/admin/accounts/"+a.ID+"/inbound-numbers", c.body, adminAuth()...).problem(t, 422, "validation_failed"), c.field)
	}
	n.do("POST", "/admin/accounts/0190a0a0-0000-7000-8000-000000000000/inbound-numbers", map[string]any{"number": "22385", "network": "safaricom"}, adminAuth()...).
		problem(t, 404, "not_found")
	n.do("POST", "/admin/accounts/"+a.ID+"/inbound-numbers", map[string]any{"number": "22385", "network": "safaricom"}, key(a)...).
		problem(t, 401, "unauthenticated")

	first := n.mo("0712345678", "22384", "hello")
	if first["from"] != "+254712345678" || first["to"] != "22384" || first["network"] != "safaricom" || first["keyword"] != nil ||
		first["account_id"] != a.ID || first["received_at"] == nil {
		t.Errorf("sim inbound = %v", first)
	}
	n.mo("+254 733 111 222", "22384", "from airtel")
	n.mo("254712345678", "22384", "again")
	n.mo("0712345678", "+254700123456", "to b's long number")
	unrouted := n.mo("0712345678", "99999", "to nobody")
	if unrouted["account_id"] != nil {
		t.Errorf("unrouted = %v; want account_id null", unrouted)
	}
	if got := n.inbox(a, ""); !slices.Equal(got, []string{"again", "from airtel", "hello"}) {
		t.Errorf("a's inbox = %v", got)
	}
	if got := n.inbox(b, ""); !slices.Equal(got, []string{"to b's long number"}) {
		t.Errorf("b's inbox = %v", got)
	}
	for _, from := range []string{"0712345678", "+254712345678", "254 712 345 678"} {
		if got := n.inbox(a, "from="+url.QueryEscape(from)); !slices.Equal(got, []string{"again", "hello"}) {
			t.Errorf("a's inbox from %s = %v", from, got)
		}
	}
	if got := n.sqlInt(`SELECT count(*) FROM inbound_messages WHERE account_id IS NULL AND text = 'to nobody'`); got != 1 {
		t.Errorf("%d unrouted messages stored; want 1", got)
	}
	c := n.do("GET", "/sms/inbound?page_size=1", nil, key(a)...).json(t)["next_cursor"].(string)
	n.do("GET", "/sms/inbound?page_size=1&cursor="+url.QueryEscape(c), nil, key(b)...).problem(t, 400, "malformed_query")
	n.do("GET", "/sms/inbound?page_size=1&from=0733111222&cursor="+url.QueryEscape(c), nil, key(a)...).problem(t, 400, "malformed_query")
	namesField(t, n.do("GET", "/sms/inbound?from=0812345678", nil, key(a)...).problem(t, 422, "validation_failed"), "from")
	n.do("GET", "/sms/inbound?page=2", nil, key(a)...).problem(t, 400, "malformed_query")
	n.do("GET", "/sms/inbound", nil).problem(t, 401, "unauthenticated")

	// The simulator's bad input; odd text is taken as it comes.
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"from": "12345", "to": "22384", "text": "x"}, "from"},
		{map[string]any{"to": "22384", "text": "x"}, "from"},
		{map[string]any{"from": "0712345678", "to": "ab", "text": "x"}, "to"},
		{map[string]any{"from": "0712345678", "text": "x"}, "to"},
		{map[string]any{"from": "0712345678", "to": "22384", "text": strings.Repeat("é", 1001)}, "text"},
		{map[string]any{"from": "0712345678", "to": "22384", "network": "orange"}, "network"},
		{map[string]any{"from": "0744123456", "to": "22384", "text": "x"}, "network"}, // no network Tuma reaches
	} {
		namesField(t, n.do("POST", "/admin/sim/inbound", c.body, adminAuth()...).problem(t, 422, "validation_failed"), c.field)
	}
	n.do("POST", "/admin/sim/inbound", map[string]any{"from": "0712345678", "to": "22384"}, key(a)...).problem(t, 401, "unauthenticated")
	for _, text := range []string{"", strings.Repeat("é", 1000)} {
		if m := n.mo("0712000001", "22384", text); m["text"] != text {
			t.Errorf("text of %d characters stored as %.20q", len([]rune(text)), m["text"])
		}
	}
	// Bytes that are not UTF-8 in the JSON are read as U+FFFD, then stored.
	r = n.do("POST", "/admin/sim/inbound", "{\"from\":\"0712000002\",\"to\":\"22384\",\"text\":\"bad \xff bytes\"}", adminAuth()...)
	if r.Status != 201 || r.json(t)["text"] != "bad \uFFFD bytes" {
		t.Errorf("invalid UTF-8 = %d %s", r.Status, r.Body)
	}
	if m := n.do("POST", "/admin/sim/inbound", map[string]any{"from": "0744123456", "to": "22384", "network": "telkom"}, adminAuth()...); m.Status != 201 {
		t.Errorf("a sender of no network Tuma reaches, with network = %d %s", m.Status, m.Body)
	}
}

// STOP suppresses the sender for the account (source keyword) and opts out its contact, and
// the very next send leaves the number out; START lets the next one include it again, but
// never lifts a suppression the account made itself. Webhooks hear of all of it.
func TestInboundKeywords(t *testing.T) {
	n := startNode(t, withEnv(hookEnv(), "TUMA_RATE_LIMIT_RPS", "0"))
	a := n.register("inbound-stop@example.com")
	n.credit(a, "1000")
	if r := n.do("POST", "/admin/accounts/"+a.ID+"/inbound-numbers", map[string]any{"number": "22384", "network": "safaricom"}, adminAuth()...); r.Status != 201 {
		t.Fatalf("assign = %d %s", r.Status, r.Body)
	}
	rc := newReceiver(t, ok204)
	n.hook(a, rc.srv.URL, "message.received", "optout.created", "optout.removed")
	if r := n.do("POST", "/contacts", map[string]any{"phone": "0712345678", "first_name": "Wanjiku"}, key(a)...); r.Status != 201 {
		t.Fatalf("add contact = %d %s", r.Status, r.Body)
	}

	m := n.mo("0712345678", "22384", "stop please")
	if m["keyword"] != "STOP" {
		t.Errorf("keyword = %v; want STOP", m["keyword"])
	}
	list := n.do("GET", "/suppressions", nil, key(a)...).json(t)["data"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["phone"] != "+254712345678" || list[0].(map[string]any)["source"] != "keyword" {
		t.Errorf("suppressions after STOP = %v", list)
	}
	if got := n.sqlInt(`SELECT count(*) FROM contacts WHERE account_id = $1 AND opted_out_at IS NOT NULL`, a.ID); got != 1 {
		t.Errorf("%d contacts opted out; want the one of that number", got)
	}
	if r := n.send(a, map[string]any{"recipients": []string{"0712345678", "0712999999"}, "message": "hi"}); r.Status != 202 || r.json(t)["suppressed_count"] != 1.0 {
		t.Errorf("send after STOP = %d %s; want it left out", r.Status, r.Body)
	}

	// The very next send, every time: STOP from a number no contact has, then a send to it.
	for i := range 20 {
		phone := fmt.Sprintf("0722%06d", i)
		n.mo(phone, "22384", "ACHA")
		r := n.send(a, map[string]any{"recipients": []string{phone, "0712999999"}, "message": "hi"})
		if r.Status != 202 || r.json(t)["suppressed_count"] != 1.0 || r.json(t)["recipients_count"] != 1.0 {
			t.Fatalf("send %d right after STOP = %d %s; want the number left out", i, r.Status, r.Body)
		}
		n.mo(phone, "22384", "Start")
		r = n.send(a, map[string]any{"recipients": []string{phone, "0712999999"}, "message": "hi"})
		if r.Status != 202 || r.json(t)["suppressed_count"] != 0.0 || r.json(t)["recipients_count"] != 2.0 {
			t.Fatalf("send %d right after START = %d %s; want the number included", i, r.Status, r.Body)
		}
	}

	// START does not lift what the account suppressed itself.
	if r := n.do("POST", "/suppressions", map[string]any{"phone": "0733000111"}, key(a)...); r.Status != 201 {
		t.Fatalf("suppress = %d %s", r.Status, r.Body)
	}
	n.mo("0733000111", "22384", "START")
	if r := n.send(a, map[string]any{"recipients": []string{"0733000111", "0712999999"}, "message": "hi"}); r.Status != 202 || r.json(t)["suppressed_count"] != 1.0 {
		t.Errorf("send after START over an api suppression = %d %s; want it still left out", r.Status, r.Body)
	}

	// The webhook heard the first STOP: its message and its opt-out.
	var received, created map[string]any
	rc.waitFor("message.received and optout.created of the first STOP", func(ds []delivery) bool {
		for _, d := range ds {
			for _, e := range d.Events {
				switch {
				case e.Type == "message.received" && e.Data["id"] == m["id"]:
					received = e.Data
				case e.Type == "optout.created" && e.Data["phone"] == "+254712345678":
					created = e.Data
				}
			}
		}
		return received != nil && created != nil
	})
	if received["from"] != "+254712345678" || received["to"] != "22384" || received["text"] != "stop please" ||
		received["keyword"] != "STOP" || received["network"] != "safaricom" || received["received_at"] != m["received_at"] {
		t.Errorf("message.received data = %v; want the message %v", received, m)
	}
	if created["source"] != "keyword" || created["created_at"] == nil {
		t.Errorf("optout.created data = %v", created)
	}
	rc.waitFor("an optout.removed", func(ds []delivery) bool {
		for _, d := range ds {
			for _, e := range d.Events {
				if e.Type == "optout.removed" && e.Data["source"] == "keyword" {
					return true
				}
			}
		}
		return false
	})
}

// STOP then START: the number's contact is back among the active ones, so its groups'
// campaigns reach it again, as the START's confirmation says; a contact the account opted out
// itself stays out whatever the number sends.
func TestStartOptsTheContactBackIn(t *testing.T) {
	n := startNode(t, withEnv(fastSims, "TUMA_RATE_LIMIT_RPS", "0"))
	a := n.register("start-contact@example.com")
	n.credit(a, "100")
	if r := n.do("POST", "/admin/accounts/"+a.ID+"/inbound-numbers", map[string]any{"number": "22384", "network": "safaricom"}, adminAuth()...); r.Status != 201 {
		t.Fatalf("assign = %d %s", r.Status, r.Body)
	}
	g := n.group(a, "Club")
	n.contact(a, g, "0712345678", "Wanjiku", "")
	n.contact(a, g, "0712345679", "Otieno", "")
	deleted := n.do("GET", "/contacts?search=0712345679", nil, key(a)...).json(t)["data"].([]any)[0].(map[string]any)["id"].(string)
	if r := n.do("DELETE", "/contacts/"+deleted, nil, key(a)...); r.Status != 204 {
		t.Fatalf("delete = %d %s", r.Status, r.Body)
	}
	for _, phone := range []string{"0712345678", "0712345679"} {
		n.mo(phone, "22384", "STOP")
		n.mo(phone, "22384", "START")
	}
	if _, total := n.contacts(a, "?group_id="+g); total != 1 {
		t.Errorf("the group has %v active contacts after STOP and START; want 1, the one the account did not delete", total)
	}
	r := n.do("POST", "/campaigns", map[string]any{"name": "Back", "message": "Hi {first_name}", "group_id": g}, key(a)...)
	if r.Status != 201 || r.json(t)["total_recipients"] != 1.0 {
		t.Errorf("a campaign to the group after STOP and START = %d %s; want 1 recipient", r.Status, r.Body)
	}
}
