package app_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

const inboundPage = "/app/messages/inbound"

// inboundRows are the inbox page's rows as a person reads them, a cell a string: sender,
// received, to, network, keyword and text.
func (b *tab) inboundRows() [][]string {
	b.t.Helper()
	var rows [][]string
	out := b.eval(`return JSON.stringify([...document.querySelectorAll('main tbody tr')].map(tr =>
		[...tr.children].map(c => c.innerText.trim())));`)
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		b.t.Fatalf("the rows %s: %v", out, err)
	}
	return rows
}

// inboundTexts are the texts of the inbox page's rows, in order.
func (b *tab) inboundTexts() string {
	b.t.Helper()
	return b.eval(`return [...document.querySelectorAll('main tbody td.text')].map(td => td.innerText).join(',');`)
}

// The inbox in a browser, from the messages area: a fresh account's empty state says how
// inbound works; messages sent to the account's short code show newest first with sender,
// time, number, network and keyword (STOP as a badge, its sender suppressed), text escaped
// and as sent (emoji, line breaks, a long unbroken word that wraps); the filter finds one
// sender in any form and says a bad number beside the field; the list pages by cursor.
// Another tenant's and unrouted messages never show. Every state passes the accessibility
// check at 1280 and 375 pixels.
func TestDashboardInboundInBrowser(t *testing.T) {
	n := startNode(t, noRateLimit)
	a, other := n.register("inbound-page@example.com"), n.register("inbound-other@example.com")
	for acct, number := range map[string]string{a.ID: "22384", other.ID: "22385"} {
		if r := n.do("POST", "/admin/accounts/"+acct+"/inbound-numbers", map[string]any{"number": number, "network": "safaricom"}, adminAuth()...); r.Status != 201 {
			t.Fatalf("assign %s = %d %s", number, r.Status, r.Body)
		}
	}

	b := n.tab(t)
	b.signInAs(a)
	b.open("/app/messages")
	b.submit("Inbound messages")
	if p := b.path(); p != inboundPage {
		t.Fatalf("the messages area's link leads to %q", p)
	}
	if got := b.eval(`return document.querySelector('.side a[aria-current=page]').textContent;`); got != "Messages" {
		t.Errorf("the navigation marks %q as the current page; want Messages", got)
	}
	b.waitText("No inbound messages yet.")
	b.waitText("the operators of this service assign it")
	b.waitText("A message that begins with STOP (or another opt-out word, such as ACHA")
	if got := b.eval(`return [...document.querySelectorAll('main a')].filter(a => a.textContent === 'suppression list').map(a => a.getAttribute('href')).join(',');`); got != suppressionsPage {
		t.Errorf("the empty state links the suppression list as %q", got)
	}
	b.checkWidths("inbound-empty")

	long := "https://example.com/" + strings.Repeat("x", 400)
	n.mo("0712345678", "22384", "Is the <b>sale</b> still on?\nReply soon")
	n.mo("+254 733 111 222", "22384", "Habari 👋 asante sana, ñandú")
	n.mo("0712345678", "22384", long)
	n.mo("254712345678", "22384", "Stop, please")
	n.mo("0722000001", "22385", "for the other tenant only")
	n.mo("0711000000", "99999", "to nobody at all")

	b.open(inboundPage)
	want := [][]string{
		{"+254712345678", "22384", "Safaricom", "STOP opted out", "Stop, please"},
		{"+254712345678", "22384", "Safaricom", "None", long},
		{"+254733111222", "22384", "Airtel", "None", "Habari 👋 asante sana, ñandú"},
		{"+254712345678", "22384", "Safaricom", "None", "Is the <b>sale</b> still on?\nReply soon"},
	}
	rows := b.inboundRows()
	if len(rows) != len(want) {
		t.Fatalf("the inbox lists %d rows; want %d: %q", len(rows), len(want), rows)
	}
	for i, w := range want {
		r := rows[i]
		if len(r) != 6 || !strings.HasSuffix(r[1], " UTC") || !slices.Equal(append([]string{r[0]}, r[2:]...), w) {
			t.Errorf("row %d reads %q; want %q with the time received", i, r, w)
		}
	}
	if got := b.eval(`return [...document.querySelectorAll('main .badge')].map(s => s.textContent).join(',');`); got != "STOP" {
		t.Errorf("the keyword badges read %q; want STOP", got)
	}
	if b.eval(`return String(document.querySelectorAll('main b').length);`) != "0" {
		t.Error("a message's text was drawn as markup")
	}
	if text := b.text(); strings.Contains(text, "for the other tenant only") || strings.Contains(text, "to nobody at all") {
		t.Errorf("the inbox shows another tenant's or an unrouted message:\n%s", text)
	}
	b.checkWidths("inbound-list")

	// The STOP put its sender on the suppression list.
	b.open(suppressionsPage)
	b.waitText("+254712345678")
	b.waitText("Replied STOP")

	// The filter: one sender in any form; a bad number is said beside it.
	b.open(inboundPage)
	for _, from := range []string{"0712 345 678", "+254712345678", "254712345678"} {
		b.fill("Sender’s number", from)
		b.submit("Filter")
		if got, want := b.inboundTexts(), "Stop, please,"+long+",Is the <b>sale</b> still on?\nReply soon"; got != want {
			t.Errorf("filtering by %q lists %q", from, got)
		}
	}
	b.fill("Sender’s number", "0733111222")
	b.submit("Filter")
	if got := b.inboundTexts(); got != "Habari 👋 asante sana, ñandú" {
		t.Errorf("filtering by the Airtel sender lists %q", got)
	}
	b.fill("Sender’s number", "0812 345 678")
	b.submit("Filter")
	b.waitText("must be a Kenyan mobile number such as 0712345678 or +254712345678")
	if got := b.eval(`const el = document.getElementById('f-from'); return el.getAttribute('aria-invalid') + ' ' + el.value;`); got != "true 0812 345 678" {
		t.Errorf("the filter after a bad number: %q", got)
	}
	b.checkWidths("inbound-filter-error")
	b.fill("Sender’s number", "0799000000")
	b.submit("Filter")
	b.waitText("No messages from that number.")
	b.submit("Show every sender")
	if got := len(strings.Split(b.inboundTexts(), ",")); b.path() != inboundPage || got < 4 {
		t.Errorf("Show every sender leads to %q with %d rows", b.path(), got)
	}

	// Paging: Older continues after the last row shown, keeping the filter; Newest goes back.
	b.open(inboundPage + "?page_size=3")
	first := b.inboundTexts()
	b.submit("Older")
	older := b.inboundTexts()
	if first != "Stop, please,"+long+",Habari 👋 asante sana, ñandú" || older != "Is the <b>sale</b> still on?\nReply soon" {
		t.Errorf("the pages list %q, then %q", first, older)
	}
	b.submit("Newest")
	if got := b.inboundTexts(); got != first {
		t.Errorf("Newest lists %q", got)
	}
	b.open(inboundPage + "?from=0712345678&page_size=2")
	b.submit("Older")
	if got := b.inboundTexts(); got != "Is the <b>sale</b> still on?\nReply soon" || !strings.Contains(b.path(), "from=0712345678") {
		t.Errorf("the filtered list's second page at %q lists %q", b.path(), got)
	}
	b.check("inbound-older")

	// What a browser cannot show: a bad number is the page with its message, an altered link
	// is said on the page; neither is an error page.
	mine := n.pages(t)
	mine.signIn(a)
	if r := mine.get(inboundPage + "?from=0812345678"); r.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(r.Body, "must be a Kenyan mobile number") || !strings.Contains(r.Body, `action="/app/messages/inbound"`) {
		t.Errorf("a bad sender = %d:\n%.300s", r.Status, r.Body)
	}
	if r := mine.get(inboundPage + "?cursor=AAAA"); r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "This page’s link is not valid") {
		t.Errorf("an altered cursor = %d:\n%.300s", r.Status, r.Body)
	}
	if r := n.pages(t).get(inboundPage); r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/app/login") {
		t.Errorf("the inbox signed out = %d → %q; want the sign-in page", r.Status, r.Header.Get("Location"))
	}

	// Another tenant sees only its own message, and no filter reaches the first's.
	b.submit("Sign out")
	b.signInAs(other)
	b.open(inboundPage)
	if got := b.inboundTexts(); got != "for the other tenant only" {
		t.Errorf("the other tenant's inbox lists %q", got)
	}
	b.fill("Sender’s number", "0712345678")
	b.submit("Filter")
	b.waitText("No messages from that number.")
	if text := b.text(); strings.Contains(text, "Stop, please") || strings.Contains(text, "Habari") || strings.Contains(text, "to nobody at all") {
		t.Errorf("another tenant's inbox shows the first's messages:\n%s", text)
	}
	b.check("inbound-other")
}
