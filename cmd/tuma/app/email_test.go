package app_test

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/cmd/tuma/app"
)

// clock is a test clock that only moves when told.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}
func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// mailNode starts a node that mails through a sink.
func mailNode(t *testing.T, opts ...app.Option) (*node, *smtpSink) {
	t.Helper()
	sink := startSMTP(t, "127.0.0.1:0")
	n := startNode(t, map[string]string{"TUMA_SMTP_URL": "smtp://" + sink.addr(), "TUMA_MAIL_RETRY_MIN": "100ms"}, opts...)
	return n, sink
}

// noRedirect fetches without following redirects.
func (n *node) noRedirect(path string) *http.Response {
	n.t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(n.base + path)
	if err != nil {
		n.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func (n *node) assertBonus(a account, want float64) {
	n.t.Helper()
	if b := n.balance(a); b != want {
		n.t.Errorf("balance %v; want %v", b, want)
	}
	tx := n.do("GET", "/wallet/transactions?type=topup", nil, key(a)...).json(n.t)
	bonuses := 0
	for _, x := range tx["data"].([]any) {
		if x.(map[string]any)["reference"] == "welcome-bonus" {
			bonuses++
			if x.(map[string]any)["amount_kes"] != 2.5 {
				n.t.Errorf("bonus entry %v; want 2.50", x)
			}
		}
	}
	if bonuses != 1 {
		n.t.Errorf("%d welcome-bonus entries; want exactly 1", bonuses)
	}
	found := false
	for _, x := range n.do("GET", "/notifications", nil, key(a)...).json2(n.t) {
		found = found || x.(map[string]any)["type"] == "welcome_bonus"
	}
	if !found {
		n.t.Error("no welcome_bonus notification")
	}
}

func TestVerifyByLink(t *testing.T) {
	n, sink := mailNode(t)
	a := n.register("link@example.com")
	m := sink.wait(a.Email, "Confirm your email")
	link := linkRE.FindString(m.Text)
	if link == "" || !strings.Contains(m.HTML, "verify-email?token=") {
		t.Fatalf("verification email without a link (text %q)", m.Text)
	}
	path := link[strings.Index(link, "/auth/verify-email"):]
	resp := n.noRedirect(path)
	if resp.StatusCode != 303 || !strings.HasSuffix(resp.Header.Get("Location"), "/app/?verified=1") {
		t.Fatalf("link = %d → %q; want 303 to the dashboard with verified=1", resp.StatusCode, resp.Header.Get("Location"))
	}
	if me := n.do("GET", "/auth/me", nil, key(a)...).json(t); me["is_verified"] != true {
		t.Fatalf("me = %v; want verified", me)
	}
	n.assertBonus(a, 2.5)
	// The bonus is spendable at once: the tenant actor learnt of it.
	if r := n.send(a, map[string]any{"recipients": numbers(5, 0), "message": "hi"}); r.Status != 202 {
		t.Fatalf("spending the bonus = %d %s", r.Status, r.Body)
	}
	if resp := n.noRedirect(path); resp.Header.Get("Location") != n.noRedirect(path).Header.Get("Location") ||
		!strings.Contains(resp.Header.Get("Location"), "verified=0&reason=invalid") {
		t.Errorf("reused link → %q; want verified=0&reason=invalid", resp.Header.Get("Location"))
	}
	if loc := n.noRedirect("/auth/verify-email?token=ev_nonsense").Header.Get("Location"); !strings.Contains(loc, "reason=invalid") {
		t.Errorf("bad token → %q", loc)
	}
	n.do("POST", "/auth/send-verification-code", nil, key(a)...).problem(t, 409, "already_verified")
}

func TestVerifyByCode(t *testing.T) {
	n, sink := mailNode(t)
	a := n.register("code@example.com")
	sink.wait(a.Email, "Confirm your email")
	r := n.do("POST", "/auth/send-verification-code", nil, key(a)...)
	if r.Status != 200 || r.json(t)["expires_in"] != 600.0 {
		t.Fatalf("send code = %d %s", r.Status, r.Body)
	}
	code := codeRE.FindString(sink.wait(a.Email, "verification code").Text)
	if code == "" {
		t.Fatal("no 6-digit code in the email")
	}
	n.do("POST", "/auth/verify-code", map[string]string{"code": "12345"}, key(a)...).problem(t, 422, "validation_failed")
	r = n.do("POST", "/auth/verify-code", map[string]string{"code": code}, key(a)...)
	if r.Status != 200 || r.json(t)["is_verified"] != true {
		t.Fatalf("verify code = %d %s", r.Status, r.Body)
	}
	n.assertBonus(a, 2.5)
	n.do("POST", "/auth/verify-code", map[string]string{"code": code}, key(a)...).problem(t, 409, "already_verified")
}

func TestWrongCodesLockTheCode(t *testing.T) {
	n, sink := mailNode(t)
	a := n.register("locked@example.com")
	n.do("POST", "/auth/send-verification-code", nil, key(a)...)
	code := codeRE.FindString(sink.wait(a.Email, "verification code").Text)
	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	for i := range 5 {
		p := n.do("POST", "/auth/verify-code", map[string]string{"code": wrong}, key(a)...).problem(t, 400, "invalid_code")
		if p["attempts_remaining"] != float64(4-i) {
			t.Errorf("attempt %d: attempts_remaining %v; want %d", i+1, p["attempts_remaining"], 4-i)
		}
	}
	n.do("POST", "/auth/verify-code", map[string]string{"code": code}, key(a)...).problem(t, 429, "code_locked")
	// A fresh code works.
	n.do("POST", "/auth/send-verification-code", nil, key(a)...)
	fresh := codeRE.FindString(sink.wait(a.Email, "verification code").Text)
	if r := n.do("POST", "/auth/verify-code", map[string]string{"code": fresh}, key(a)...); r.Status != 200 {
		t.Fatalf("fresh code = %d %s", r.Status, r.Body)
	}
	n.assertBonus(a, 2.5)
}

func TestExpiredCode(t *testing.T) {
	clk := newClock()
	n, sink := mailNode(t, app.WithClock(clk.now))
	a := n.register("expired@example.com")
	n.do("POST", "/auth/send-verification-code", nil, key(a)...)
	code := codeRE.FindString(sink.wait(a.Email, "verification code").Text)
	clk.advance(10*time.Minute + time.Second)
	n.do("POST", "/auth/verify-code", map[string]string{"code": code}, key(a)...).problem(t, 400, "code_expired")
}

func TestBothRoutesRacingPayOneBonus(t *testing.T) {
	n, sink := mailNode(t)
	for i := range 5 {
		a := n.register("race" + string(rune('a'+i)) + "@example.com")
		link := linkRE.FindString(sink.wait(a.Email, "Confirm your email").Text)
		path := link[strings.Index(link, "/auth/verify-email"):]
		n.do("POST", "/auth/send-verification-code", nil, key(a)...)
		code := codeRE.FindString(sink.wait(a.Email, "verification code").Text)
		var wg sync.WaitGroup
		wg.Go(func() { n.noRedirect(path) })
		wg.Go(func() { n.do("POST", "/auth/verify-code", map[string]string{"code": code}, key(a)...) })
		wg.Wait()
		if me := n.do("GET", "/auth/me", nil, key(a)...).json(t); me["is_verified"] != true {
			t.Fatalf("not verified after both routes: %v", me)
		}
		n.assertBonus(a, 2.5)
	}
}

func TestPasswordReset(t *testing.T) {
	clk := newClock()
	n, sink := mailNode(t, app.WithClock(clk.now))
	a := n.register("reset@example.com")
	_, refresh := n.login(a)
	known := n.do("POST", "/auth/forgot-password", map[string]string{"email": a.Email})
	unknown := n.do("POST", "/auth/forgot-password", map[string]string{"email": "nobody@example.com"})
	if known.Status != 200 || unknown.Status != 200 || string(known.Body) != string(unknown.Body) {
		t.Fatalf("forgot-password answers differ: %d %s vs %d %s", known.Status, known.Body, unknown.Status, unknown.Body)
	}
	m := sink.wait(a.Email, "Reset your")
	token := tokenRE.FindString(m.Text)
	if token == "" {
		t.Fatalf("no reset token in %q", m.Text)
	}
	n.do("POST", "/auth/reset-password", map[string]string{"token": token, "new_password": "weak"}).problem(t, 422, "validation_failed")
	if r := n.do("POST", "/auth/reset-password", map[string]string{"token": token, "new_password": "Brand3New"}); r.Status != 200 {
		t.Fatalf("reset = %d %s", r.Status, r.Body)
	}
	n.do("POST", "/auth/reset-password", map[string]string{"token": token, "new_password": "Other4New"}).problem(t, 400, "invalid_token")
	n.do("POST", "/auth/refresh", map[string]string{"refresh_token": refresh}).problem(t, 401, "invalid_refresh_token")
	a.Password = "Brand3New"
	n.login(a)

	// A token older than an hour is refused.
	n.do("POST", "/auth/forgot-password", map[string]string{"email": a.Email})
	old := tokenRE.FindString(sink.wait(a.Email, "Reset your").Text)
	clk.advance(time.Hour + time.Second)
	n.do("POST", "/auth/reset-password", map[string]string{"token": old, "new_password": "Later5New"}).problem(t, 400, "invalid_token")
	if sink.count("nobody@example.com") != 0 {
		t.Error("an email went to an address with no account")
	}
}

func TestPendingEmail(t *testing.T) {
	n, sink := mailNode(t)
	a := n.register("typo@exmaple.com")
	sink.wait(a.Email, "Confirm your email")
	if r := n.do("GET", "/auth/pending-email", nil, key(a)...).json(t); r["email"] != a.Email || r["is_verified"] != false {
		t.Fatalf("pending-email = %v", r)
	}
	n.register("taken@example.com")
	n.do("PATCH", "/auth/pending-email", map[string]string{"email": "taken@example.com"}, key(a)...).problem(t, 409, "email_taken")
	n.do("PATCH", "/auth/pending-email", map[string]string{"email": "bad"}, key(a)...).problem(t, 422, "validation_failed")
	r := n.do("PATCH", "/auth/pending-email", map[string]string{"email": "Typo@Example.com"}, key(a)...)
	if r.Status != 200 || r.json(t)["email"] != "typo@example.com" {
		t.Fatalf("change = %d %s", r.Status, r.Body)
	}
	link := linkRE.FindString(sink.wait("typo@example.com", "Confirm your email").Text)
	code := codeRE.FindString(sink.wait("typo@example.com", "verification code").Text)
	if link == "" || code == "" {
		t.Fatal("the new address did not get a link and a code")
	}
	if r := n.do("POST", "/auth/verify-code", map[string]string{"code": code}, key(a)...); r.Status != 200 {
		t.Fatalf("verify with the new code = %d %s", r.Status, r.Body)
	}
	n.do("PATCH", "/auth/pending-email", map[string]string{"email": "other@example.com"}, key(a)...).problem(t, 409, "already_verified")
	if me := n.do("GET", "/auth/me", nil, key(a)...).json(t); me["email"] != "typo@example.com" {
		t.Errorf("me = %v", me)
	}
}

func TestResendVerificationIsGeneric(t *testing.T) {
	n, sink := mailNode(t)
	a := n.register("resend@example.com")
	sink.wait(a.Email, "Confirm your email")
	known := n.do("POST", "/auth/resend-verification", map[string]string{"email": "RESEND@example.com"})
	unknown := n.do("POST", "/auth/resend-verification", map[string]string{"email": "ghost@example.com"})
	if known.Status != 200 || string(known.Body) != string(unknown.Body) {
		t.Fatalf("answers differ: %s vs %s", known.Body, unknown.Body)
	}
	sink.wait(a.Email, "Confirm your email")
}

func TestMailWaitsForSMTPServer(t *testing.T) {
	// Reserve a port, then leave it closed: the SMTP server is down.
	probe := startSMTP(t, "127.0.0.1:0")
	addr := probe.addr()
	probe.close()
	n := startNode(t, map[string]string{"TUMA_SMTP_URL": "smtp://" + addr, "TUMA_MAIL_RETRY_MIN": "100ms", "TUMA_MAIL_RETRY_MAX": "300ms"})
	start := time.Now()
	a := n.register("patient@example.com") // does not wait for mail
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("registration took %v with the mail server down", took)
	}
	// The outbox keeps trying: wait until it has failed twice, and the mail is still queued.
	deadline := time.Now().Add(10 * time.Second)
	for n.sqlInt(`SELECT coalesce(max(attempts), 0) FROM email_outbox WHERE to_address = $1 AND sent_at IS NULL`, a.Email) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the outbox did not retry the undeliverable email")
		}
		time.Sleep(20 * time.Millisecond)
	}
	sink := startSMTP(t, addr)
	if m := sink.wait(a.Email, "Confirm your email"); linkRE.FindString(m.Text) == "" {
		t.Fatal("delayed email lost its link")
	}
}
