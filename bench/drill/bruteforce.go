package drill

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// The budgets of the brute-force node: small, so each is spent in a few requests. The drill
// defaults turn the per-address limits off (load rigs register many accounts from one
// address); here they are on, as in production.
const (
	bfSignups  = 3  // TUMA_SIGNUP_LIMIT_PER_IP (per hour)
	bfLogins   = 3  // TUMA_LOGIN_ATTEMPTS_PER_MINUTE (per email; per address ten times this)
	bfAuth     = 45 // TUMA_AUTH_LIMIT_PER_IP (per minute)
	bfCodesDay = 8  // TUMA_CODE_ATTEMPTS_PER_DAY
	bfMails    = 4  // TUMA_EMAILS_PER_HOUR (codes mailed to one account)
	codeTries  = 5  // wrong tries of one code (the API's)
)

// bruteForce starts a node with the per-address limits on and spends each budget: sign-ups,
// wrong passwords for one account, logins from one address, any auth request from one
// address, wrong verification codes per code and per day, and code emails. Each must end in
// 429 with Retry-After right after its budget (allowing what refills while the drill runs),
// not before, and a locked door stays locked for the right answer too.
func (s *secState) bruteForce(ctx context.Context) error {
	n, err := s.startNode(ctx, "security-limits", map[string]string{
		"TUMA_SIGNUP_LIMIT_PER_IP":       strconv.Itoa(bfSignups),
		"TUMA_LOGIN_ATTEMPTS_PER_MINUTE": strconv.Itoa(bfLogins),
		"TUMA_AUTH_LIMIT_PER_IP":         strconv.Itoa(bfAuth),
		"TUMA_CODE_ATTEMPTS_PER_DAY":     strconv.Itoa(bfCodesDay),
		"TUMA_EMAILS_PER_HOUR":           strconv.Itoa(bfMails),
	})
	if err != nil {
		return err
	}
	p := newProber(n.base, s.audit, s.r.secrets)
	auth := 0 // requests to the endpoints sharing TUMA_AUTH_LIMIT_PER_IP
	authStart := time.Now()
	post := func(path string, body any, label string, headers ...string) reply {
		q := preq{op: s.opAt("POST", path), method: "POST", path: path, body: mustJSON(body), ctype: "application/json",
			headers: headers, label: label}
		if path != "/auth/send-verification-code" && path != "/auth/verify-code" {
			auth++
		}
		return p.do(ctx, q)
	}

	// Sign-ups from one address.
	var accounts []*tenant
	signupAt, last := 0, reply{}
	for i := 1; i <= bfSignups+2 && signupAt == 0; i++ {
		t := &tenant{email: fmt.Sprintf("drill-%s-bf-%d@example.com", s.r.id, i), password: "Dr1ll" + randomHex(8)}
		s.r.secrets.add("password", t.password)
		last = post("/auth/register", map[string]string{"email": t.email, "password": t.password, "full_name": "Drill", "company_name": "Drill"}, "sign-up")
		var u struct {
			ID     string `json:"id"`
			APIKey string `json:"api_key"`
		}
		switch {
		case last.status == 429:
			signupAt = i
		case last.status == 201 && json.Unmarshal(last.body, &u) == nil:
			t.id, t.key = u.ID, u.APIKey
			accounts = append(accounts, t)
		default:
			return fmt.Errorf("sign-up %d: %s", i, describe(preq{label: "sign-up"}, last, "201 or 429"))
		}
	}
	s.limitRow("sign-ups per address", "too_many_signups", signupAt, bfSignups, 0, last, time.Hour, "sign-up")
	if len(accounts) < 2 {
		return fmt.Errorf("only %d accounts signed up before the limit", len(accounts))
	}

	// Wrong passwords for one account: throttled, and then the right one is refused as well
	// (the throttle answers before the password is looked at, so it tells nothing).
	victim := accounts[0]
	logins, loginStart := 0, time.Now()
	wrongAt := 0
	for i := 1; i <= bfLogins+3 && wrongAt == 0; i++ {
		logins++
		last = post("/auth/login", map[string]string{"email": victim.email, "password": "Wr0ng" + randomHex(4)}, "wrong password")
		if last.status == 429 {
			wrongAt = i
		}
	}
	s.limitRow("wrong passwords per email", "too_many_login_attempts", wrongAt, bfLogins, float64(bfLogins)/60*time.Since(loginStart).Seconds(),
		last, time.Minute, "wrong login")
	logins++
	right := post("/auth/login", map[string]string{"email": victim.email, "password": victim.password}, "right password while throttled")
	s.rec.check("throttle hides the password", right.status == 429, fmt.Sprintf("the right password while throttled: %d", right.status),
		"429", "a throttled login still checked the password")

	// Logins from one address, each to another email.
	ipAt := 0
	for i := 0; i < 10*bfLogins+10 && ipAt == 0; i++ {
		logins++
		last = post("/auth/login", map[string]string{"email": fmt.Sprintf("nobody-%d-%s@example.com", i, s.r.id), "password": "Wr0ngPass1"}, "login from one address")
		if last.status == 429 {
			ipAt = logins
		}
	}
	s.limitRow("logins per address", "too_many_login_attempts", ipAt, 10*bfLogins, float64(10*bfLogins)/60*time.Since(loginStart).Seconds(),
		last, time.Minute, "login")

	// Any unauthenticated auth request from one address.
	authAt := 0
	for i := 0; i < bfAuth+20 && authAt == 0; i++ {
		last = post("/auth/refresh", map[string]string{"refresh_token": "rt_" + randomHex(16)}, "refresh from one address")
		if last.status == 429 && problemCode(last.body) == "too_many_requests" {
			authAt = auth
		}
	}
	s.limitRow("auth requests per address", "too_many_requests", authAt, bfAuth, float64(bfAuth)/60*time.Since(authStart).Seconds(),
		last, time.Minute, "auth request")

	return s.codeBrute(ctx, p, accounts[1])
}

// codeBrute spends a code's five tries, then the account's daily tries across codes, then
// its code emails.
func (s *secState) codeBrute(ctx context.Context, p *prober, t *tenant) error {
	var mails int
	newCode := func() (string, reply) {
		mails++
		q := preq{op: s.opAt("POST", "/auth/send-verification-code"), method: "POST", path: "/auth/send-verification-code",
			headers: t.apiKey(), label: "send a code"}
		r := p.do(ctx, q)
		if r.status != 200 {
			return "", r
		}
		m, err := s.sink.Wait(ctx, t.email, "verification code", 30*time.Second)
		if err != nil {
			return "", reply{err: err}
		}
		code := mailCodeRE.FindString(m.Subject)
		s.r.secrets.add("verification code", code)
		return code, r
	}
	try := func(code, label string) reply {
		q := preq{op: s.opAt("POST", "/auth/verify-code"), method: "POST", path: "/auth/verify-code", ctype: "application/json",
			body: mustJSON(map[string]string{"code": code}), headers: t.apiKey(), label: label}
		return p.do(ctx, q)
	}
	wrong := func(code string) string { // a code that is not this one
		n, _ := strconv.Atoi(code)
		return fmt.Sprintf("%06d", (n+1)%1_000_000)
	}

	code, r := newCode()
	if code == "" {
		return fmt.Errorf("first code: %s", describe(preq{label: "send a code"}, r, "200 and a mail"))
	}
	remaining, wrongs := "", 0
	var last reply
	lockedAt := 0
	for i := 1; i <= codeTries+2 && lockedAt == 0; i++ {
		last = try(wrong(code), "wrong code")
		var body struct {
			Remaining *int `json:"attempts_remaining"`
		}
		_ = json.Unmarshal(last.body, &body)
		switch {
		case last.status == 429:
			lockedAt = i
		case last.status == 400 && body.Remaining != nil:
			wrongs++
			remaining += strconv.Itoa(*body.Remaining)
		}
	}
	rightWhileLocked := try(code, "right code after five wrong")
	ok := lockedAt == codeTries+1 && problemCode(last.body) == "code_locked" && remaining == "43210" && rightWhileLocked.status == 429
	s.rec.check("wrong codes per code", ok,
		fmt.Sprintf("attempts_remaining %s, then 429 %s at try %d; the right code then %d", remaining, problemCode(last.body), lockedAt, rightWhileLocked.status),
		fmt.Sprintf("400 ×%d counting down, 429 code_locked at try %d, right code refused", codeTries, codeTries+1), "")

	// A new code gives new tries, but only up to the account's daily cap across codes.
	code2, r := newCode()
	if code2 == "" {
		return fmt.Errorf("second code: %s", describe(preq{label: "send a code"}, r, "200 and a mail"))
	}
	dayAt := 0
	for i := 1; i <= bfCodesDay && dayAt == 0; i++ {
		last = try(wrong(code2), "wrong code, second code")
		switch last.status {
		case 429:
			dayAt = wrongs + 1
		case 400:
			wrongs++
		}
	}
	right := try(code2, "right code after the daily cap")
	ra, _ := strconv.Atoi(last.header.Get("Retry-After"))
	ok = dayAt == bfCodesDay+1 && problemCode(last.body) == "code_locked" && ra >= 1 && ra <= 86400 && right.status == 429
	s.rec.check("wrong codes per day", ok,
		fmt.Sprintf("429 %s after %d wrong codes across 2 codes, Retry-After %d s; the right code then %d", problemCode(last.body), dayAt-1, ra, right.status),
		fmt.Sprintf("429 after %d, Retry-After ≤ 24 h, right code refused", bfCodesDay), "")

	// Code emails: the budget of the hour, then 429.
	mailAt := 0
	for mails < bfMails+2 && mailAt == 0 {
		if c, r := newCode(); c == "" {
			last = r
			if r.status == 429 {
				mailAt = mails
			} else {
				return fmt.Errorf("code mail %d: %s", mails, describe(preq{label: "send a code"}, r, "200 or 429"))
			}
		}
	}
	s.limitRow("code emails per account", "too_many_requests", mailAt, bfMails, 0, last, time.Hour, "code request")
	return nil
}

// limitRow records whether a budget held: the first 429 came at request budget+1 (or up to
// what refilled meanwhile, plus one), with the expected code and a Retry-After within the
// budget's period.
func (s *secState) limitRow(check, code string, at, budget int, refilled float64, last reply, period time.Duration, what string) {
	ra, err := strconv.Atoi(last.header.Get("Retry-After"))
	hi := budget + 1 + int(math.Ceil(refilled)) + 1
	ok := at >= budget+1 && at <= hi && problemCode(last.body) == code && err == nil && ra >= 1 && time.Duration(ra)*time.Second <= period
	figure := fmt.Sprintf("no 429 within %d %ss", hi, what)
	if at > 0 {
		figure = fmt.Sprintf("429 %s at %s %d (budget %d), Retry-After %s s", problemCode(last.body), what, at, budget, last.header.Get("Retry-After"))
	}
	s.rec.check(check, ok, figure, fmt.Sprintf("429 %s at %d–%d, Retry-After ≤ %s", code, budget+1, hi, periodText(period)), "")
}

// periodText renders a budget's period: "60 s", "1 h".
func periodText(d time.Duration) string {
	if d >= time.Hour {
		return fmt.Sprintf("%.0f h", d.Hours())
	}
	return fmt.Sprintf("%.0f s", d.Seconds())
}
