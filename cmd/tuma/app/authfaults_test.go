package app_test

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Someone signed up with another person's address and corrected it (PATCH
// /auth/pending-email): a password reset mailed to the old address no longer works, or its
// holder could take the account.
func TestPendingEmailVoidsResetsSentToTheOldAddress(t *testing.T) {
	n, sink := mailNode(t)
	a := n.register("stranger@example.com")
	sink.wait(a.Email, "Confirm your email")
	n.do("POST", "/auth/forgot-password", map[string]string{"email": "stranger@example.com"})
	token := tokenRE.FindString(sink.wait("stranger@example.com", "Reset your").Text)
	if token == "" {
		t.Fatal("no reset token in the mail")
	}
	if r := n.do("PATCH", "/auth/pending-email", map[string]string{"email": "owner@example.com"}, key(a)...); r.Status != 200 {
		t.Fatalf("pending-email = %d %s", r.Status, r.Body)
	}
	if r := n.do("POST", "/auth/reset-password", map[string]string{"token": token, "new_password": "Stolen123"}); r.Status < 400 {
		t.Errorf("reset with the token mailed to the old address = %d %s; want it refused", r.Status, r.Body)
	}
	if r := n.do("POST", "/auth/login", map[string]string{"email": "owner@example.com", "password": a.Password}); r.Status != 200 {
		t.Errorf("the owner's own password = %d after the refused reset; want 200", r.Status)
	}
}

// A verified account asking for a code is told it is verified however often it asks, not
// that a code was sent recently (none was).
func TestSendCodeToAVerifiedAccountIsAlways409(t *testing.T) {
	n, sink := mailNode(t)
	a := n.register("verified@example.com")
	n.do("POST", "/auth/send-verification-code", nil, key(a)...)
	code := codeRE.FindString(sink.wait(a.Email, "verification code").Text)
	if r := n.do("POST", "/auth/verify-code", map[string]string{"code": code}, key(a)...); r.Status != 200 {
		t.Fatalf("verify = %d %s", r.Status, r.Body)
	}
	for i := range 8 {
		n.do("POST", "/auth/send-verification-code", nil, key(a)...).problem(t, 409, "already_verified")
		_ = i
	}
}

// A sign-in form sent as multipart with a NUL in a field is refused with a message (422) and
// changes nothing; it was a 500 from the database.
func TestMultipartSignInWithNulIsRefused(t *testing.T) {
	n := startNode(t, nil)
	p := n.pages(t)
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range map[string]string{"_csrf": p.token("/app/login"), "email": "a\x00b@example.com", "password": "Secret123"} {
		if err := w.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("POST", n.base+"/app/login", &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := p.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(body), "cannot be saved") {
		t.Errorf("multipart sign-in with a NUL = %d; want 422 saying why:\n%.600s", resp.StatusCode, body)
	}
}

// A browser whose User-Agent is long (cut inside a character) or not UTF-8 signs in and signs
// up like any other; both were a 500, and the sign-up had made the account first.
func TestOddUserAgentsSignInAndUp(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("ua@example.com")
	agents := []string{"Mozilla/5.0 " + strings.Repeat("x", 243) + "é tail", "Latin1 \xe9 agent"}
	for _, ua := range agents {
		p := n.pages(t)
		form := url.Values{"email": {a.Email}, "password": {a.Password}, "_csrf": {p.token("/app/login")}}
		p.do("POST", "/app/login", form, "User-Agent", ua).expect(t, http.StatusSeeOther, "/app/")
	}
	p := n.pages(t)
	form := url.Values{"email": {"ua2@example.com"}, "password": {"Secret123"}, "full_name": {"Jane"}, "company_name": {"Acme"},
		"_csrf": {p.token("/app/signup")}}
	if r := p.do("POST", "/app/signup", form, "User-Agent", agents[0]); r.Status != http.StatusSeeOther {
		t.Errorf("sign-up with a long User-Agent = %d; want 303 into the dashboard:\n%.600s", r.Status, r.Body)
	}
}
