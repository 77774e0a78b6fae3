package app_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/cmd/tuma/app"
)

// A state change without the form's token is refused with a 403 page and changes nothing;
// the sign-in form needs the pre-session cookie's token.
func TestDashboardRefusesFormsWithoutTheirToken(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("csrf@example.com")
	p := n.pages(t)
	forged := p.do("POST", "/app/login", url.Values{"email": {a.Email}, "password": {a.Password}})
	if forged.Status != http.StatusForbidden || !strings.Contains(forged.Body, "nothing was changed") {
		t.Fatalf("sign-in without the token = %d:\n%.500s", forged.Status, forged.Body)
	}
	p.signIn(a)
	unread := func() int64 {
		return n.sqlInt(`SELECT count(*) FROM notifications WHERE account_id = $1 AND NOT is_read`, a.ID)
	}
	n.do("POST", "/admin/notifications/promo", map[string]any{"title": "Hello", "message": "News", "account_ids": []string{a.ID}}, adminAuth()...)
	before := unread()
	for name, form := range map[string]url.Values{
		"no token":    {},
		"wrong token": {"_csrf": {"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}},
		"garbage":     {"_csrf": {"<script>"}},
	} {
		r := p.do("POST", "/app/notifications/read-all", form)
		if r.Status != http.StatusForbidden || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: %d %s; want a 403 page", name, r.Status, r.Header.Get("Content-Type"))
		}
	}
	if before == 0 || unread() != before {
		t.Fatalf("unread %d → %d: a refused form changed something", before, unread())
	}
	// Another session's token is not this one's.
	q := n.pages(t)
	q.signIn(a)
	other := q.token("/app/notifications")
	if r := p.do("POST", "/app/notifications/read-all", url.Values{"_csrf": {other}}); r.Status != http.StatusForbidden {
		t.Errorf("another session's token = %d; want 403", r.Status)
	}
	// The header htmx sends works as the field does.
	r := p.do("POST", "/app/notifications/read-all", url.Values{}, "X-CSRF-Token", p.token("/app/notifications"))
	r.expect(t, http.StatusSeeOther, "/app/notifications")
	if unread() != 0 {
		t.Errorf("%d unread after mark all read", unread())
	}
}

// A session ends after 30 minutes unused and at its maximum age however used; using it
// keeps it alive until then.
func TestDashboardSessionExpires(t *testing.T) {
	clk := newClock()
	n := startNode(t, map[string]string{"TUMA_SESSION_MAX_AGE": "1h"}, app.WithClock(clk.now))
	a := n.register("idle@example.com")
	p := n.pages(t)
	p.signIn(a)
	p.get("/app/").expect(t, http.StatusOK, "")
	clk.advance(29 * time.Minute)
	p.get("/app/notifications").expect(t, http.StatusOK, "") // used: the idle clock starts again
	clk.advance(29 * time.Minute)
	p.get("/app/").expect(t, http.StatusOK, "")
	clk.advance(31 * time.Minute) // past the maximum age, though used within 30 minutes
	p.get("/app/notifications").expect(t, http.StatusSeeOther, "/app/login?next=%2Fapp%2Fnotifications")

	p.signIn(a)
	clk.advance(30*time.Minute + time.Second)
	// An htmx request is told to take the whole page to sign in, not given the form inside it.
	if r := p.do("GET", "/app/notifications", nil, "HX-Request", "true"); r.Status != http.StatusUnauthorized ||
		r.Header.Get("HX-Redirect") != "/app/login?next=%2Fapp%2Fnotifications" {
		t.Errorf("expired htmx request = %d HX-Redirect %q", r.Status, r.Header.Get("HX-Redirect"))
	}
	p.get("/app/").expect(t, http.StatusSeeOther, "/app/login")
	if left := n.sqlInt(`SELECT count(*) FROM web_sessions WHERE account_id = $1`, a.ID); left != 0 {
		t.Errorf("%d sessions left after both expired", left)
	}
}

// Signing out, a new password and a suspension end sessions; a suspended account's session
// gets a 403 page.
func TestDashboardSessionsEnd(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("end@example.com")
	p := n.pages(t)
	p.signIn(a)
	p.post("/app/", "/app/logout", nil).expect(t, http.StatusSeeOther, "/app/login")
	p.get("/app/").expect(t, http.StatusSeeOther, "/app/login")

	p.signIn(a)
	access, _ := n.login(a)
	if r := n.do("PATCH", "/auth/change-password", map[string]string{"current_password": a.Password, "new_password": "Newer123"}, bearer(access)...); r.Status != 200 {
		t.Fatalf("change password = %d %s", r.Status, r.Body)
	}
	p.get("/app/").expect(t, http.StatusSeeOther, "/app/login")
	if left := n.sqlInt(`SELECT count(*) FROM web_sessions WHERE account_id = $1`, a.ID); left != 0 {
		t.Errorf("%d sessions left after a new password", left)
	}
	a.Password = "Newer123"

	p.signIn(a)
	if r := n.do("POST", "/admin/accounts/"+a.ID+"/suspend", nil, adminAuth()...); r.Status != 200 {
		t.Fatalf("suspend = %d %s", r.Status, r.Body)
	}
	r := p.get("/app/")
	if r.Status != http.StatusForbidden || !strings.Contains(r.Body, "suspended") {
		t.Fatalf("a suspended account's page = %d:\n%.500s", r.Status, r.Body)
	}
	r = p.post("/app/login", "/app/login", url.Values{"email": {a.Email}, "password": {a.Password}})
	if r.Status != http.StatusForbidden {
		t.Errorf("a suspended account signing in = %d; want 403", r.Status)
	}
}

// Sign-in spends the API's per-email budget: past it, a 429 page says when to try again.
func TestDashboardSignInBudget(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_LOGIN_ATTEMPTS_PER_MINUTE": "2"})
	a := n.register("budget@example.com")
	p := n.pages(t)
	for range 2 {
		r := p.post("/app/login", "/app/login", url.Values{"email": {a.Email}, "password": {"Wrong1234"}})
		if r.Status != http.StatusUnauthorized || !strings.Contains(r.Body, "The email or password is wrong.") {
			t.Fatalf("wrong password = %d:\n%.800s", r.Status, r.Body)
		}
		if !strings.Contains(r.Body, `value="`+a.Email+`"`) {
			t.Error("the form lost the email address")
		}
	}
	r := p.post("/app/login", "/app/login", url.Values{"email": {a.Email}, "password": {a.Password}})
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || !strings.Contains(r.Body, "seconds") {
		t.Fatalf("over the budget = %d (Retry-After %q):\n%.800s", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
}

// Another account's notification is a 404 page, and stays unread.
func TestDashboardOtherTenantsIDsAreNotFound(t *testing.T) {
	n := startNode(t, nil)
	a, b := n.register("mine@example.com"), n.register("theirs@example.com")
	n.do("POST", "/admin/notifications/promo", map[string]any{"title": "Theirs", "message": "x", "account_ids": []string{b.ID}}, adminAuth()...)
	theirs := n.sqlString(`SELECT id::text FROM notifications WHERE account_id = $1 AND title = 'Theirs'`, b.ID)
	p := n.pages(t)
	p.signIn(a)
	for _, path := range []string{"/app/notifications/" + theirs + "/read", "/app/notifications/not-a-uuid/read"} {
		if r := p.post("/app/notifications", path, nil); r.Status != http.StatusNotFound || !strings.Contains(r.Body, "Page not found") {
			t.Errorf("%s = %d:\n%.300s", path, r.Status, r.Body)
		}
	}
	if n.sqlInt(`SELECT count(*) FROM notifications WHERE id = $1 AND is_read`, theirs) != 0 {
		t.Error("another account's notification was marked read")
	}
	if r := p.get("/app/no-such-page"); r.Status != http.StatusNotFound || !strings.Contains(r.Body, "<h1>Page not found</h1>") {
		t.Errorf("an unknown page = %d:\n%.300s", r.Status, r.Body)
	}
}

// What a tenant writes is shown as text: the company name and notification texts.
func TestDashboardEscapesTenantText(t *testing.T) {
	n := startNode(t, nil)
	evil := `<img src=x onerror=alert(1)>"'`
	r := n.do("POST", "/auth/register", map[string]string{"email": "xss@example.com", "password": "Secret123", "full_name": evil, "company_name": evil})
	if r.Status != 201 {
		t.Fatalf("register = %d %s", r.Status, r.Body)
	}
	a := account{ID: r.json(t)["id"].(string), Email: "xss@example.com", Password: "Secret123"}
	n.do("POST", "/admin/notifications/promo", map[string]any{"title": evil, "message": "<script>alert(2)</script>", "account_ids": []string{a.ID}}, adminAuth()...)
	p := n.pages(t)
	p.signIn(a)
	for _, path := range []string{"/app/", "/app/notifications"} {
		body := p.get(path).expect(t, http.StatusOK, "").Body
		if strings.Contains(body, "<img src=x") || strings.Contains(body, "<script>alert") || !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;") {
			t.Errorf("%s shows tenant text unescaped:\n%s", path, body)
		}
	}
}

func gunzip(t *testing.T, s string) string {
	t.Helper()
	r, err := gzip.NewReader(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var assetRE = regexp.MustCompile(`(?:href|src)="(/app/static/[^"]+)"`)

// Every page carries the security headers; a page and what it loads weigh at most 150 KB
// compressed; assets are cached for good under names that change with their content.
func TestDashboardHeadersAndWeight(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("headers@example.com")
	p := n.pages(t)
	p.signIn(a)
	out := n.pages(t) // signed out
	for _, path := range []string{"/app/login", "/app/signup", "/app/forgot", "/app/reset?token=x", "/app/", "/app/notifications", "/app/contacts/suppressions", "/app/messages/inbound", "/app/settings", "/app/verify", "/app/nope"} {
		c := p
		if path == "/app/login" || path == "/app/signup" || path == "/app/forgot" || strings.HasPrefix(path, "/app/reset") {
			c = out
		}
		r := c.do("GET", path, nil, "Accept-Encoding", "gzip")
		if r.Status != 200 && path != "/app/nope" {
			t.Fatalf("%s = %d", path, r.Status)
		}
		h := r.Header
		if !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") || strings.Contains(h.Get("Content-Security-Policy"), "unsafe-inline") ||
			h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s headers = %v", path, h)
		}
		want := "same-origin"
		if strings.HasPrefix(path, "/app/reset") {
			want = "no-referrer" // its address holds the token from the mail
		}
		if h.Get("Referrer-Policy") != want {
			t.Errorf("%s Referrer-Policy %q; want %q", path, h.Get("Referrer-Policy"), want)
		}
		total := len(r.Body)
		html := r.Body
		if h.Get("Content-Encoding") == "gzip" {
			html = gunzip(t, r.Body)
		} else if len(r.Body) > 1024 {
			t.Errorf("%s (%d bytes) was not compressed", path, len(r.Body))
		}
		if strings.Contains(html, " style=") || strings.Contains(html, "<style") || regexp.MustCompile(`<script>|<script [^s]`).MatchString(html) {
			t.Errorf("%s has inline style or script", path)
		}
		assets := assetRE.FindAllStringSubmatch(html, -1)
		if len(assets) != 2 {
			t.Errorf("%s loads %d assets; want the stylesheet and htmx", path, len(assets))
		}
		for _, m := range assets {
			ar := c.do("GET", m[1], nil, "Accept-Encoding", "br, gzip")
			if ar.Status != 200 || ar.Header.Get("Content-Encoding") == "" || !strings.Contains(ar.Header.Get("Cache-Control"), "immutable") {
				t.Errorf("%s: %d %v", m[1], ar.Status, ar.Header)
			}
			total += len(ar.Body)
		}
		if total > 150<<10 {
			t.Errorf("%s loads %d bytes compressed; want at most 150 KB", path, total)
		}
		t.Logf("%s: %d bytes compressed with its assets", path, total)
	}
	if r := p.get("/"); r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/app/" {
		t.Errorf("GET / = %d → %q; want 303 /app/", r.Status, r.Header.Get("Location"))
	}
}

// A form field with a NUL or bytes that are not UTF-8 is refused with a message on the page
// (422), and changes nothing, on public forms as on signed-in ones; before, PostgreSQL
// refused it and the page was a 500.
func TestDashboardRefusesTextThatCannotBeStored(t *testing.T) {
	n := startNode(t, fastSims)
	a := n.register("nul@example.com")
	n.credit(a, "100")
	g := n.group(a, "G")
	n.contact(a, g, "0712000001", "Jo", "")
	signup := func(email, name string) url.Values {
		return url.Values{"email": {email}, "password": {"Secret123"}, "full_name": {name}, "company_name": {"Acme"},
			"phone": {"0712345678"}, "business_type": {"retail"}, "country": {"KE"}}
	}
	pub := n.pages(t)
	for _, bad := range []string{"J\x00", "J\xff"} {
		if r := pub.post("/app/signup", "/app/signup", signup("new@example.com", bad)); r.Status != http.StatusUnprocessableEntity ||
			!strings.Contains(r.Body, "cannot be saved") {
			t.Errorf("sign-up with %q = %d:\n%.2000s", bad, r.Status, r.Body)
		}
	}
	if c := n.sqlInt(`SELECT count(*) FROM accounts WHERE email = 'new@example.com'`); c != 0 {
		t.Errorf("%d accounts made by refused sign-ups", c)
	}
	p := n.pages(t)
	p.signIn(a)
	for _, bad := range []string{"x\x00y", "x\xffy"} {
		for _, r := range []page{
			p.post("/app/campaigns/new", "/app/campaigns", campaignForm(bad, g, "Hi", "k-"+url.QueryEscape(bad))),
			p.post("/app/senders", "/app/senders", url.Values{"name": {"ACME"}, "network": {"safaricom"}, "purpose": {bad}}),
			p.post("/app/contacts/suppressions", "/app/contacts/suppressions", url.Values{"phone": {"0712000444"}, "reason": {bad}}),
		} {
			if r.Status != http.StatusUnprocessableEntity || !strings.Contains(r.Body, "cannot be saved") {
				t.Errorf("a form with %q = %d:\n%.2000s", bad, r.Status, r.Body)
			}
		}
	}
	for _, q := range []string{`SELECT count(*) FROM campaigns`, `SELECT count(*) FROM sender_ids`, `SELECT count(*) FROM suppressions`} {
		if c := n.sqlInt(q); c != 0 {
			t.Errorf("%s = %d after refused forms; want 0", q, c)
		}
	}
}
