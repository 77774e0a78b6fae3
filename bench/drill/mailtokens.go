package drill

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// What the drill reads out of mails.
var (
	mailCodeRE  = regexp.MustCompile(`\b\d{6}\b`)
	mailLinkRE  = regexp.MustCompile(`[?&]token=(ev_[A-Za-z0-9_%-]+)`)
	mailResetRE = regexp.MustCompile(`pr_[A-Za-z0-9_-]{20,}`)
)

// mailFlows follows the emailed secrets through: a verification link, a verification code and
// a password-reset token each work once and never again, and a reset ends the sessions
// started before it. Each secret read from a mail joins the run's secrets for the log scan.
func (s *secState) mailFlows(ctx context.Context) {
	var v verdict
	check := func(q preq, want int, also func(reply) bool, what string) {
		q.op = s.opAt(q.method, strings.SplitN(q.path, "?", 2)[0])
		r := s.p.do(ctx, q)
		v.note(r.status == want && (also == nil || also(r)), func() string { return describe(q, r, what) })
	}
	located := func(frag string) func(reply) bool {
		return func(r reply) bool { return strings.Contains(r.header.Get("Location"), frag) }
	}

	// The link of a's registration mail verifies once.
	if m, err := s.sink.Wait(ctx, s.a.email, "Confirm your email", 30*time.Second); err != nil {
		v.fail(err.Error())
	} else if tok := mailLinkRE.FindStringSubmatch(m.Text); tok == nil {
		v.fail("no verification link in the registration mail")
	} else {
		s.r.secrets.add("verification link token", tok[1])
		link := "/auth/verify-email?token=" + tok[1]
		check(preq{method: "GET", path: link, label: "verification link"}, 303, located("verified=1"), "303 to …verified=1")
		check(preq{method: "GET", path: link, label: "verification link again"}, 303, located("verified=0"), "303 to …verified=0")
	}

	// A code sent to b verifies once.
	check(preq{method: "POST", path: "/auth/send-verification-code", headers: s.b.apiKey(), label: "send a code"}, 200, nil, "200")
	if m, err := s.sink.Wait(ctx, s.b.email, "verification code", 30*time.Second); err != nil {
		v.fail(err.Error())
	} else if code := mailCodeRE.FindString(m.Subject); code == "" {
		v.fail("no code in the subject " + m.Subject)
	} else {
		s.r.secrets.add("verification code", code)
		body := mustJSON(map[string]string{"code": code})
		check(preq{method: "POST", path: "/auth/verify-code", body: body, ctype: "application/json", headers: s.b.apiKey(),
			label: "verification code"}, 200, nil, "200")
		check(preq{method: "POST", path: "/auth/verify-code", body: body, ctype: "application/json", headers: s.b.apiKey(),
			label: "verification code again"}, 409, nil, "409 already verified")
	}

	// A reset token changes a's password once and ends a's sessions.
	check(preq{method: "POST", path: "/auth/forgot-password", body: mustJSON(map[string]string{"email": s.a.email}),
		ctype: "application/json", label: "forgot password"}, 200, nil, "200")
	if m, err := s.sink.Wait(ctx, s.a.email, "Reset your", 30*time.Second); err != nil {
		v.fail(err.Error())
	} else if tok := mailResetRE.FindString(m.Text); tok == "" {
		v.fail("no reset token in the reset mail")
	} else {
		s.r.secrets.add("reset token", tok)
		pw := "Dr1llReset" + randomHex(6)
		s.r.secrets.add("password", pw)
		body := mustJSON(map[string]string{"token": tok, "new_password": pw})
		check(preq{method: "POST", path: "/auth/reset-password", body: body, ctype: "application/json", label: "reset token"}, 200, nil, "200")
		check(preq{method: "POST", path: "/auth/reset-password", body: body, ctype: "application/json", label: "reset token again"},
			400, nil, "400 invalid_token")
		check(preq{method: "GET", path: "/auth/me", headers: []string{"Authorization", "Bearer " + s.a.access},
			label: "a session from before the reset"}, 401, nil, "401")
		s.a.password = pw
		if err := s.login(ctx, s.a); err != nil {
			v.fail(fmt.Sprintf("login with the new password: %v", err))
		}
	}
	v.row(s.rec, "emailed secrets single use", "uses of mailed links, codes and reset tokens answered as they should (second use refused)", "all")
}
