package app_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const suppressionsPage = "/app/contacts/suppressions"

// The suppression list in a browser, from the contacts area: the empty state says what the
// list is for; a number added in its national form is listed as +254… and its tenant leaves
// it out of a quote; adding it again says it is there already; a bad number is said beside
// the field and adds nothing; search finds numbers by their start in any form; the list
// pages by cursor; a number is removed after a confirmation. Another tenant sees none of it
// and cannot remove it. Every state passes the accessibility check at 1280 and 375 pixels.
func TestDashboardSuppressionsInBrowser(t *testing.T) {
	n := startNode(t, nil)
	a, other := n.register("suppr-page@example.com"), n.register("suppr-other@example.com")
	quoteSuppressed := func() any {
		t.Helper()
		return n.quoteOf(a, map[string]any{"message": "hi", "recipients": []string{"0712345678", "0722000001"}})["suppressed_count"]
	}
	b := n.tab(t)
	b.signInAs(a)
	b.open("/app/contacts")
	b.submit("Suppression list")
	if p := b.path(); p != suppressionsPage {
		t.Fatalf("the contacts area's link leads to %q", p)
	}
	b.waitText("Your suppression list is empty.")
	b.waitText("When someone replies STOP")
	b.checkWidths("suppressions-empty")

	b.fill("Phone number", "0712 345 678")
	b.fill("Reason", "asked <b>not</b> to be texted")
	b.submit("Add to the list")
	b.waitText("Added +254712345678 to your suppression list: no send or campaign will message it.")
	text := strings.Join(strings.Fields(b.text()), " ")
	if !strings.Contains(text, "+254712345678 Added by you asked <b>not</b> to be texted") {
		t.Errorf("the list after the add shows:\n%s", text)
	}
	if b.eval(`return String(document.querySelectorAll('main b').length);`) != "0" {
		t.Error("a reason was drawn as markup")
	}
	if got := quoteSuppressed(); got != 1.0 {
		t.Errorf("a quote after the add has suppressed_count %v; want 1", got)
	}

	b.fill("Phone number", "+254 712 345 678")
	b.submit("Add to the list")
	b.waitText("+254712345678 is on your suppression list already, since")
	b.waitText("(added by you): nothing changed.")

	b.fill("Phone number", "0812 345 678")
	b.fill("Reason", "kept after the error")
	b.submit("Add to the list")
	b.waitText("must be a Kenyan mobile number such as 0712345678 or +254712345678")
	if got := b.eval(`const el = document.getElementById('f-phone');
		return el.getAttribute('aria-invalid') + ' ' + el.value + ' ' + document.getElementById('f-reason').value;`); got != "true 0812 345 678 kept after the error" {
		t.Errorf("the phone field after a bad number: %q", got)
	}
	b.checkWidths("suppressions-add-error")
	if got := n.suppressed(a); got != 1 {
		t.Fatalf("%d suppressions stored after the repeat and the bad number; want 1", got)
	}

	// The other sources, each as it comes: an opted-out contact, and a STOP reply (stored
	// as the inbound path stores it).
	if r := n.do("POST", "/suppressions", map[string]any{"phone": "0722000001"}, key(a)...); r.Status != 201 {
		t.Fatalf("add over the API = %d %s", r.Status, r.Body)
	}
	if r := n.do("DELETE", "/contacts/"+n.newContact(a, "0733000002", "Otieno"), nil, key(a)...); r.Status != 204 {
		t.Fatalf("opt out a contact = %d %s", r.Status, r.Body)
	}
	n.sql(`INSERT INTO suppressions (account_id, nsn, source, reason) VALUES ($1, 110000003, 'keyword', 'STOP')`, a.ID)
	b.open(suppressionsPage)
	text = strings.Join(strings.Fields(b.text()), " ")
	for _, want := range []string{"+254110000003 Replied STOP STOP", "+254733000002 Contact opted out", "+254722000001 Added by you None given"} {
		if !strings.Contains(text, want) {
			t.Errorf("the list does not show %q:\n%s", want, text)
		}
	}
	if i, j := strings.Index(text, "+254110000003"), strings.Index(text, "+254712345678"); i < 0 || j < i {
		t.Errorf("the list is not newest first:\n%s", text)
	}
	b.checkWidths("suppressions-list")

	// Search: the start of a number in any form.
	for search, want := range map[string]string{"0712": "+254712345678", "+254 722": "+254722000001", "254733": "+254733000002"} {
		b.fill("Search by number", search)
		b.submit("Search")
		rows := b.eval(`return [...document.querySelectorAll('tbody th')].map(th => th.textContent).join(',');`)
		if rows != want {
			t.Errorf("searching %q lists %q; want %q", search, rows, want)
		}
	}
	b.fill("Search by number", "0812")
	b.submit("Search")
	b.waitText("must be digits that begin a Kenyan mobile number")
	b.checkWidths("suppressions-search-error")
	b.fill("Search by number", "0799")
	b.submit("Search")
	b.waitText("No number on your list begins with that.")

	// Paging: Older continues after the last row shown, Newest goes back.
	b.open(suppressionsPage + "?page_size=3")
	first := b.eval(`return [...document.querySelectorAll('tbody th')].map(th => th.textContent).join(',');`)
	b.submit("Older")
	older := b.eval(`return [...document.querySelectorAll('tbody th')].map(th => th.textContent).join(',');`)
	if first != "+254110000003,+254733000002,+254722000001" || older != "+254712345678" {
		t.Errorf("the pages list %q, then %q", first, older)
	}
	b.submit("Newest")
	b.waitText("+254110000003")

	// Remove, after a confirmation, back to the page it was on.
	b.fill("Search by number", "0712")
	b.submit("Search")
	b.click("Remove +254712345678")
	b.waitText("sends and campaigns will message +254712345678 again")
	b.checkWidths("suppressions-remove")
	b.submit("Yes, remove +254712345678")
	b.waitText("Removed +254712345678 from your suppression list: sends and campaigns can message it again.")
	b.waitText("No number on your list begins with that.")
	if p := b.path(); p != suppressionsPage+"?search=0712" {
		t.Errorf("after the removal the tab is at %q; want the list it was on", p)
	}
	if got := n.suppressed(a); got != 3 {
		t.Errorf("%d suppressions after the removal; want 3", got)
	}
	if got := quoteSuppressed(); got != 1.0 { // 0722000001 is still on the list
		t.Errorf("a quote after the removal has suppressed_count %v; want 1", got)
	}

	// Another tenant sees none of it, and neither a search nor a forged form reaches it.
	b.submit("Sign out")
	b.signInAs(other)
	b.open(suppressionsPage)
	b.waitText("Your suppression list is empty.")
	b.fill("Search by number", "0722")
	b.submit("Search")
	b.waitText("No number on your list begins with that.")
	if text := b.text(); strings.Contains(text, "+254722000001") || strings.Contains(text, "+254110000003") {
		t.Errorf("another tenant's list shows the first's numbers:\n%s", text)
	}
	p := n.pages(t)
	p.signIn(other)
	for _, phone := range []string{"+254722000001", "0722000001", "not-a-number"} {
		r := p.post(suppressionsPage, suppressionsPage+"/"+url.PathEscape(phone)+"/remove", nil)
		if r.Status != http.StatusNotFound || !strings.Contains(r.Body, "Page not found") {
			t.Errorf("another tenant removing %s = %d:\n%.300s", phone, r.Status, r.Body)
		}
	}
	if got := n.suppressed(a); got != 3 {
		t.Errorf("%d suppressions after another tenant's attempts; want 3", got)
	}
	// A state change without the session's token changes nothing.
	mine := n.pages(t)
	mine.signIn(a)
	for path, form := range map[string]url.Values{
		suppressionsPage: {"phone": {"0799000000"}},
		suppressionsPage + "/" + url.PathEscape("+254722000001") + "/remove": {},
	} {
		form.Set("_csrf", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
		if r := mine.do("POST", path, form); r.Status != http.StatusForbidden || !strings.Contains(r.Body, "nothing was changed") {
			t.Errorf("POST %s with a wrong token = %d", path, r.Status)
		}
	}
	if n.suppressed(a) != 3 || n.suppressed(other) != 0 {
		t.Error("a form without its token changed a list")
	}
	// An altered link is said on the page, not an error page.
	if r := mine.get(suppressionsPage + "?cursor=AAAA"); r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "This page’s link is not valid") {
		t.Errorf("an altered cursor = %d:\n%.300s", r.Status, r.Body)
	}
}

// A CSV of numbers is imported from the suppression list's page as POST /suppressions/import
// does: the page says how many were added, already there and not read, listing the rows not
// read with why; the numbers are left out of the next quote at once. A form without a file
// is said beside the field. Every state passes the accessibility check at 1280 and 375
// pixels.
func TestDashboardSuppressionImportInBrowser(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("suppr-import@example.com")
	n.suppress(a, "0712000003")
	csvFile := filepath.Join(t.TempDir(), "stop.csv")
	if err := os.WriteFile(csvFile, []byte("phone,reason\n0712000001,asked by phone\n+254712000002\n0712000003\nnot a number\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := n.tab(t)
	b.signInAs(a)
	b.open(suppressionsPage)
	b.submit("Import")
	b.waitText("is required: a CSV of numbers")
	b.checkWidths("suppressions-import-empty")
	b.attach("CSV file", csvFile)
	b.submit("Import")
	b.waitText("Added 2 numbers to your suppression list; 1 was on it already; 1 row was not read.")
	if text := b.flat(); !strings.Contains(text, "not a number") || !strings.Contains(text, "Rows not read") {
		t.Errorf("the page does not list the row not read:\n%s", text)
	}
	b.checkWidths("suppressions-imported")
	q := n.quoteOf(a, map[string]any{"message": "hi", "recipients": []string{"0712000001", "0712000002", "0712000004"}})
	if q["suppressed_count"] != 2.0 || q["recipients_count"] != 1.0 {
		t.Errorf("the next quote = %v; want the 2 imported numbers left out", q)
	}
}
