package app_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// campaignForm is the create form's fields for a group, sent now unless at is given.
func campaignForm(name, group, message, key string) url.Values {
	return url.Values{"name": {name}, "group_id": {group}, "message": {message}, "when": {"now"}, "idempotency_key": {key}}
}

var campaignPathRE = regexp.MustCompile(`^/app/campaigns/([0-9a-f-]{36})$`)

// createdCampaign is the id a create form's 303 names.
func createdCampaign(t *testing.T, r page) string {
	t.Helper()
	m := campaignPathRE.FindStringSubmatch(r.Header.Get("Location"))
	if r.Status != http.StatusSeeOther || m == nil {
		t.Fatalf("create = %d → %q; want 303 to the campaign:\n%.1500s", r.Status, r.Header.Get("Location"), r.Body)
	}
	return m[1]
}

// The create form creates a campaign once per form, however often it is sent; the preview
// renders each contact's message with the engine's merge tags, escaped; refusals (422, 402)
// are said on the form and create nothing; a scheduled campaign cancelled from its page
// shows its refund, and the wallet has it back.
func TestDashboardCampaignsCreateOncePreviewAndCancel(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("drive@example.com")
	n.credit(a, "100")
	g := n.group(a, "VIP <b>")
	n.contact(a, g, "0712000001", `<script>alert(1)</script>`, "Otieno")
	n.contact(a, g, "0712000002", "Amina", "Kamau")
	p := n.pages(t)
	p.signIn(a)
	if r := p.get("/app/campaigns"); r.Status != 200 || !strings.Contains(r.Body, "No campaigns yet") {
		t.Fatalf("empty list = %d:\n%.800s", r.Status, r.Body)
	}
	form := p.get("/app/campaigns/new")
	for _, want := range []string{"VIP &lt;b&gt; (2 contacts)", "Shared: ", "Date and time (Nairobi time, EAT)", `name="idempotency_key"`} {
		if !strings.Contains(form.Body, want) {
			t.Errorf("the form does not show %q", want)
		}
	}

	// The preview, as a page (no script) and as htmx's fragment: names escaped.
	pv := p.post("/app/campaigns/new", "/app/campaigns/preview", url.Values{"group_id": {g}, "message": {"Hi {first_name} {last_name}!"}, "when": {"now"}})
	if pv.Status != 200 || !strings.Contains(pv.Body, "Hi &lt;script&gt;alert(1)&lt;/script&gt; Otieno!") || !strings.Contains(pv.Body, "Hi Amina Kamau!") ||
		strings.Contains(pv.Body, "<script>alert") || !strings.Contains(pv.Body, "Create campaign") {
		t.Errorf("preview page = %d:\n%s", pv.Status, pv.Body)
	}
	frag := p.do("POST", "/app/campaigns/preview", url.Values{"_csrf": {p.token("/app/campaigns/new")}, "group_id": {g}, "message": {"Hi {first_name}"}}, "HX-Request", "true")
	if frag.Status != 200 || strings.Contains(frag.Body, "<html") || !strings.Contains(frag.Body, `id="preview"`) || !strings.Contains(frag.Body, "Hi Amina") {
		t.Errorf("preview fragment = %d:\n%s", frag.Status, frag.Body)
	}

	// Refusals are said on the form and create nothing.
	bad := p.post("/app/campaigns/new", "/app/campaigns", campaignForm("", g, "{first_name}", "k-bad"))
	if bad.Status != http.StatusUnprocessableEntity || !strings.Contains(bad.Body, "is required") || !strings.Contains(bad.Body, "must have text besides its merge tags") {
		t.Errorf("bad form = %d:\n%.3000s", bad.Status, bad.Body)
	}
	past := campaignForm("Late", g, "Hi", "k-past")
	past.Set("when", "later")
	past.Set("scheduled_at", time.Now().Add(-time.Hour).In(time.FixedZone("EAT", 3*3600)).Format("2006-01-02T15:04"))
	if r := p.post("/app/campaigns/new", "/app/campaigns", past); r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, "must be in the future") {
		t.Errorf("a past schedule = %d:\n%.3000s", r.Status, r.Body)
	}
	poor := n.register("poor@example.com")
	pg := n.group(poor, "Few")
	n.contact(poor, pg, "0712000009", "Jo", "")
	pp := n.pages(t)
	pp.signIn(poor)
	if r := pp.post("/app/campaigns/new", "/app/campaigns", campaignForm("Broke", pg, "Hi", "k-poor")); r.Status != http.StatusPaymentRequired || !strings.Contains(r.Body, `role="alert"`) {
		t.Errorf("without balance = %d:\n%.3000s", r.Status, r.Body)
	}
	if got := n.sqlInt(`SELECT count(*) FROM campaigns`); got != 0 {
		t.Fatalf("%d campaigns after refused forms; want 0", got)
	}

	// The same form twice (a double click) creates one campaign, charged once.
	name := `<img src=x onerror=alert(1)> promo`
	first := createdCampaign(t, p.post("/app/campaigns/new", "/app/campaigns", campaignForm(name, g, "Hi {first_name}", "k-once")))
	again := createdCampaign(t, p.post("/app/campaigns/new", "/app/campaigns", campaignForm(name, g, "Hi {first_name}", "k-once")))
	if first != again {
		t.Errorf("the second send of the form made campaign %s; want the first, %s", again, first)
	}
	if got := n.sqlInt(`SELECT count(*) FROM campaigns WHERE account_id = $1`, a.ID); got != 1 {
		t.Errorf("%d campaigns after a double submit; want 1", got)
	}
	if b := n.balance(a); b != 99 {
		t.Errorf("balance %v; want 99.00 (2 messages at 0.50, once)", b)
	}
	n.campaignDone(a, first)
	detail := p.get("/app/campaigns/" + first)
	for _, want := range []string{"&lt;img src=x onerror=alert(1)&gt; promo", "Completed", "2 delivered, 0 failed, 0 pending, of 2", "100.0%",
		"KES 1.00", "/app/messages?campaign_id=" + first, "VIP &lt;b&gt;"} {
		if !strings.Contains(detail.Body, want) {
			t.Errorf("the campaign's page does not show %q", want)
		}
	}
	if strings.Contains(detail.Body, "<img src=x") || strings.Contains(detail.Body, "Cancel campaign") {
		t.Errorf("the campaign's page shows markup from its name or a cancel of a finished campaign:\n%s", detail.Body)
	}
	for _, path := range []string{"/app/campaigns", "/app/campaigns/new", "/app/campaigns/" + first, "/app/campaigns/progress", "/app/campaigns/" + first + "/progress"} {
		r := p.get(path)
		if csp := r.Header.Get("Content-Security-Policy"); r.Status != 200 || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") ||
			strings.Contains(r.Body, " style=") || strings.Contains(r.Body, "<script>") || strings.Contains(r.Body, "<img") {
			t.Errorf("%s = %d, CSP %q, or inline style or script:\n%s", path, r.Status, csp, r.Body)
		}
	}
	list := p.get("/app/campaigns")
	if !strings.Contains(list.Body, "&lt;img src=x onerror=alert(1)&gt; promo") || strings.Contains(list.Body, "<img src=x") ||
		strings.Contains(list.Body, "hx-trigger=\"every") {
		t.Errorf("the list (nothing running) = \n%s", list.Body)
	}

	// A scheduled campaign, cancelled: its refund is on the page and in the wallet.
	later := campaignForm("Tomorrow", g, "Hi {first_name}", "k-later")
	later.Set("when", "later")
	later.Set("scheduled_at", time.Now().Add(24*time.Hour).In(time.FixedZone("EAT", 3*3600)).Format("2006-01-02T15:04"))
	later.Set("reference", "order-77")
	sched := createdCampaign(t, p.post("/app/campaigns/new", "/app/campaigns", later))
	if r := p.get("/app/campaigns/" + sched); !strings.Contains(r.Body, "Scheduled") || !strings.Contains(r.Body, "EAT") || !strings.Contains(r.Body, "order-77") ||
		!strings.Contains(r.Body, "Cancel campaign") {
		t.Errorf("the scheduled campaign's page:\n%s", r.Body)
	}
	if b := n.balance(a); b != 98 {
		t.Errorf("balance %v after scheduling; want 98.00", b)
	}
	p.post("/app/campaigns/"+sched, "/app/campaigns/"+sched+"/cancel", nil).expect(t, http.StatusSeeOther, "/app/campaigns/"+sched)
	after := p.get("/app/campaigns/" + sched)
	for _, want := range []string{"Cancelled the campaign “Tomorrow”. KES 1.00 is refunded to your wallet.", "Cancelled"} {
		if !strings.Contains(after.Body, want) {
			t.Errorf("after the cancel the page does not show %q:\n%s", want, after.Body)
		}
	}
	if b := n.balance(a); b != 99 {
		t.Errorf("balance %v after the cancel; want 99.00", b)
	}
	// Cancelled already: said on the page (409), nothing changes.
	if r := p.post("/app/campaigns/"+sched, "/app/campaigns/"+sched+"/cancel", nil); r.Status != http.StatusConflict || !strings.Contains(r.Body, `role="alert"`) {
		t.Errorf("cancel twice = %d:\n%.2000s", r.Status, r.Body)
	}

	// The first campaign's messages' link lists its messages, not the account's others.
	n.sendJob(a, map[string]any{"recipients": []string{"0712000099"}, "message": "unrelated"}, 0.5)
	if list := p.get("/app/messages?campaign_id=" + first); list.Status != http.StatusOK || strings.Contains(list.Body, "254712000099") ||
		!strings.Contains(list.Body, "2 messages") {
		t.Errorf("the campaign's messages = %d, lists another send's: %v:\n%.3000s", list.Status, strings.Contains(list.Body, "254712000099"), list.Body)
	}
}

// A form without the session's token is refused with a 403 page and creates or cancels
// nothing; another account's campaign (or group) is a 404 page whatever is asked of it.
func TestDashboardCampaignsRefuseForgeriesAndOthersIDs(t *testing.T) {
	n := startNode(t, fastSims)
	a, b := n.register("mine@example.com"), n.register("theirs@example.com")
	n.credit(a, "10")
	n.credit(b, "10")
	ga, gb := n.group(a, "Mine"), n.group(b, "Theirs")
	n.contact(a, ga, "0712000001", "Jo", "")
	n.contact(b, gb, "0712000002", "Flo", "")
	at := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	r := n.do("POST", "/campaigns", map[string]any{"name": "Theirs", "message": "Hi", "group_id": gb, "scheduled_at": at}, key(b)...)
	if r.Status != 201 {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	theirs := r.json(t)["id"].(string)
	r = n.do("POST", "/campaigns", map[string]any{"name": "Mine", "message": "Hi", "group_id": ga, "scheduled_at": at}, key(a)...)
	mine := r.json(t)["id"].(string)

	p := n.pages(t)
	p.signIn(a)
	wrong := "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	for path, form := range map[string]url.Values{
		"/app/campaigns":                     campaignForm("Forged", ga, "Hi", "k-forged"),
		"/app/campaigns/" + mine + "/cancel": {},
	} {
		for _, token := range []string{"", wrong} {
			f := url.Values{}
			for k, v := range form {
				f[k] = v
			}
			if token != "" {
				f.Set("_csrf", token)
			}
			if r := p.do("POST", path, f); r.Status != http.StatusForbidden || !strings.Contains(r.Body, "nothing was changed") {
				t.Errorf("POST %s with token %q = %d", path, token, r.Status)
			}
		}
	}
	if got := n.sqlInt(`SELECT count(*) FROM campaigns WHERE account_id = $1`, a.ID); got != 1 {
		t.Errorf("%d campaigns after forged forms; want 1", got)
	}
	if st := n.sqlString(`SELECT status FROM campaigns WHERE id = $1`, mine); st != "scheduled" {
		t.Errorf("my campaign is %s after a forged cancel; want scheduled", st)
	}

	for _, path := range []string{"/app/campaigns/" + theirs, "/app/campaigns/" + theirs + "/progress", "/app/campaigns/not-an-id"} {
		if r := p.get(path); r.Status != http.StatusNotFound || !strings.Contains(r.Body, "Page not found") {
			t.Errorf("GET %s = %d; want the 404 page", path, r.Status)
		}
	}
	if r := p.post("/app/campaigns", "/app/campaigns/"+theirs+"/cancel", nil); r.Status != http.StatusNotFound {
		t.Errorf("cancel another account's campaign = %d; want 404", r.Status)
	}
	if st := n.sqlString(`SELECT status FROM campaigns WHERE id = $1`, theirs); st != "scheduled" {
		t.Errorf("their campaign is %s; want scheduled", st)
	}
	if r := p.post("/app/campaigns/new", "/app/campaigns", campaignForm("Theirs too", gb, "Hi", "k-theirs")); r.Status != http.StatusNotFound {
		t.Errorf("a campaign to another account's group = %d; want 404", r.Status)
	}
	pv := p.post("/app/campaigns/new", "/app/campaigns/preview", url.Values{"group_id": {gb}, "message": {"Hi {first_name}"}})
	if strings.Contains(pv.Body, "Flo") {
		t.Errorf("the preview shows another account's contact:\n%s", pv.Body)
	}
	if list := p.get("/app/campaigns"); strings.Contains(list.Body, "Theirs") {
		t.Errorf("the list shows another account's campaign")
	}

	// The sender select offers the account's approved sender IDs; one not approved for it
	// (another account's) is said beside the field.
	n.approveDefaultSender(a, "ACME", "all")
	acme := n.sqlString(`SELECT id::text FROM sender_ids WHERE account_id = $1`, a.ID)
	if form := p.get("/app/campaigns/new"); !strings.Contains(form.Body, "Your default: ACME") || !strings.Contains(form.Body, `value="`+acme+`"`) {
		t.Errorf("the sender select does not offer ACME:\n%s", form.Body)
	}
	n.approveDefaultSender(b, "THEIRS", "all")
	other := n.sqlString(`SELECT id::text FROM sender_ids WHERE account_id = $1`, b.ID)
	f := campaignForm("Via theirs", ga, "Hi", "k-other-sender")
	f.Set("sender_id", other)
	if r := p.post("/app/campaigns/new", "/app/campaigns", f); r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, "is not an approved, active sender ID of this account") {
		t.Errorf("another account's sender ID = %d:\n%.3000s", r.Status, r.Body)
	}
	f = campaignForm("Via ACME", ga, "Hi", "k-acme")
	f.Set("sender_id", acme)
	id := createdCampaign(t, p.post("/app/campaigns/new", "/app/campaigns", f))
	if r := p.get("/app/campaigns/" + id); !strings.Contains(r.Body, "<td>ACME</td>") {
		t.Errorf("the campaign's page does not name its sender ID:\n%s", r.Body)
	}
}

// A campaign in a browser: a group with contacts (one named with markup), a wallet topped
// up, the form (promotional, as it offers) with its preview (drawn as htmx asks for it, names escaped), the creation, and
// the campaign's page following its progress to completed without a reload. Every page
// passes the accessibility check.
func TestDashboardCampaignsInBrowser(t *testing.T) {
	n := startNode(t, withEnv(fastSims, "TUMA_SIM_RECEIPT_DELAY", "4s"))
	a := n.register("drives@example.com")
	n.credit(a, "50")
	g := n.group(a, "Nairobi shoppers")
	n.contact(a, g, "0712000001", `<img src=x onerror=alert(1)>`, "Otieno")
	n.contact(a, g, "0712000002", "Amina", "Kamau")
	n.contact(a, g, "0712000003", "Brian", "Mwangi")
	// The form's campaign is promotional: it must go at whatever hour the test runs.
	if r := n.do("PATCH", "/auth/profile", map[string]any{"quiet_hours": nil}, key(a)...); r.Status != 200 {
		t.Fatalf("quiet hours off = %d %s", r.Status, r.Body)
	}
	b := n.tab(t)
	b.open("/app/login")
	b.fill("Email address", a.Email)
	b.fill("Password", a.Password)
	b.submit("Sign in")
	b.open("/app/campaigns")
	b.waitText("No campaigns yet")
	b.check("campaigns-empty")

	b.submit("New campaign")
	b.waitText("When to send")
	b.check("campaigns-new")
	b.fill("Campaign name", "December sale")
	b.eval(`const sel = document.getElementById('f-group_id');
		sel.value = [...sel.options].find(o => o.text.startsWith('Nairobi shoppers')).value;
		sel.dispatchEvent(new Event('change', {bubbles: true})); return '';`)
	b.fill("Message", "Hi {first_name}, the sale starts today!")
	b.click("Preview")
	b.waitText("Hi Amina, the sale starts today! STOP*456*9*5#")
	b.waitText("Hi <img src=x onerror=alert(1)>, the sale starts today! STOP*456*9*5#")
	if p := b.path(); p != "/app/campaigns/new" {
		t.Errorf("the preview left the page for %s", p)
	}
	if b.eval(`return String(document.querySelectorAll('main img').length);`) != "0" {
		t.Error("a contact's name was drawn as markup in the preview")
	}
	b.check("campaigns-preview")

	b.submit("Create campaign")
	b.waitText("Created the campaign “December sale” to 3 contacts, for KES 1.50.")
	if !campaignPathRE.MatchString(b.path()) {
		t.Fatalf("after creating, the tab is at %s", b.path())
	}
	// Its receipts take seconds: the page opens on a campaign still under way, polling.
	if text := b.text(); strings.Contains(text, "0 pending, of 3") || b.eval(`return document.querySelector('#figures[hx-trigger]') ? 'polls' : '';`) != "polls" {
		t.Fatalf("the new campaign's page shows it finished, or does not poll:\n%s", text)
	}
	b.check("campaign-running")
	// The figures follow the campaign as htmx asks for them: the page itself is not reloaded.
	b.eval(`window.__same = true; return '';`)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(b.text(), "3 delivered, 0 failed, 0 pending, of 3") {
		if time.Now().After(deadline) {
			t.Fatalf("the campaign's page never showed it completed:\n%s", b.text())
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.waitText("Completed")
	b.waitText("100.0%")
	if got := b.eval(`const th = [...document.querySelectorAll('#figures th')].find(e => e.innerText.trim() === 'Cost per delivered message');
		return th ? th.nextElementSibling.innerText.trim() : 'no such row';`); got != "KES 0.50" {
		t.Errorf("cost per delivered message = %q; want KES 0.50 (KES 1.50 over 3 delivered)", got)
	}
	if b.eval(`return window.__same ? 'yes' : 'reloaded';`) != "yes" {
		t.Error("the page was reloaded to show the progress; want htmx to swap the figures")
	}
	b.check("campaign-completed")
	// Created from the dashboard: its messages are the browser's (CONTRACT §1), as a send's.
	id := campaignPathRE.FindStringSubmatch(b.path())[1]
	for _, m := range n.do("GET", "/sms/messages?campaign_id="+id, nil, key(a)...).json(t)["data"].([]any) {
		if src := m.(map[string]any)["source"]; src != "browser" {
			t.Errorf("a message of the dashboard's campaign has source %v; want browser", src)
		}
	}

	b.submit("All campaigns")
	b.waitText("Your campaigns")
	b.waitText("December sale")
	b.waitText("Completed")
	b.check("campaigns-list")
}

// A campaign whose group holds suppressed numbers says how many it left out, uncharged: when
// it is created and on its page.
func TestDashboardCampaignShowsWhomItLeftOut(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("leftout@example.com")
	n.credit(a, "100")
	g := n.group(a, "All")
	n.contact(a, g, "0712000001", "Jo", "")
	n.contact(a, g, "0712000002", "Wa", "")
	n.suppress(a, "0712000002")
	p := n.pages(t)
	p.signIn(a)
	id := createdCampaign(t, p.post("/app/campaigns/new", "/app/campaigns", campaignForm("Some", g, "Hi {first_name}", "k-left")))
	page := p.get("/app/campaigns/" + id)
	for _, want := range []string{"1 on your suppression list are left out, uncharged.", "Left out (on your suppression list)</th><td>1</td>"} {
		if !strings.Contains(page.Body, want) {
			t.Errorf("the campaign's page does not show %q:\n%.4000s", want, page.Body)
		}
	}
}
