package app_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hookForm is the create or edit form's fields.
func hookForm(u, description string, events ...string) url.Values {
	return url.Values{"url": {u}, "events": events, "description": {description}, "batch_size": {"1"}}
}

var (
	hookIDRE = regexp.MustCompile(`action="/app/developers/webhooks/([0-9a-f-]{36})/test"`)
	// The page escapes a '+' in the base64 as &#43;: read the element, then unescape it.
	secretRE   = regexp.MustCompile(`id="secret">(whsec_[^<]+)</code>`)
	deliveryRE = regexp.MustCompile(`action="/app/developers/webhooks/[0-9a-f-]{36}/deliveries/([0-9a-f-]{36})/retry"`)
)

// createdHook is the id of the endpoint a create form's answer shows, with its secret.
func createdHook(t *testing.T, r page) (id, secret string) {
	t.Helper()
	m := hookIDRE.FindStringSubmatch(r.Body)
	secret = shownSecret(r.Body)
	if r.Status != http.StatusCreated || m == nil || secret == "" {
		t.Fatalf("create = %d; want 201 with the endpoint and its secret:\n%.3000s", r.Status, r.Body)
	}
	return m[1], secret
}

// shownSecret is the whsec_ secret a page shows, as a person would copy it; "" when none.
func shownSecret(body string) string {
	m := secretRE.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// The create form shows the secret once, with how to check a signature; refusals (a URL the
// policy refuses, no events, the eleventh endpoint) are said beside their field and store
// nothing; what a tenant wrote is shown escaped; the settings and secret roll run the API's
// rules; a form without its CSRF token changes nothing.
func TestDashboardWebhooksCreateOnceAndRefusals(t *testing.T) {
	n := startNode(t, nil) // TUMA_WEBHOOK_ALLOW_PRIVATE off: https to public addresses only
	a := n.register("hookpages@example.com")
	p := n.pages(t)
	p.signIn(a)
	const list = "/app/developers/webhooks"
	if r := p.get(list); r.Status != 200 || !strings.Contains(r.Body, "No endpoints yet") || !strings.Contains(r.Body, `aria-current="page">Developers`) {
		t.Fatalf("empty list = %d:\n%.3000s", r.Status, r.Body)
	}
	count := func() int64 { return n.sqlInt(`SELECT count(*) FROM webhook_endpoints WHERE account_id = $1`, a.ID) }

	bad := p.post(list, list, hookForm("http://hooks.example.com/h", "", "*"))
	if bad.Status != http.StatusUnprocessableEntity || !strings.Contains(bad.Body, `id="f-url-error"`) || !strings.Contains(bad.Body, "must use https") ||
		!strings.Contains(bad.Body, `value="http://hooks.example.com/h"`) {
		t.Errorf("an http URL = %d:\n%.4000s", bad.Status, bad.Body)
	}
	if r := p.post(list, list, hookForm("https://93.184.216.34/h", "")); r.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(r.Body, `id="f-events-error"`) || !strings.Contains(r.Body, "must name at least one event type") {
		t.Errorf("no events = %d:\n%.4000s", r.Status, r.Body)
	}
	if r := p.post(list, list, url.Values{"url": {"https://93.184.216.34/h"}, "events": {"*"}, "batch_size": {"lots"}}); r.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(r.Body, `id="f-batch_size-error"`) {
		t.Errorf("a batch size that is no number = %d:\n%.4000s", r.Status, r.Body)
	}
	if got := count(); got != 0 {
		t.Fatalf("%d endpoints after refused forms; want 0", got)
	}

	// Created: the secret once, escaped description; never again on a reload.
	xss := `<script>alert(1)</script> orders`
	created := p.post(list, list, hookForm("https://93.184.216.34/h", xss, "message.sent", "message.failed"))
	id, secret := createdHook(t, created)
	for _, want := range []string{"Copy it now: it is not shown again", "webhook-signature", "webhook-timestamp", "&lt;script&gt;alert(1)&lt;/script&gt; orders", "message.sent, message.failed"} {
		if !strings.Contains(created.Body, want) {
			t.Errorf("the created page does not show %q", want)
		}
	}
	detail := p.get(list + "/" + id)
	if detail.Status != 200 || strings.Contains(detail.Body, "whsec_") || strings.Contains(detail.Body, secret) || strings.Contains(detail.Body, "<script>alert") ||
		!strings.Contains(detail.Body, "&lt;script&gt;alert(1)&lt;/script&gt; orders") || !strings.Contains(detail.Body, "No deliveries yet") {
		t.Errorf("the endpoint's page after the create = %d (the secret must not show again):\n%.4000s", detail.Status, detail.Body)
	}
	if r := p.get(list); strings.Contains(r.Body, "whsec_") || strings.Contains(r.Body, "<script>alert") || !strings.Contains(r.Body, "&lt;script&gt;alert(1)&lt;/script&gt; orders") {
		t.Errorf("the list shows the secret or markup:\n%.4000s", r.Body)
	}
	for _, path := range []string{list, list + "/" + id} {
		r := p.get(path)
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") ||
			strings.Contains(r.Body, " style=") || strings.Contains(r.Body, "<script>") {
			t.Errorf("%s: CSP %q, or inline style or script", path, csp)
		}
	}

	// Settings: refused as the API refuses, then saved; disabled, a test event waits.
	here := list + "/" + id
	if r := p.post(here, here, hookForm("https://localhost/h", "x", "*")); r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `id="f-url-error"`) {
		t.Errorf("a loopback URL = %d:\n%.4000s", r.Status, r.Body)
	}
	if got := n.sqlInt(`SELECT count(*) FROM webhook_endpoints WHERE id = $1 AND url = 'https://93.184.216.34/h'`, id); got != 1 {
		t.Errorf("the refused change changed the endpoint")
	}
	p.post(here, here, hookForm("https://93.184.216.34/other", "paused", "*")).expect(t, http.StatusSeeOther, here)
	if r := p.get(here); !strings.Contains(r.Body, "Saved the endpoint") || !strings.Contains(r.Body, "https://93.184.216.34/other") ||
		!strings.Contains(r.Body, "All events") || !strings.Contains(r.Body, ">Disabled<") {
		t.Errorf("after saving (enabled left unticked):\n%.4000s", r.Body)
	}
	p.post(here, here+"/test", nil).expect(t, http.StatusSeeOther, here)
	log := p.get(here)
	did := deliveryRE.FindStringSubmatch(log.Body)
	if did == nil || !strings.Contains(log.Body, "webhook.test") || !strings.Contains(log.Body, "Pending") {
		t.Fatalf("the log after a test event:\n%.6000s", log.Body)
	}
	if r := p.get(here + "?status=failed"); !strings.Contains(r.Body, "No deliveries of this status") {
		t.Errorf("the failed filter shows:\n%.4000s", r.Body)
	}
	if r := p.get(here + "?status=lost"); r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `id="f-status-error"`) {
		t.Errorf("an unknown status = %d:\n%.4000s", r.Status, r.Body)
	}
	if r := p.get(here + "?cursor=forged"); r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "Start again from its newest page") {
		t.Errorf("a forged cursor = %d:\n%.4000s", r.Status, r.Body)
	}
	p.post(here, here+"/deliveries/"+did[1]+"/retry", url.Values{"status": {"pending"}}).expect(t, http.StatusSeeOther, here+"?status=pending#log")

	// The roll shows the new secret once; an overlap out of range is said beside it.
	if r := p.post(here, here+"/roll-secret", url.Values{"expires_in_seconds": {"604801"}}); r.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(r.Body, `id="f-expires_in_seconds-error"`) || strings.Contains(r.Body, "whsec_") {
		t.Errorf("a week and a second = %d:\n%.4000s", r.Status, r.Body)
	}
	rolled := p.post(here, here+"/roll-secret", url.Values{"expires_in_seconds": {"60"}})
	if s := shownSecret(rolled.Body); rolled.Status != 200 || s == "" || s == secret || !strings.Contains(rolled.Body, "signed with both") {
		t.Errorf("roll = %d:\n%.4000s", rolled.Status, rolled.Body)
	}
	if r := p.get(here); strings.Contains(r.Body, "whsec_") {
		t.Errorf("the rolled secret shows again on a reload")
	}

	// Without the form token nothing changes.
	for path, form := range map[string]url.Values{
		list: hookForm("https://93.184.216.34/x", "", "*"), here: hookForm("https://93.184.216.34/y", "", "*"),
		here + "/delete": {}, here + "/test": {}, here + "/roll-secret": {}, here + "/deliveries/" + did[1] + "/retry": {},
	} {
		if r := p.do("POST", path, form); r.Status != http.StatusForbidden {
			t.Errorf("POST %s without a token = %d; want 403", path, r.Status)
		}
	}
	if got := count(); got != 1 || n.sqlInt(`SELECT count(*) FROM webhook_endpoints WHERE url = 'https://93.184.216.34/other'`) != 1 ||
		n.sqlInt(`SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, id) != 1 {
		t.Errorf("forms without a token changed something: %d endpoints", got)
	}

	// The eleventh endpoint is refused on the form.
	for i := 0; i < 9; i++ {
		n.hook(a, "https://93.184.216.34/h", "*")
	}
	if r := p.post(list, list, hookForm("https://93.184.216.34/11", "", "*")); r.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(r.Body, "at most 10 webhook endpoints") || !strings.Contains(r.Body, `role="alert"`) {
		t.Errorf("the eleventh = %d:\n%.4000s", r.Status, r.Body)
	}
	if got := count(); got != 10 {
		t.Errorf("%d endpoints; want 10", got)
	}

	// Deleted, with a confirmation.
	p.post(here, here+"/delete", nil).expect(t, http.StatusSeeOther, list)
	if r := p.get(list); !strings.Contains(r.Body, "Deleted the endpoint") || p.get(here).Status != http.StatusNotFound {
		t.Errorf("after delete:\n%.3000s", r.Body)
	}
}

// Another tenant's endpoint, and another endpoint's delivery, are 404 on every page and
// action, and change nothing.
func TestDashboardWebhooksOtherTenant(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("owner@example.com")
	id, _ := n.hook(a, "https://93.184.216.34/h", "*")
	if r := n.do("PATCH", "/webhooks/"+id, map[string]any{"enabled": false}, key(a)...); r.Status != 200 {
		t.Fatalf("disable = %d %s", r.Status, r.Body)
	}
	if r := n.do("POST", "/webhooks/"+id+"/test", nil, key(a)...); r.Status != 202 {
		t.Fatalf("test = %d %s", r.Status, r.Body)
	}
	did := n.hookDeliveries(a, id, "")[0]["id"].(string)

	b := n.register("intruder@example.com")
	own, _ := n.hook(b, "https://93.184.216.34/b", "*")
	p := n.pages(t)
	p.signIn(b)
	theirs := "/app/developers/webhooks/" + id
	if r := p.get(theirs); r.Status != http.StatusNotFound {
		t.Errorf("another tenant's endpoint = %d; want 404", r.Status)
	}
	for path, form := range map[string]url.Values{
		theirs: hookForm("https://93.184.216.34/x", "mine", "*"), theirs + "/delete": nil, theirs + "/test": nil,
		theirs + "/roll-secret": {"expires_in_seconds": {"0"}}, theirs + "/deliveries/" + did + "/retry": nil,
		"/app/developers/webhooks/" + own + "/deliveries/" + did + "/retry": nil,
	} {
		if r := p.post("/app/developers/webhooks", path, form); r.Status != http.StatusNotFound {
			t.Errorf("POST %s = %d; want 404", path, r.Status)
		}
	}
	for _, path := range []string{theirs + "/deliveries/" + did, "/app/developers/webhooks/" + own + "/deliveries/" + did} {
		if r := p.get(path); r.Status != http.StatusNotFound || strings.Contains(r.Body, did) {
			t.Errorf("GET %s = %d; want 404 that does not show the delivery", path, r.Status)
		}
	}
	if r := p.get("/app/developers/webhooks"); strings.Contains(r.Body, "93.184.216.34/h") {
		t.Errorf("the intruder's list shows another tenant's endpoint")
	}
	if n.sqlInt(`SELECT count(*) FROM webhook_endpoints WHERE id = $1 AND url = 'https://93.184.216.34/h' AND description = ''`, id) != 1 ||
		n.sqlInt(`SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, id) != 1 {
		t.Errorf("another tenant's forms changed the endpoint or its log")
	}
}

// logRows is the delivery log's rows on the tab, newest first: "status code" each.
func (b *tab) logRows() []string {
	b.t.Helper()
	out := b.eval(`return [...document.querySelectorAll('#log tbody tr')].map(tr =>
		tr.querySelector('[data-label=Status]').innerText.trim() + ' ' + tr.querySelector('[data-label="Last answer"]').innerText.trim().split('\n')[0]).join('|');`)
	if out == "" {
		return nil
	}
	return strings.Split(out, "|")
}

// reloadUntil loads the tab's page again (its address without the fragment) until the log's
// rows satisfy ok, up to 20 s.
func (b *tab) reloadUntil(what string, ok func(rows []string) bool) {
	b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		path, _, _ := strings.Cut(b.path(), "#")
		b.open(path)
		rows := b.logRows()
		if ok(rows) {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("the log of %s never showed %s; it shows %q", path, what, rows)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A person adds an endpoint to a receiver, sends a test event and sees it succeed in the log;
// the receiver fails the next one, which the log shows failed with its 500; once the receiver
// is fixed, Retry delivers it. Every page passes the accessibility check.
func TestDashboardWebhooksInBrowser(t *testing.T) {
	n := startNode(t, hookEnv())
	var broken atomic.Bool
	rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		if broken.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	a := n.register("hookbrowser@example.com")
	b := n.tab(t)
	b.signInAs(a)
	b.open("/app/developers/webhooks")
	b.waitText("No endpoints yet")
	b.check("webhooks-empty")

	b.fill("Endpoint URL", rc.srv.URL+"/tuma")
	b.fill("Description", "Orders <b>system</b>")
	b.submit("Add endpoint")
	b.waitText("Copy it now: it is not shown again.")
	if s := b.eval(`return document.getElementById('secret').innerText;`); !strings.HasPrefix(s, "whsec_") {
		t.Errorf("the secret shown is %q", s)
	}
	b.waitText("Orders <b>system</b>") // as text, not markup
	b.check("webhook-created")

	b.submit("Send test event")
	b.waitText("A test event is on its way")
	b.reloadUntil("the test succeeded", func(rows []string) bool { return len(rows) == 1 && rows[0] == "Succeeded 204" })
	if got := rc.deliveries(); len(got) != 1 || len(got[0].Events) != 1 || got[0].Events[0].Type != "webhook.test" {
		t.Errorf("the receiver got %+v; want one webhook.test", got)
	}
	b.checkWidths("webhook-log")

	broken.Store(true)
	b.submit("Send test event")
	b.reloadUntil("the second test failed with its 500", func(rows []string) bool { return len(rows) == 2 && rows[0] == "Failed 500" })

	broken.Store(false)
	b.fill("Status", "failed")
	b.submit("Show")
	b.reloadUntil("only the failed delivery", func(rows []string) bool { return len(rows) == 1 && rows[0] == "Failed 500" })
	b.check("webhook-log-failed")
	b.submit("Retry")
	b.waitText("The delivery is due again now.")
	b.open(strings.TrimSuffix(strings.SplitN(b.path(), "?", 2)[0], "#log"))
	b.reloadUntil("the retried delivery succeeded", func(rows []string) bool {
		return len(rows) == 2 && rows[0] == "Succeeded 204" && rows[1] == "Succeeded 204"
	})

	// The retried delivery's own page: every attempt, newest first (four 500s on the schedule,
	// then the retry's 204), its one event, and Retry again from there.
	endpoint, _, _ := strings.Cut(b.path(), "#")
	newest := b.eval(`return document.querySelector('#log tbody tr th a').innerText.trim();`)
	b.submit(newest)
	b.waitText("Attempts")
	attempts := b.eval(`return [...document.querySelectorAll('section[aria-labelledby=attempts-h] tbody tr')].map(tr =>
		tr.querySelector('th').innerText.trim() + ' ' + tr.querySelector('[data-label=Answer]').innerText.trim().split('\n')[0]).join('|');`)
	if attempts != "5 204 (succeeded)|4 500|3 500|2 500|1 500" {
		t.Errorf("the delivery's attempts read %q; want the retry's 204 over four 500s", attempts)
	}
	if events := b.eval(`return [...document.querySelectorAll('section[aria-labelledby=events-h] tbody tr')].map(tr => tr.innerText.trim()).join('|');`); !strings.Contains(events, "webhook.test") || strings.Contains(events, "|") {
		t.Errorf("the delivery's events read %q; want its one webhook.test", events)
	}
	b.checkWidths("webhook-delivery")
	b.submit("Retry")
	b.waitText("The delivery is due again now.")
	if got := b.path(); !strings.HasSuffix(got, "/deliveries/"+newest) {
		t.Errorf("Retry on the delivery's page went to %s; want the page again", got)
	}
	b.open(endpoint)

	b.click("Delete endpoint")
	b.submit("Delete this endpoint")
	b.waitText("Deleted the endpoint")
	b.waitText("No endpoints yet")
}

var formKeyRE = regexp.MustCompile(`name="form_key" value="([^"]+)"`)

// formKey is the key the create form at path carries, drawn anew each time it is shown.
func (p *pages) formKey(path string) string {
	p.t.Helper()
	m := formKeyRE.FindStringSubmatch(p.get(path).Body)
	if m == nil {
		p.t.Fatalf("the create form at %s has no form_key", path)
	}
	return m[1]
}

// The create form sent twice (a reload of the page with the secret, a double click) adds one
// endpoint: the second answer leads to it, saying so, without the secret.
func TestDashboardWebhookFormSentTwiceAddsOne(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("hook-twice@example.com")
	p := n.pages(t)
	p.signIn(a)
	const list = "/app/developers/webhooks"
	key := p.formKey(list)
	form := hookForm("https://93.184.216.34/h", "orders", "*")
	form.Set("form_key", key)
	id, _ := createdHook(t, p.post(list, list, form))
	again := p.post(list, list, form)
	if again.Status != http.StatusSeeOther || again.Header.Get("Location") != list+"/"+id {
		t.Fatalf("the form sent again = %d → %q; want 303 to the endpoint it added", again.Status, again.Header.Get("Location"))
	}
	if r := p.get(list + "/" + id); !strings.Contains(r.Body, "This form was sent already") || strings.Contains(r.Body, "whsec_") {
		t.Errorf("the endpoint's page after the second send:\n%.3000s", r.Body)
	}
	if got := n.sqlInt(`SELECT count(*) FROM webhook_endpoints WHERE account_id = $1`, a.ID); got != 1 {
		t.Errorf("%d endpoints; want 1", got)
	}
	if p.formKey(list) == key {
		t.Errorf("the form drawn again has the same key: a second endpoint could not be added")
	}
}
