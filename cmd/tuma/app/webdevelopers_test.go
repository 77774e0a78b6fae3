package app_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var (
	newKeyRE   = regexp.MustCompile(`<code id="new-key">(sk_live_[0-9A-Za-z]+)</code>`)
	replacesRE = regexp.MustCompile(`name="replaces" value="([^"]*)"`)
)

// me is GET /auth/me's status with an API key.
func (n *node) me(apiKey string) int {
	n.t.Helper()
	return n.do("GET", "/auth/me", nil, "X-API-Key", apiKey).Status
}

// The Developers page shows the key's first characters, never the key; rotating it through
// the confirm form shows the new key once, in that answer only: it works on the API and the
// old key is 401; posting the form again (a reload) rotates nothing and shows no key.
func TestDevelopersRotateKeyForm(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("developers-form@example.com")
	other := n.register("developers-other@example.com")
	p := n.pages(t)
	p.signIn(a)

	pg := p.get("/app/developers").expect(t, http.StatusOK, "")
	for _, want := range []string{a.APIKey[:12] + "…", "Getting started", n.base + "/sms/send", "X-API-Key: YOUR_API_KEY", "Webhooks",
		"Webhook endpoints tell your systems", `href="/app/developers/webhooks"`} {
		if !strings.Contains(pg.Body, want) {
			t.Errorf("the Developers page lacks %q:\n%s", want, pg.Body)
		}
	}
	if strings.Contains(pg.Body, a.APIKey) {
		t.Fatal("the Developers page shows the whole key")
	}
	if st := pg.Header.Get("Server-Timing"); !strings.HasPrefix(st, "app;dur=") || !strings.Contains(st, ", total;dur=") {
		t.Errorf("the page's Server-Timing is %q", st)
	}

	confirm := p.get("/app/developers/rotate").expect(t, http.StatusOK, "")
	if !strings.Contains(confirm.Body, "stops working the moment the new one is made") {
		t.Errorf("the confirm step does not warn:\n%s", confirm.Body)
	}
	m := replacesRE.FindStringSubmatch(confirm.Body)
	if m == nil || m[1] == "" {
		t.Fatalf("the confirm form names no key:\n%s", confirm.Body)
	}
	form := url.Values{"replaces": {m[1]}}

	// Without its CSRF token the form changes nothing.
	forged := p.do("POST", "/app/developers/rotate", form)
	forged.expect(t, http.StatusForbidden, "")
	if !strings.Contains(forged.Body, "nothing was changed") || newKeyRE.MatchString(forged.Body) {
		t.Errorf("the refused form says:\n%s", forged.Body)
	}
	if s := n.me(a.APIKey); s != http.StatusOK {
		t.Fatalf("after a forged rotation the key answers %d", s)
	}

	token := p.token("/app/developers/rotate")
	form.Set("_csrf", token)
	done := p.do("POST", "/app/developers/rotate", form).expect(t, http.StatusOK, "")
	k := newKeyRE.FindStringSubmatch(done.Body)
	if k == nil {
		t.Fatalf("the answer shows no new key:\n%s", done.Body)
	}
	newKey := k[1]
	if newKey == a.APIKey || !strings.Contains(done.Body, "The old key no longer works") {
		t.Fatalf("rotated to %q:\n%s", newKey, done.Body)
	}
	if cc := done.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("the key's page is Cache-Control %q", cc)
	}
	for _, c := range done.Header.Values("Set-Cookie") {
		if strings.Contains(c, newKey) {
			t.Errorf("a cookie carries the key: %s", c)
		}
	}
	if s := n.me(newKey); s != http.StatusOK {
		t.Errorf("the new key answers %d", s)
	}
	n.do("GET", "/auth/me", nil, key(a)...).problem(t, http.StatusUnauthorized, "unauthenticated")
	if s := n.me(other.APIKey); s != http.StatusOK {
		t.Errorf("another account's key answers %d", s)
	}

	// A reload posts the same form again: nothing rotates, no key is shown.
	again := p.do("POST", "/app/developers/rotate", form).expect(t, http.StatusConflict, "")
	if newKeyRE.MatchString(again.Body) || strings.Contains(again.Body, newKey) || !strings.Contains(again.Body, "already replaced") {
		t.Errorf("the form posted again shows:\n%s", again.Body)
	}
	if s := n.me(newKey); s != http.StatusOK {
		t.Errorf("after the form was posted again the new key answers %d", s)
	}
	for _, path := range []string{"/app/developers", "/app/developers/rotate", "/app/"} {
		body := p.get(path).expect(t, http.StatusOK, "").Body
		if strings.Contains(body, newKey) {
			t.Errorf("%s shows the new key again", path)
		}
		if path == "/app/developers" && !strings.Contains(body, newKey[:12]+"…") {
			t.Errorf("the Developers page does not show the new key's prefix %s", newKey[:12])
		}
	}
}

// In the browser: the page, the confirm step and the new key pass the accessibility check
// at both widths; the key shown works on the API.
func TestDevelopersPageInBrowser(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("developers-pages@example.com")
	b := n.tab(t)
	b.signInAs(a)
	b.open("/app/developers")
	b.waitText(a.APIKey[:12])
	b.waitText("Getting started")
	b.waitText("Webhooks")
	b.checkWidths("developers")

	b.submit("Rotate API key")
	b.waitText("Replace your API key?")
	b.checkWidths("developers-rotate")
	b.submit("Yes, rotate the key")
	b.waitText("Copy your new key now")
	newKey := b.eval(`return document.getElementById('new-key').textContent;`)
	if !strings.HasPrefix(newKey, "sk_live_") || newKey == a.APIKey {
		t.Fatalf("the page shows the key %q", newKey)
	}
	b.checkWidths("developers-rotated")
	if s := n.me(newKey); s != http.StatusOK {
		t.Errorf("the key the page showed answers %d", s)
	}
	if s := n.me(a.APIKey); s != http.StatusUnauthorized {
		t.Errorf("the old key answers %d", s)
	}

	b.open("/app/developers")
	b.waitText(newKey[:12])
	if strings.Contains(b.text(), newKey) {
		t.Error("the Developers page shows the new key again")
	}
}
