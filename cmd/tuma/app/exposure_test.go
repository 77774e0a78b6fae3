package app_test

// Exposure: what outside input can make a node do, spend or keep. Each test starts a real
// node and drives it over HTTP the way a client (or an attacker) would.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/cmd/tuma/app"
	"github.com/tuma-sms/tuma/persistence/redis/redistest"
)

// refreshFrom sends a refresh with a made-up token (cheap, and counted by the per-IP auth
// budget) as if from behind a proxy that wrote xff.
func (n *node) refreshFrom(xff string) response {
	n.t.Helper()
	h := []string{}
	if xff != "" {
		h = append(h, "X-Forwarded-For", xff)
	}
	return n.do("POST", "/auth/refresh", map[string]string{"refresh_token": "rt_made_up"}, h...)
}

func TestTrustedProxiesChooseTheClient(t *testing.T) {
	// Without trusted proxies the header is ignored: a client cannot pose as many.
	n := startNode(t, map[string]string{"TUMA_AUTH_LIMIT_PER_IP": "2"})
	n.refreshFrom("198.51.100.1").problem(t, 401, "invalid_refresh_token")
	n.refreshFrom("198.51.100.2").problem(t, 401, "invalid_refresh_token")
	n.refreshFrom("198.51.100.3").problem(t, 429, "too_many_requests")

	// Behind a trusted proxy the client is the rightmost hop the proxy did not vouch for:
	// whatever the client wrote to the left of it is ignored.
	p := startNode(t, map[string]string{"TUMA_AUTH_LIMIT_PER_IP": "2", "TUMA_TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1"})
	p.refreshFrom("1.1.1.1, 203.0.113.7").problem(t, 401, "invalid_refresh_token")
	p.refreshFrom("2.2.2.2, 203.0.113.7, 10.1.2.3").problem(t, 401, "invalid_refresh_token") // through a second proxy
	r := p.refreshFrom("3.3.3.3, 203.0.113.7")
	r.problem(t, 429, "too_many_requests")
	if r.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	p.refreshFrom("203.0.113.8").problem(t, 401, "invalid_refresh_token") // another client
	// A malformed hop ends the walk at the last trusted proxy (here the peer itself).
	p.refreshFrom("203.0.113.9, not-an-ip").problem(t, 401, "invalid_refresh_token")
	p.refreshFrom("203.0.113.10, garbage").problem(t, 401, "invalid_refresh_token")
	p.refreshFrom("203.0.113.11, ???").problem(t, 429, "too_many_requests") // all three were 127.0.0.1
}

func TestAuthEndpointsShareAPerIPBudget(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_AUTH_LIMIT_PER_IP": "5"})
	a := n.register("budget@example.com")
	n.do("POST", "/auth/login", map[string]string{"email": a.Email, "password": "Wrong1234"}).problem(t, 401, "invalid_credentials")
	n.do("POST", "/auth/reset-password", map[string]string{"token": "pr_made_up", "new_password": "Brand3New"}).problem(t, 400, "invalid_token")
	n.do("POST", "/auth/forgot-password", map[string]string{"email": a.Email})
	n.do("POST", "/auth/resend-verification", map[string]string{"email": a.Email})
	for _, c := range []struct{ path, body string }{
		{"/auth/register", `{"email":"second@example.com","password":"Secret123","full_name":"J","company_name":"A"}`},
		{"/auth/login", `{"email":"budget@example.com","password":"Secret123"}`},
		{"/auth/refresh", `{"refresh_token":"rt_x"}`},
		{"/auth/resend-verification", `{"email":"budget@example.com"}`},
		{"/auth/forgot-password", `{"email":"budget@example.com"}`},
		{"/auth/reset-password", `{"token":"pr_x","new_password":"Brand3New"}`},
	} {
		r := n.do("POST", c.path, c.body)
		r.problem(t, 429, "too_many_requests")
		if s, _ := strconv.Atoi(r.Header.Get("Retry-After")); s < 1 {
			t.Errorf("%s: Retry-After = %q; want seconds", c.path, r.Header.Get("Retry-After"))
		}
	}
	// Authenticated calls are not counted against the address.
	if r := n.do("GET", "/auth/me", nil, key(a)...); r.Status != 200 {
		t.Errorf("authenticated call = %d; want 200", r.Status)
	}
}

func TestSignupsPerIP(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_SIGNUP_LIMIT_PER_IP": "2"})
	n.register("one@example.com")
	// A rejected registration does not spend the budget.
	n.do("POST", "/auth/register", map[string]string{"email": "bad"}).problem(t, 422, "validation_failed")
	n.register("two@example.com")
	r := n.do("POST", "/auth/register", map[string]string{
		"email": "three@example.com", "password": "Secret123", "full_name": "Jane", "company_name": "Acme",
	})
	r.problem(t, 429, "too_many_signups")
	if s, _ := strconv.Atoi(r.Header.Get("Retry-After")); s < 60 {
		t.Errorf("Retry-After = %q; want the time until the hourly budget allows one more", r.Header.Get("Retry-After"))
	}
	if got := n.sqlInt(`SELECT count(*) FROM accounts`); got != 2 {
		t.Errorf("%d accounts; want 2", got)
	}
}

func TestPendingEmailIsBudgeted(t *testing.T) {
	sink := startSMTP(t, "127.0.0.1:0")
	n := startNode(t, map[string]string{"TUMA_SMTP_URL": "smtp://" + sink.addr(), "TUMA_MAIL_RETRY_MIN": "100ms", "TUMA_EMAILS_PER_HOUR": "2"})
	a := n.register("typo@exmaple.com")
	for i := range 2 {
		addr := fmt.Sprintf("fix%d@example.com", i)
		if r := n.do("PATCH", "/auth/pending-email", map[string]string{"email": addr}, key(a)...); r.Status != 200 {
			t.Fatalf("change %d = %d %s", i, r.Status, r.Body)
		}
		sink.wait(addr, "verification code")
	}
	r := n.do("PATCH", "/auth/pending-email", map[string]string{"email": "fix2@example.com"}, key(a)...)
	r.problem(t, 429, "too_many_requests")
	if r.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	// The account's code budget is the one send-verification-code spends too.
	n.do("POST", "/auth/send-verification-code", nil, key(a)...).problem(t, 429, "too_many_requests")
	if me := n.do("GET", "/auth/me", nil, key(a)...).json(t); me["email"] != "fix1@example.com" {
		t.Errorf("email = %v; want the last allowed change", me["email"])
	}
}

func TestWrongCodesAreCappedPerAccount(t *testing.T) {
	clk := newClock()
	sink := startSMTP(t, "127.0.0.1:0")
	n := startNode(t, map[string]string{"TUMA_SMTP_URL": "smtp://" + sink.addr(), "TUMA_MAIL_RETRY_MIN": "100ms",
		"TUMA_EMAILS_PER_HOUR": "100", "TUMA_CODE_ATTEMPTS_PER_DAY": "7"}, app.WithClock(clk.now))
	a := n.register("guesser@example.com")
	newCode := func() string {
		t.Helper()
		if r := n.do("POST", "/auth/send-verification-code", nil, key(a)...); r.Status != 200 {
			t.Fatalf("send code = %d %s", r.Status, r.Body)
		}
		return codeRE.FindString(sink.wait(a.Email, "verification code").Text)
	}
	guess := func(code, wrongFrom string) string { // a wrong code: any other 6 digits
		if code != wrongFrom {
			return wrongFrom
		}
		return "999999"
	}
	code := newCode()
	for range 5 {
		n.do("POST", "/auth/verify-code", map[string]string{"code": guess(code, "000000")}, key(a)...).problem(t, 400, "invalid_code")
	}
	n.do("POST", "/auth/verify-code", map[string]string{"code": code}, key(a)...).problem(t, 429, "code_locked")
	// A new code unlocks the code's five tries, but not the account's seven a day.
	code = newCode()
	p := n.do("POST", "/auth/verify-code", map[string]string{"code": guess(code, "000001")}, key(a)...).problem(t, 400, "invalid_code")
	if p["attempts_remaining"] != float64(1) {
		t.Errorf("attempts_remaining = %v; want 1 (the day's cap is nearer than the code's)", p["attempts_remaining"])
	}
	n.do("POST", "/auth/verify-code", map[string]string{"code": guess(code, "000002")}, key(a)...).problem(t, 400, "invalid_code")
	r := n.do("POST", "/auth/verify-code", map[string]string{"code": code}, key(a)...)
	r.problem(t, 429, "code_locked")
	if s, _ := strconv.Atoi(r.Header.Get("Retry-After")); s < 23*3600 || s > 24*3600 {
		t.Errorf("Retry-After = %q; want about a day", r.Header.Get("Retry-After"))
	}
	code = newCode()
	n.do("POST", "/auth/verify-code", map[string]string{"code": code}, key(a)...).problem(t, 429, "code_locked")

	// A day later the oldest wrong codes have aged out.
	clk.advance(24*time.Hour + time.Minute)
	code = newCode()
	if r := n.do("POST", "/auth/verify-code", map[string]string{"code": code}, key(a)...); r.Status != 200 {
		t.Fatalf("right code a day later = %d %s", r.Status, r.Body)
	}
}

func TestMetricLabelsAreBounded(t *testing.T) {
	n := startNode(t, nil)
	for i := range 20 {
		req, err := http.NewRequest(fmt.Sprintf("X%dMETHOD", i), n.base+"/no/such/path", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := n.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	n.do("GET", "/nowhere", nil).problem(t, 404, "not_found")
	n.do("PUT", "/auth/me", nil).problem(t, 405, "method_not_allowed")
	metrics := string(n.do("GET", "/metrics", nil).Body)
	allowed := map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "HEAD": true, "OPTIONS": true, "other": true}
	methodRE := regexp.MustCompile(`method="([^"]*)"`)
	bad := map[string]bool{}
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "tuma_http_") {
			continue
		}
		for _, m := range methodRE.FindAllStringSubmatch(line, -1) {
			bad[m[1]] = bad[m[1]] || !allowed[m[1]]
		}
		if strings.Contains(line, "/no/such/path") || strings.Contains(line, "127.0.0.1") {
			t.Errorf("series labelled by a raw path or an address: %s", line)
		}
	}
	for m, isBad := range bad {
		if isBad {
			t.Errorf("series labelled with the client's method %q; want one of a fixed set", m)
		}
	}
	for _, want := range []string{
		`tuma_http_requests_total{code="404",method="other",route="unmatched"} 20`,
		`tuma_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`tuma_http_requests_total{code="405",method="PUT",route="unmatched"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestPasswordChangeEndsAccessTokens(t *testing.T) {
	// Two nodes on one database and one Redis: a change on one is refused at once on the other.
	secret := strings.Repeat("s", 32)
	prefix := redistest.Prefix()
	a1 := startNode(t, map[string]string{"TUMA_JWT_SECRET": secret, "TUMA_REDIS_PREFIX": prefix})
	b1 := startNode(t, map[string]string{"TUMA_JWT_SECRET": secret, "TUMA_REDIS_PREFIX": prefix, "TUMA_DATABASE_URL": a1.dbURL}, app.WithoutNodeLock())
	acct := a1.register("sessions@example.com")
	old, _ := a1.login(acct)
	for _, n := range []*node{a1, b1} {
		if r := n.do("GET", "/auth/me", nil, bearer(old)...); r.Status != 200 {
			t.Fatalf("token before the change = %d", r.Status)
		}
	}
	r := a1.do("PATCH", "/auth/change-password", map[string]string{"current_password": "Secret123", "new_password": "Brand3New"}, bearer(old)...)
	if r.Status != 200 {
		t.Fatalf("change password = %d %s", r.Status, r.Body)
	}
	a1.do("GET", "/auth/me", nil, bearer(old)...).problem(t, 401, "unauthenticated")
	deadline := time.Now().Add(5 * time.Second) // Redis pushes the change to the other node
	for b1.do("GET", "/auth/me", nil, bearer(old)...).Status != 401 {
		if time.Now().After(deadline) {
			t.Fatal("the other node still accepts a token from before the password change")
		}
		time.Sleep(20 * time.Millisecond)
	}
	acct.Password = "Brand3New"
	fresh, _ := a1.login(acct)
	for _, n := range []*node{a1, b1} {
		if r := n.do("GET", "/auth/me", nil, bearer(fresh)...); r.Status != 200 {
			t.Errorf("token after the change = %d %s", r.Status, r.Body)
		}
	}
	if r := a1.do("GET", "/auth/me", nil, key(acct)...); r.Status != 200 {
		t.Errorf("API key after a password change = %d; want it to keep working", r.Status)
	}

	// A password reset does the same, and with Redis down the database decides.
	redisSrv := redistest.StartServer(t)
	sink := startSMTP(t, "127.0.0.1:0")
	n := startNode(t, map[string]string{"TUMA_REDIS_URL": redisSrv.URL, "TUMA_SMTP_URL": "smtp://" + sink.addr(), "TUMA_MAIL_RETRY_MIN": "100ms"})
	c := n.register("reset-sessions@example.com")
	tok, _ := n.login(c)
	n.do("GET", "/auth/me", nil, bearer(tok)...) // cached
	redisSrv.Kill()
	n.do("POST", "/auth/forgot-password", map[string]string{"email": c.Email})
	reset := tokenRE.FindString(sink.wait(c.Email, "Reset your").Text)
	if r := n.do("POST", "/auth/reset-password", map[string]string{"token": reset, "new_password": "Brand3New"}); r.Status != 200 {
		t.Fatalf("reset = %d %s", r.Status, r.Body)
	}
	n.do("GET", "/auth/me", nil, bearer(tok)...).problem(t, 401, "unauthenticated")
}

func TestMetricsOnAnInternalListener(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_METRICS_ADDR": "127.0.0.1:0"})
	if n.internal == "" {
		t.Fatal("no internal listener")
	}
	n.do("GET", "/metrics", nil).problem(t, 404, "not_found")
	n.do("GET", "/debug/pprof/", nil).problem(t, 404, "not_found")
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := n.http.Get(n.internal + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	if st, body := get("/metrics"); st != 200 || !strings.Contains(body, "tuma_http_requests_total") || !strings.Contains(body, "tuma_mail_outbox_pending") {
		t.Errorf("internal /metrics = %d (tuma series present: %v)", st, strings.Contains(body, "tuma_"))
	}
	if st, body := get("/debug/pprof/"); st != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("internal /debug/pprof/ = %d", st)
	}
	if st, _ := get("/debug/pprof/heap?debug=1"); st != 200 {
		t.Errorf("internal heap profile = %d", st)
	}
}

func TestPprofOnTheAPIPortNeedsTheAdminToken(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_PPROF": "true"})
	n.do("GET", "/debug/pprof/", nil).problem(t, 401, "unauthenticated")
	n.do("GET", "/debug/pprof/heap", nil, bearer("wrong-token-0123456789")...).problem(t, 401, "unauthenticated")
	if r := n.do("GET", "/debug/pprof/", nil, adminAuth()...); r.Status != 200 || !strings.Contains(string(r.Body), "goroutine") {
		t.Errorf("pprof index with the admin token = %d", r.Status)
	}
	if r := n.do("GET", "/debug/pprof/goroutine?debug=1", nil, adminAuth()...); r.Status != 200 || !strings.Contains(string(r.Body), "goroutine profile") {
		t.Errorf("goroutine profile = %d", r.Status)
	}
	if r := n.do("GET", "/metrics", nil); r.Status != 200 {
		t.Errorf("/metrics on the API port (no TUMA_METRICS_ADDR) = %d; want 200", r.Status)
	}
}

func TestDeliveryChecksPerAccount(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_DELIVERY_CHECKS_PER_MINUTE": "2"})
	a := n.register("checker@example.com")
	b := n.register("other@example.com")
	for range 2 {
		n.do("GET", "/sms/delivery/SIM-unknown", nil, key(a)...).problem(t, 404, "not_found")
	}
	r := n.do("GET", "/sms/delivery/SIM-unknown", nil, key(a)...)
	r.problem(t, 429, "too_many_status_checks")
	if s, _ := strconv.Atoi(r.Header.Get("Retry-After")); s < 1 {
		t.Errorf("Retry-After = %q", r.Header.Get("Retry-After"))
	}
	n.do("GET", "/sms/delivery/SIM-unknown", nil, key(b)...).problem(t, 404, "not_found") // per account
}

func TestMailOutboxGivesUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there: every attempt fails
	n := startNode(t, map[string]string{"TUMA_SMTP_URL": "smtp://" + dead, "TUMA_MAIL_RETRY_MIN": "100ms",
		"TUMA_MAIL_RETRY_MAX": "200ms", "TUMA_MAIL_GIVE_UP": "1s"})
	n.register("unreachable@example.com")
	deadline := time.Now().Add(15 * time.Second)
	for n.sqlInt(`SELECT count(*) FROM email_outbox WHERE failed_at IS NOT NULL`) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the outbox never gave up on an undeliverable email")
		}
		time.Sleep(50 * time.Millisecond)
	}
	attempts := n.sqlInt(`SELECT attempts FROM email_outbox`)
	time.Sleep(500 * time.Millisecond) // given up: no more attempts
	if got := n.sqlInt(`SELECT attempts FROM email_outbox`); got != attempts {
		t.Errorf("attempts went from %d to %d after giving up", attempts, got)
	}
	metrics := string(n.do("GET", "/metrics", nil).Body)
	for _, want := range []string{"tuma_mail_failed_total 1", "tuma_mail_sent_total 0"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !regexp.MustCompile(`tuma_mail_retries_total [1-9]`).MatchString(metrics) {
		t.Error("/metrics shows no retries")
	}
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(string(n.do("GET", "/metrics", nil).Body), "tuma_mail_outbox_pending 0") {
		if time.Now().After(deadline) {
			t.Fatal("tuma_mail_outbox_pending never dropped to 0 after giving up")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Delivered mail is counted too.
	m, sink := mailNode(t)
	a := m.register("delivered@example.com")
	sink.wait(a.Email, "Confirm your email")
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(string(m.do("GET", "/metrics", nil).Body), "tuma_mail_sent_total 1") {
		if time.Now().After(deadline) {
			t.Fatal("tuma_mail_sent_total never counted the delivered email")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
