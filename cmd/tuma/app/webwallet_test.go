package app_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A person tops up from the wallet page (a refused amount first) through the sandbox
// checkout and lands back on the wallet with the banner, the new balance and the payment in
// the ledger; the ledger filters by type; a cancelled checkout says nothing was charged.
func TestWalletPagesInBrowser(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("wallet-pages@example.com")
	b := n.tab(t)
	b.signInAs(a)
	b.open("/app/wallet")
	for _, want := range []string{"KES 0.00", "Starter", "Pricing tiers", "Enterprise", "No transactions"} {
		b.waitText(want)
	}
	b.checkWidths("wallet")

	b.fill("Amount in KES", "10")
	b.submit("Top up")
	b.waitText("must be from 50.00 to 1000000.00")
	b.checkWidths("wallet-topup-error")
	b.fill("Amount in KES", "1,500")
	b.submit("Top up")
	b.waitPath("/checkout/")
	if amount := b.eval(`return document.getElementById('amount').innerText;`); amount != "KES 1,500.00" {
		t.Fatalf("the checkout asks for %q", amount)
	}
	ref := b.eval(`return document.getElementById('reference').innerText;`)
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.ID("pay"))); err != nil {
		t.Fatal(err)
	}
	landed := b.waitPath("/app/wallet?")
	if !strings.Contains(landed, "topup=success") || !strings.Contains(landed, "reference="+ref) {
		t.Fatalf("back from the checkout at %q; want the wallet with topup=success", landed)
	}
	b.waitText("Payment received: your wallet has been topped up.")
	b.waitText("Reference " + ref)
	if text := b.text(); !regexp.MustCompile(`Balance\s+KES 1,500\.00`).MatchString(text) {
		t.Errorf("the wallet does not show the new balance:\n%s", text)
	}
	b.checkWidths("wallet-topped-up")
	n.assertCredited(a, ref, 1500)

	// A send is a debit in the ledger; the filter shows one kind at a time.
	if r := n.send(a, map[string]any{"recipients": numbers(2, 0), "message": "Hello"}); r.Status != 202 {
		t.Fatalf("send = %d %s", r.Status, r.Body)
	}
	b.open("/app/wallet")
	b.waitText("SMS to 2 recipients")
	b.fill("Type", "debit")
	b.submit("Filter")
	if p := b.path(); !strings.HasPrefix(p, "/app/wallet?type=debit") {
		t.Errorf("filtered at %q", p)
	}
	if text := b.text(); !strings.Contains(text, "SMS to 2 recipients") || strings.Contains(text, "Reference "+ref) {
		t.Errorf("the sends only:\n%s", text)
	}
	b.checkWidths("wallet-sends")
	b.fill("Type", "topup")
	b.submit("Filter")
	if text := b.text(); strings.Contains(text, "SMS to 2 recipients") || !strings.Contains(text, "Reference "+ref) {
		t.Errorf("the top-ups only:\n%s", text)
	}

	// A checkout cancelled: back on the wallet, told nothing was charged.
	b.open("/app/wallet")
	b.fill("Amount in KES", "100")
	b.submit("Top up")
	b.waitPath("/checkout/")
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.ID("cancel"))); err != nil {
		t.Fatal(err)
	}
	if landed := b.waitPath("/app/wallet?"); !strings.Contains(landed, "topup=failed") {
		t.Errorf("back from a cancelled checkout at %q", landed)
	}
	b.waitText("The payment did not go through, and nothing was charged.")
	b.checkWidths("wallet-topup-failed")

	// The page between a form and a checkout on another site links to the checkout.
	ref, _ = n.startTopup(a, 200)
	b.open("/app/wallet/checkout/" + ref)
	b.waitText("Wallet top-up: KES 200.00")
	b.checkWidths("wallet-checkout")
	b.click("Continue to the payment page")
	b.waitPath("/checkout/")
	b.waitText("KES 200.00")
}

// pageSecure fails unless a page answer carries the dashboard's security headers and no
// inline style or script.
func pageSecure(t *testing.T, path string, r page) {
	t.Helper()
	h := r.Header
	if !strings.Contains(h.Get("Content-Security-Policy"), "form-action 'self'") || h.Get("X-Frame-Options") != "DENY" ||
		h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s headers = %v", path, h)
	}
	if strings.Contains(r.Body, " style=") || strings.Contains(r.Body, "<style") || strings.Contains(r.Body, "<script>") {
		t.Errorf("%s has inline style or script", path)
	}
}

var locationRE = regexp.MustCompile(`^/checkout/[A-Za-z0-9_-]+$`)

// A top-up form opens one checkout however often it is sent, and none without its token; a
// checkout on another site is reached through a page that links to it; the ledger pages by
// cursor, and a bad filter is shown beside the filter.
func TestWalletPagesTopupOnceAndPage(t *testing.T) {
	n := startNode(t, nil)
	a, other := n.register("wallet-once@example.com"), n.register("wallet-other@example.com")
	p := n.pages(t)
	p.signIn(a)
	payments := func() int64 { return n.sqlInt(`SELECT count(*) FROM payments WHERE account_id = $1`, a.ID) }

	for name, form := range map[string]url.Values{"no token": {}, "wrong token": {"_csrf": {"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}} {
		form.Set("amount_kes", "500")
		if r := p.do("POST", "/app/wallet/topup", form); r.Status != http.StatusForbidden {
			t.Errorf("top-up with %s = %d; want 403", name, r.Status)
		}
	}
	if payments() != 0 {
		t.Fatal("a refused form opened a checkout")
	}

	key := regexp.MustCompile(`name="idempotency_key" value="([^"]+)"`).FindStringSubmatch(p.get("/app/wallet").Body)
	if key == nil {
		t.Fatal("the top-up form has no Idempotency-Key")
	}
	form := url.Values{"amount_kes": {"750"}, "idempotency_key": {key[1]}}
	first := p.post("/app/wallet", "/app/wallet/topup", form)
	again := p.post("/app/wallet", "/app/wallet/topup", form)
	loc := strings.TrimPrefix(first.Header.Get("Location"), n.base)
	if first.Status != http.StatusSeeOther || !locationRE.MatchString(loc) || again.Header.Get("Location") != first.Header.Get("Location") {
		t.Fatalf("the same form twice = %d → %q, %d → %q; want one checkout", first.Status, first.Header.Get("Location"),
			again.Status, again.Header.Get("Location"))
	}
	if payments() != 1 {
		t.Errorf("%d checkouts opened by one form", payments())
	}

	// Seen from another host name, the sandbox's checkout is another site: a page of ours
	// links to it (browsers hold a form's redirect to its page's form-action).
	req, err := http.NewRequest("POST", n.base+"/app/wallet/topup", strings.NewReader(url.Values{
		"amount_kes": {"60"}, "_csrf": {p.token("/app/wallet")}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Host = strings.Replace(strings.TrimPrefix(n.base, "http://"), "127.0.0.1", "localhost", 1)
	for _, c := range p.http.Jar.Cookies(req.URL) { // the jar would look for the other host's
		req.AddCookie(c)
	}
	resp, err := (&http.Client{CheckRedirect: p.http.CheckRedirect}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	via := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(via, "/app/wallet/checkout/TUMA-") {
		t.Fatalf("a checkout on another site = %d → %q; want our page about it", resp.StatusCode, via)
	}
	ref := strings.TrimPrefix(via, "/app/wallet/checkout/")
	auth := n.sqlString(`SELECT authorization_url FROM payments WHERE reference = $1`, ref)
	r := p.get(via).expect(t, http.StatusOK, "")
	if !strings.Contains(r.Body, `href="`+auth+`"`) || !strings.Contains(r.Body, "KES 60.00") {
		t.Errorf("the page before the checkout:\n%s", r.Body)
	}
	pageSecure(t, via, r)
	pageSecure(t, "/app/wallet", p.get("/app/wallet"))
	q := n.pages(t)
	q.signIn(other)
	if r := q.get(via); r.Status != http.StatusNotFound {
		t.Errorf("another account's checkout page = %d; want 404", r.Status)
	}

	// The ledger in pages of 20, newest first.
	for i := range 25 {
		if r := n.do("POST", "/admin/accounts/"+a.ID+"/credit", fmt.Sprintf(`{"amount_kes": %d, "description": "credit %d"}`, i+1, i), adminAuth()...); r.Status != 200 {
			t.Fatalf("credit = %d %s", r.Status, r.Body)
		}
	}
	body := p.get("/app/wallet").expect(t, http.StatusOK, "").Body
	if got := strings.Count(body, "<tr>\n      <td>"); got != 20 {
		t.Errorf("the first page lists %d transactions; want 20", got)
	}
	older := regexp.MustCompile(`href="(/app/wallet\?cursor=[^"#]+)[^"]*">Older transactions`).FindStringSubmatch(body)
	if older == nil {
		t.Fatalf("no link to older transactions:\n%s", body)
	}
	body = p.get(strings.ReplaceAll(older[1], "&amp;", "&")).expect(t, http.StatusOK, "").Body
	if got := strings.Count(body, "<tr>\n      <td>"); got != 5 || !strings.Contains(body, "Newest transactions") || strings.Contains(body, "Older transactions") {
		t.Errorf("the second page lists %d transactions:\n%s", got, body)
	}

	if r := p.get("/app/wallet?type=bogus"); r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, `id="f-type-error"`) ||
		!strings.Contains(r.Body, "must be one of topup, debit, refund, sender_id_fee") {
		t.Errorf("a bad filter = %d:\n%.2000s", r.Status, r.Body)
	}
	if r := p.get("/app/wallet?cursor=forged"); r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "Show the latest transactions") {
		t.Errorf("a forged cursor = %d:\n%.2000s", r.Status, r.Body)
	}
}
