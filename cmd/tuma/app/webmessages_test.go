package app_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

var messageLinkRE = regexp.MustCompile(`href="/app/messages/([0-9a-f-]{36})"`)

// After a send the form lands on the send's messages with a banner; each message's page
// shows its timeline up to its delivery, and the live check asks the network; another
// tenant's message is a 404 page, and a bad filter is shown beside the filter.
func TestMessagesPages(t *testing.T) {
	n := startNode(t, fastSims)
	a, other := n.register("messages-pages@example.com"), n.register("messages-other@example.com")
	n.credit(a, "100")
	p := n.pages(t)
	p.signIn(a)

	form := p.sendForm("0712000001\n0733000002", "Karibu <b>sana</b>")
	form.Set("reference", "order-77")
	loc := p.post("/app/send", "/app/send", form).expect(t, http.StatusSeeOther, "").Header.Get("Location")
	r := p.get(loc).expect(t, http.StatusOK, "")
	for _, want := range []string{"Sent to 2 numbers: 2 SMS, KES", "254712000001</a>", "254733000002</a>", "(Airtel)", "Reference order-77", "Karibu &lt;b&gt;sana&lt;/b&gt;"} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("the send's messages do not show %q:\n%.3000s", want, r.Body)
		}
	}
	pageSecure(t, loc, r)
	ids := messageLinkRE.FindAllStringSubmatch(r.Body, -1)
	if len(ids) != 2 {
		t.Fatalf("%d message links; want 2", len(ids))
	}
	id := ids[0][1]

	// Both reach delivered (the simulated networks report it), and the timeline shows it.
	deadline := time.Now().Add(30 * time.Second)
	for len(messageLinkRE.FindAllString(p.get("/app/messages?status=delivered&reference=order-77").Body, -1)) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the messages are not delivered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for {
		body := p.get("/app/messages/"+id).expect(t, http.StatusOK, "").Body
		if strings.Contains(body, "<strong>Delivered</strong>") {
			for _, want := range []string{"<strong>Accepted</strong>", "<strong>Sent</strong>", "The phone received it", "Your reference", "order-77"} {
				if !strings.Contains(body, want) {
					t.Errorf("the message's page does not show %q:\n%.3000s", want, body)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the message is not delivered:\n%.3000s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Filters: by status, network, dates, reference; a bad one is shown beside its field.
	if body := p.get("/app/messages?status=failed").expect(t, http.StatusOK, "").Body; !strings.Contains(body, "No messages match these filters") {
		t.Errorf("no failed messages:\n%.3000s", body)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	for query, want := range map[string]int{"network=airtel": 1, "network=telkom": 0, "from=" + today + "&to=" + today: 2,
		"to=" + yesterday: 0, "from=" + today + "&network=safaricom&reference=order-77": 1} {
		body := p.get("/app/messages?"+query).expect(t, http.StatusOK, "").Body
		if got := len(messageLinkRE.FindAllString(body, -1)); got != want {
			t.Errorf("?%s lists %d messages; want %d:\n%.3000s", query, got, want, body)
		}
	}
	if r := p.get("/app/messages?to=yesterday"); r.Status != http.StatusBadRequest || !strings.Contains(r.Body, `id="f-to-error"`) ||
		!strings.Contains(r.Body, "must be a date, YYYY-MM-DD") {
		t.Errorf("a bad date = %d:\n%.3000s", r.Status, r.Body)
	}
	if r := p.get("/app/messages?from=" + today + "&to=" + yesterday); r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, "must not be before from") {
		t.Errorf("a range ending before it starts = %d:\n%.3000s", r.Status, r.Body)
	}
	// The same filters in the API's list.
	if m := n.do("GET", "/sms/messages?network=airtel&from="+today+"&to="+today, nil, key(a)...).json(t); m["total"] != 1.0 {
		t.Errorf("GET /sms/messages?network=airtel = %v", m)
	}
	n.do("GET", "/sms/messages?from=today", nil, key(a)...).problem(t, http.StatusBadRequest, "malformed_query")
	n.do("GET", "/sms/messages?from="+today+"&to="+yesterday, nil, key(a)...).problem(t, http.StatusUnprocessableEntity, "validation_failed")
	n.do("GET", "/sms/messages?network=orange", nil, key(a)...).problem(t, http.StatusUnprocessableEntity, "validation_failed")
	if r := p.get("/app/messages?status=bogus"); r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `id="f-status-error"`) {
		t.Errorf("a bad status filter = %d:\n%.3000s", r.Status, r.Body)
	}
	if r := p.get("/app/messages?cursor=forged"); r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "Show the latest messages") {
		t.Errorf("a forged cursor = %d:\n%.3000s", r.Status, r.Body)
	}

	// Another tenant: the message's page and its check are 404 pages, and its list is empty.
	q := n.pages(t)
	q.signIn(other)
	if r := q.get("/app/messages/" + id); r.Status != http.StatusNotFound {
		t.Errorf("another tenant's message = %d; want 404", r.Status)
	}
	if r := q.post("/app/messages", "/app/messages/"+id+"/check", nil); r.Status != http.StatusNotFound {
		t.Errorf("another tenant's message check = %d; want 404", r.Status)
	}
	if body := q.get(loc).Body; messageLinkRE.MatchString(body) {
		t.Errorf("another tenant sees the messages:\n%.2000s", body)
	}
	if r := p.get("/app/messages/not-an-id"); r.Status != http.StatusNotFound && r.Status != http.StatusBadRequest {
		t.Errorf("a malformed id = %d", r.Status)
	}
}

// The live check asks the network about a message still waiting for its report, and says
// what it answered; without a token it is refused.
func TestMessagesPageLiveCheck(t *testing.T) {
	n := startNode(t, withEnv(fastSims, "TUMA_SIM_RECEIPT_DELAY", "1h"))
	a := n.register("messages-check@example.com")
	n.credit(a, "100")
	p := n.pages(t)
	p.signIn(a)
	if r := n.send(a, map[string]any{"recipients": []string{"0712000001"}, "message": "Hello"}); r.Status != 202 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	var id string
	deadline := time.Now().Add(30 * time.Second)
	for {
		body := p.get("/app/messages?status=sent").Body
		if m := messageLinkRE.FindStringSubmatch(body); m != nil {
			id = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sent message:\n%.2000s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	body := p.get("/app/messages/" + id).Body
	if !strings.Contains(body, "Waiting for the delivery report") || !strings.Contains(body, "Check delivery now") {
		t.Fatalf("a sent message's page:\n%.3000s", body)
	}
	if r := p.do("POST", "/app/messages/"+id+"/check", nil); r.Status != http.StatusForbidden {
		t.Errorf("a check without its token = %d; want 403", r.Status)
	}
	r := p.post("/app/messages/"+id, "/app/messages/"+id+"/check", nil).expect(t, http.StatusSeeOther, "/app/messages/"+id)
	_ = r
	body = p.get("/app/messages/" + id).Body
	if !strings.Contains(body, "Checked with Safaricom just now:") {
		t.Errorf("after the check:\n%.3000s", body)
	}

	// The list in pages, newest first, by cursor; the filter carried from page to page.
	if r := n.send(a, map[string]any{"recipients": numbers(24, 100), "message": "Page me"}); r.Status != 202 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	first := p.get("/app/messages").expect(t, http.StatusOK, "").Body
	older := regexp.MustCompile(`href="(/app/messages\?cursor=[^"]+)">Older messages`).FindStringSubmatch(first)
	if got := len(messageLinkRE.FindAllString(first, -1)); got != 20 || older == nil || strings.Contains(first, "Newest messages") {
		t.Fatalf("the first page lists %d messages:\n%.3000s", got, first)
	}
	second := p.get(strings.ReplaceAll(older[1], "&amp;", "&")).expect(t, http.StatusOK, "").Body
	if got := len(messageLinkRE.FindAllString(second, -1)); got != 5 || !strings.Contains(second, "Newest messages") || strings.Contains(second, "Older messages") {
		t.Errorf("the second page lists %d messages:\n%.3000s", got, second)
	}
	seen := map[string]bool{}
	for _, m := range append(messageLinkRE.FindAllStringSubmatch(first, -1), messageLinkRE.FindAllStringSubmatch(second, -1)...) {
		seen[m[1]] = true
	}
	if len(seen) != 25 || !seen[id] {
		t.Errorf("the two pages list %d messages in all; want the 25", len(seen))
	}
}
