package app_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/cmd/tuma/app"
)

// categories lists the page's category radios in order: value, "*" when chosen, and label.
func (b *tab) categories() string {
	b.t.Helper()
	return b.eval(`return [...document.querySelectorAll('input[name=category]')]
		.map(i => i.value + (i.checked ? '*' : '') + ':' + i.labels[0].innerText.trim()).join(', ');`)
}

// choose clicks the radio or checkbox with the id, as a person clicks it.
func (b *tab) choose(id string) {
	b.t.Helper()
	if msg := b.eval(`const el = document.getElementById(arguments[0]);
		if (!el) return 'no element #' + arguments[0];
		el.click(); return '';`, id); msg != "" {
		b.t.Fatal(msg)
	}
}

// flat is the page's text with its white space folded.
func (b *tab) flat() string {
	b.t.Helper()
	return strings.Join(strings.Fields(b.text()), " ")
}

// The campaign form offers promotional first and chosen, explained with the account's own
// opt-out text and quiet hours; the preview shows each contact's text as sent, the opt-out
// text at the end and its cost, and follows the choice; a time inside the quiet hours is
// said on the form and in the answer; the campaign is promotional over the API. Every state
// passes the accessibility check at 1280 and 375 pixels.
func TestDashboardPromotionalCampaignInBrowser(t *testing.T) {
	clk := nairobi(10, 0)
	n := startNode(t, quietEnv(), app.WithClock(clk.now))
	a := n.register("promo-form@example.com")
	n.credit(a, "50")
	if r := n.do("PATCH", "/auth/profile", map[string]any{"opt_out_text": "STOP to 22456"}, key(a)...); r.Status != 200 {
		t.Fatalf("set the opt-out text = %d %s", r.Status, r.Body)
	}
	g := n.group(a, "Regulars")
	n.contact(a, g, "0712000001", "Amina", "Kamau")
	n.contact(a, g, "0712000002", "Brian", "Mwangi")
	b := n.tab(t)
	b.signInAs(a)
	b.open("/app/campaigns/new")
	if got := b.categories(); got != "promotional*:Promotional, transactional:Transactional" {
		t.Errorf("the category choice is %q; want promotional first and chosen", got)
	}
	if got := b.eval(`return document.getElementById('f-category').querySelector('legend').innerText;`); got != "What kind of message is it?" {
		t.Errorf("the choice's legend is %q", got)
	}
	text := b.flat()
	for _, want := range []string{
		"tell people how to opt out for free (Kenya’s Data Protection (General) Regulations, 2021), so Tuma adds “STOP to 22456” to the end of each message, counted in the price.",
		"They are held during your quiet hours, and sent when those end. Your quiet hours: 20:00 to 08:00, Nairobi time (EAT).",
		"Receipts, reminders, alerts and one-time codes: sent at any hour, with nothing added.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the form does not say %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "your quiet hours now") {
		t.Errorf("at 10:00 the form says it is the quiet hours:\n%s", text)
	}
	b.checkWidths("campaigns-new-promotional")

	b.fill("Campaign name", "Weekend offer")
	b.eval(`const sel = document.getElementById('f-group_id');
		sel.value = [...sel.options].find(o => o.text.startsWith('Regulars')).value;
		sel.dispatchEvent(new Event('change', {bubbles: true})); return '';`)
	b.fill("Message", "Hi {first_name}, 20% off this weekend")
	b.click("Preview")
	b.waitText("Acme Ltd: Hi Amina, 20% off this weekend STOP to 22456")
	b.waitText("Acme Ltd: Hi Brian, 20% off this weekend STOP to 22456")
	b.waitText("exactly as it will be sent (your opt-out text “STOP to 22456” at the end), and what each costs.")
	b.waitText("1 SMS part, KES 0.50")
	b.checkWidths("campaigns-preview-promotional")

	// Transactional: the preview follows the choice, with nothing added; and back.
	preview := func(want string, suffixed bool) {
		t.Helper()
		js, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		b.waitFunc("the preview to show "+want, fmt.Sprintf(`const p = document.getElementById('preview').innerText;
			return p.includes(%s) && p.includes('STOP to 22456') === %t ? 'yes' : '';`, js, suffixed))
	}
	b.choose("f-category-transactional")
	preview("Acme Ltd: Hi Amina, 20% off this weekend", false)
	b.choose("f-category-promotional")
	preview("Acme Ltd: Hi Amina, 20% off this weekend STOP to 22456", true)

	// Scheduled inside the quiet hours: the form says when it will start, and so does the answer.
	b.choose("f-when-later")
	b.fill("Date and time (Nairobi time, EAT)", "2026-11-26T21:30")
	b.waitText("The time chosen, 26 Nov 2026, 21:30 EAT, falls in your quiet hours (20:00 to 08:00, Nairobi time): " +
		"promotional messages wait, so the campaign will start when they end, on 27 Nov 2026, 08:00 EAT.")
	b.checkWidths("campaigns-new-held")
	b.submit("Create campaign")
	b.waitText("Created the campaign “Weekend offer” to 2 contacts, for KES 1.00. It is scheduled for 26 Nov 2026, 21:30 EAT, " +
		"in your quiet hours, so it will start when they end, on 27 Nov 2026, 08:00 EAT.")
	m := campaignPathRE.FindStringSubmatch(b.path())
	if m == nil {
		t.Fatalf("after creating, the tab is at %s", b.path())
	}
	c := n.do("GET", "/campaigns/"+m[1], nil, key(a)...).json(t)
	if c["category"] != "promotional" || c["status"] != "scheduled" || c["cost_kes"] != 1.0 {
		t.Errorf("the campaign over the API = %v; want promotional, scheduled, KES 1.00", c)
	}
	b.waitText("Promotional: your opt-out text is added, and it waits out your quiet hours")
	b.checkWidths("campaign-promotional")

	// Chosen transactional, it is one: the form passes the category on.
	b.open("/app/campaigns/new")
	b.fill("Campaign name", "Order ready")
	b.eval(`const sel = document.getElementById('f-group_id');
		sel.value = [...sel.options].find(o => o.text.startsWith('Regulars')).value; return '';`)
	b.fill("Message", "Hi {first_name}, your order is ready")
	b.choose("f-category-transactional")
	b.submit("Create campaign")
	b.waitText("Created the campaign “Order ready” to 2 contacts, for KES 1.00. It is going out now.")
	m = campaignPathRE.FindStringSubmatch(b.path())
	if m == nil {
		t.Fatalf("after creating, the tab is at %s", b.path())
	}
	if done := n.campaignDone(a, m[1]); done["category"] != "transactional" || done["total_delivered"] != 2.0 {
		t.Errorf("the transactional campaign = %v", done)
	}
	if got := n.sqlInt(`SELECT count(*) FROM messages WHERE campaign_id = $1 AND body LIKE '%STOP%'`, m[1]); got != 0 {
		t.Errorf("%d transactional messages carry the opt-out text", got)
	}
}

// The send form is transactional unless promotional is chosen; chosen, the counter shows the
// text with the opt-out text at the end, priced in its parts, and that it is the quiet hours;
// the confirmation says so, and the messages wait with the text as shown.
func TestSendPagePromotionalInBrowser(t *testing.T) {
	clk := nairobi(21, 0)
	n := startNode(t, quietEnv(), app.WithClock(clk.now))
	a := n.register("promo-send@example.com")
	n.credit(a, "50")
	b := n.tab(t)
	b.signInAs(a)
	b.open("/app/send")
	if got := b.categories(); got != "transactional*:Transactional, promotional:Promotional" {
		t.Errorf("the category choice is %q; want transactional chosen", got)
	}
	// 140 characters: with the company's prefix 150, one part; the opt-out text makes 164, two.
	const msg = "Flash sale this weekend at all our shops: two for one on shoes, bags and belts, and 20% off everything else. Come early, stocks are limited!"
	count := func(term string) string {
		return b.eval(`const dt = [...document.querySelectorAll('#counter dt')].find(d => d.innerText.trim() === arguments[0]);
			return dt ? dt.nextElementSibling.innerText.trim() : '';`, term)
	}
	waitCount := func(term, want string) {
		t.Helper()
		deadline := time.Now().Add(tabWait)
		for count(term) != want {
			if time.Now().After(deadline) {
				t.Fatalf("the counter's %s is %q; want %q:\n%s", term, count(term), want, b.text())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	b.fill("Phone numbers", "0712000001\n0733000002")
	b.fill("Message", msg)
	waitCount("SMS parts per number", "1")
	waitCount("Cost", "KES 1.00")
	if text := b.text(); strings.Contains(text, "STOP*456*9*5#") || strings.Contains(text, "quiet hours now") {
		t.Errorf("a transactional send shows the opt-out text or the quiet hours:\n%s", text)
	}

	b.choose("f-category-promotional")
	b.waitText("Acme Ltd: " + msg + " STOP*456*9*5#")
	waitCount("SMS parts per number", "2")
	waitCount("Cost", "KES 2.00")
	b.waitText("Promotional: your opt-out text “STOP*456*9*5#” is added at the end, counted in the parts and cost.")
	const held = "It is your quiet hours now (20:00 to 08:00, Nairobi time): promotional messages wait, and go when they end, on 27 Nov 2026, 08:00 EAT."
	b.waitText(held)
	b.checkWidths("send-promotional")

	b.submit("Review and send")
	b.waitText("Send this message?")
	text := b.flat()
	for _, want := range []string{"Acme Ltd: " + msg + " STOP*456*9*5#", "Kind Promotional: your opt-out text is at the end", held, "Cost KES 2.00"} {
		if !strings.Contains(text, want) {
			t.Errorf("the confirmation does not say %q:\n%s", want, text)
		}
	}
	b.checkWidths("send-confirm-promotional")
	b.submit("Send now")
	b.waitPath("/app/messages?job_id=")
	b.waitText("Sent to 2 numbers: 4 SMS, KES 2.00. " + held)
	job := strings.TrimPrefix(b.path(), "/app/messages?job_id=")
	if got := n.sqlInt(`SELECT count(*) FROM jobs WHERE id = $1 AND promotional AND opt_out = ' STOP*456*9*5#' AND status = 'queued'`, job); got != 1 {
		t.Fatalf("the send is not a promotional job waiting with the opt-out text")
	}
	clk.advance(11*time.Hour + time.Minute) // 08:01
	n.waitStatus(job, "delivered", 2)
	list := n.do("GET", "/sms/messages?job_id="+job, nil, key(a)...).json(t)["data"].([]any)
	if len(list) != 2 {
		t.Fatalf("the job lists %d messages; want 2", len(list))
	}
	for _, m := range list {
		if m := m.(map[string]any); m["message"] != "Acme Ltd: "+msg+" STOP*456*9*5#" || m["parts"] != 2.0 {
			t.Errorf("a message went as %q in %v parts; want the text shown, in 2", m["message"], m["parts"])
		}
	}
}
