package drill

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Who may call what: every operation of the document without credentials, with bad ones,
// with another tenant's, and as a suspended account.

// jwtToken signs claims with HS256 under secret ("" signs nothing: alg none).
func jwtToken(secret string, claims map[string]any) string {
	enc := base64.RawURLEncoding
	alg := "HS256"
	if secret == "" {
		alg = "none"
	}
	h, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	unsigned := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	if secret == "" {
		return unsigned + "."
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(unsigned))
	return unsigned + "." + enc.EncodeToString(m.Sum(nil))
}

// accessClaims are an access token's claims for an account, expiring at exp.
func accessClaims(accountID string, exp time.Time) map[string]any {
	return map[string]any{"iss": "tuma", "sub": accountID, "iat": time.Now().Add(-time.Minute).Unix(), "exp": exp.Unix()}
}

// badCredentials are credentials no endpoint may accept, by what they try.
func (s *secState) badCredentials() [][2]string {
	later := time.Now().Add(20 * time.Minute)
	return [][2]string{
		{"X-API-Key", "sk_live_" + strings.Repeat("0", 43)},
		{"X-API-Key", `' OR '1'='1`},
		{"X-API-Key", s.a.key + "x"},
		{"Authorization", "Bearer not-a-token"},
		{"Authorization", "Basic ZHJpbGw6ZHJpbGw="},
		{"Authorization", "Bearer " + jwtToken("", accessClaims(s.a.id, later))},
		{"Authorization", "Bearer " + jwtToken("wrong-secret-"+randomHex(8), accessClaims(s.a.id, later))},
		{"Authorization", "Bearer " + jwtToken(s.r.jwtSecret, accessClaims(s.a.id, time.Now().Add(-time.Minute)))},
		{"Authorization", "Bearer " + jwtToken(s.r.jwtSecret, accessClaims(uuid.NewString(), later))},
		{"Authorization", "Bearer " + adminToken},
	}
}

// unauthenticated: every operation that needs credentials answers 401 without them and with
// bad ones; the public ones never ask for them.
func (s *secState) unauthenticated(ctx context.Context) {
	var none, bad, public verdict
	// Control: a token forged with the node's own secret works, so the forged tokens that
	// must fail are well formed and fail for their flaw alone.
	good := jwtToken(s.r.jwtSecret, accessClaims(s.a.id, time.Now().Add(20*time.Minute)))
	s.r.secrets.add("bearer token", good)
	q := preq{method: "GET", path: "/auth/me", headers: []string{"Authorization", "Bearer " + good}, label: "control: token signed with the node's secret"}
	if r := s.p.do(ctx, q); r.status != 200 {
		bad.fail(describe(q, r, "200 (the forged tokens below would prove nothing)"))
	}
	for _, op := range s.doc.ops {
		path, _ := s.pathFor(op, s.a)
		body, ctype, extra := s.sampleBody(op, s.a)
		base := preq{op: op, method: op.method, path: path, body: body, ctype: ctype, headers: extra}
		if op.access == "public" {
			q := base
			q.label = "public, no credentials"
			r := s.p.do(ctx, q)
			public.note(r.status != 0 && problemCode(r.body) != "unauthenticated",
				func() string { return describe(q, r, "an answer that does not ask for credentials") })
			continue
		}
		q := base
		q.label = "no credentials"
		r, ok := s.p.expect(ctx, q, 401)
		none.note(ok, func() string { return describe(q, r, "401") })
		creds := s.badCredentials()
		if op.access != "tenant" { // the operator's and the sandbox's secrets
			creds = [][2]string{{"Authorization", "Bearer wrong-" + randomHex(8)},
				{"Authorization", "Bearer " + s.a.key}, {"Authorization", "Bearer " + s.a.access}}
		}
		for _, c := range creds {
			q := base
			q.headers = append([]string{c[0], c[1]}, extra...)
			q.label = "bad " + c[0]
			r, ok := s.p.expect(ctx, q, 401)
			bad.note(ok, func() string { return describe(q, r, "401") + " with " + c[0] + ": " + clip([]byte(c[1]), 40) })
		}
	}
	none.row(s.rec, "no credentials → 401", "operations needing credentials answered 401 without them", "all")
	bad.row(s.rec, "bad credentials → 401", "probes with bad keys, tokens (alg none, wrong secret, expired, unknown account) or secrets answered 401", "all")
	public.row(s.rec, "public without credentials", "public operations answered without asking for credentials", "all")
}

// crossTenant: tenant B asks for tenant A's resources by id with both kinds of credentials:
// 404, never 403 (which would confirm they exist) nor 200; B's reads show nothing of A's;
// and an Idempotency-Key is B's own even when A used the same one.
func (s *secState) crossTenant(ctx context.Context) {
	var byID, lists, keys verdict
	var uncovered []string
	var controls []preq
	for _, op := range s.doc.ops {
		if op.access != "tenant" {
			continue
		}
		body, ctype, _ := s.sampleBody(op, s.a)
		if len(op.pathParams) == 0 {
			continue
		}
		path, missing := s.pathFor(op, s.a)
		if len(missing) > 0 {
			uncovered = append(uncovered, op.String()+" {"+strings.Join(missing, ", ")+"}")
			continue
		}
		for _, creds := range [][]string{s.b.apiKey(), {"Authorization", "Bearer " + s.b.access}} {
			q := preq{op: op, method: op.method, path: path, body: body, ctype: ctype, headers: creds, label: "another tenant's id"}
			r, ok := s.p.expect(ctx, q, 404)
			byID.note(ok, func() string { return describe(q, r, "404") })
		}
		controls = append(controls, preq{op: op, method: op.method, path: path, body: body, ctype: ctype, headers: s.a.apiKey(),
			label: "control: the owner asks"})
	}
	// B's attempt to mark A's notification read must not have marked it.
	if r := s.n.c.do(ctx, "GET", "/notifications", nil, s.a.apiKey()...); r.status == 200 {
		var ns []struct {
			ID     string `json:"id"`
			IsRead bool   `json:"is_read"`
		}
		_ = r.decode(&ns)
		for _, n := range ns {
			if n.ID == s.a.res["notification"] && n.IsRead {
				byID.fail("another tenant's PATCH /notifications/{id}/read marked the owner's notification read")
			}
		}
	}
	// The owner's own asks come last, deletes after the rest (they end the resource). What
	// they answer depends on its state (a 409 for a sender not yet approved, say), but never
	// 404: the id is real, so the 404s above mean something.
	slices.SortStableFunc(controls, func(a, b preq) int {
		return boolInt(a.method == "DELETE") - boolInt(b.method == "DELETE")
	})
	for _, q := range controls {
		if r := s.p.do(ctx, q); r.status == 404 || r.status >= 500 || r.status == 0 {
			byID.fail(describe(q, r, "not 404: the id is the owner's, so the 404s above mean something"))
		}
	}
	if len(uncovered) > 0 {
		byID.fail("no resource of a tenant to probe for " + strings.Join(uncovered, "; "))
	}

	// Every read B may make, filters set to A's ids where it takes them, shows none of A's.
	secretsOfA := []string{s.a.id, s.a.email, s.a.res["message"], s.a.res["job"], s.a.res["notification"], s.a.res["provider"]}
	for _, op := range s.doc.ops {
		if op.access != "tenant" || op.method != "GET" || len(op.pathParams) > 0 {
			continue
		}
		paths := []string{op.path}
		for _, qp := range op.queryParams {
			if id := s.a.res[strings.TrimSuffix(qp, "_id")]; strings.HasSuffix(qp, "_id") && id != "" {
				paths = append(paths, op.path+"?"+qp+"="+id)
			}
		}
		for _, path := range paths {
			q := preq{op: op, method: "GET", path: path, headers: s.b.apiKey(), label: "another tenant's reads"}
			r := s.p.do(ctx, q)
			leaked := ""
			for _, v := range secretsOfA {
				if v != "" && strings.Contains(string(r.body), v) {
					leaked = v
				}
			}
			// 200 with none of A's, or 404 for a filter naming A's resource (another tenant's
			// id is never found).
			lists.note((r.status == 200 || r.status == 404 && strings.Contains(path, "?")) && leaked == "", func() string {
				if leaked != "" {
					return fmt.Sprintf("%s shows the other tenant's %q", q, leaked)
				}
				return describe(q, r, "200 (or 404 for a filter naming the other's resource)")
			})
		}
	}

	// B reuses A's Idempotency-Key with A's very body: a send of its own, not A's replayed.
	q := preq{method: "POST", path: "/sms/send", body: s.a.sendBody, ctype: "application/json",
		headers: append(s.b.apiKey(), "Idempotency-Key", s.a.sendKey), label: "another tenant's Idempotency-Key"}
	q.op = s.opAt("POST", "/sms/send")
	r := s.p.do(ctx, q)
	var sent struct {
		JobID string `json:"job_id"`
	}
	_ = r.decode(&sent)
	keys.note(r.status == 202 && sent.JobID != "" && sent.JobID != s.a.res["job"] && r.header.Get("Idempotent-Replayed") != "true",
		func() string { return describe(q, r, "202 with a job of its own, not the other tenant's replayed") })

	byID.row(s.rec, "cross-tenant ids → 404", "probes of another tenant's resources answered 404 (owners 2xx)", "all")
	lists.row(s.rec, "cross-tenant reads", "reads (lists, filters set to another tenant's ids) showed nothing of another tenant", "all")
	keys.row(s.rec, "idempotency keys per tenant", "reuses of another tenant's Idempotency-Key ran as the caller's own", "all")
}

// suspended: an account the operator suspends gets 403 on every operation that takes its
// credentials, logs in to 403, and comes back as it was when reactivated.
func (s *secState) suspended(ctx context.Context) {
	var v verdict
	t := s.s
	s.operator(ctx, &v, "suspend", t)
	for _, op := range s.doc.ops {
		if op.access != "tenant" {
			continue
		}
		path, _ := s.pathFor(op, t)
		body, ctype, _ := s.sampleBody(op, t)
		for _, creds := range [][]string{t.apiKey(), {"Authorization", "Bearer " + t.access}} {
			q := preq{op: op, method: op.method, path: path, body: body, ctype: ctype, headers: creds, label: "suspended account"}
			r, ok := s.p.expect(ctx, q, 403)
			v.note(ok && problemCode(r.body) == "account_suspended", func() string { return describe(q, r, "403 account_suspended") })
		}
	}
	for _, q := range []preq{
		{method: "POST", path: "/auth/login", body: mustJSON(map[string]string{"email": t.email, "password": t.password}), label: "suspended login"},
		{method: "POST", path: "/auth/refresh", body: mustJSON(map[string]string{"refresh_token": t.refresh}), label: "suspended refresh"},
	} {
		q.op, q.ctype = s.opAt(q.method, q.path), "application/json"
		// Suspension also revokes the refresh tokens, so a refresh may be 401 as well.
		r := s.p.do(ctx, q)
		v.note(r.status == 403 || q.label == "suspended refresh" && r.status == 401, func() string { return describe(q, r, "403 (401 for a revoked refresh token)") })
	}
	s.operator(ctx, &v, "reactivate", t)
	// Back as it was: the same key works (rotate-api-key did nothing), and no send ran.
	q := preq{op: s.opAt("GET", "/auth/me"), method: "GET", path: "/auth/me", headers: t.apiKey(), label: "reactivated, same key"}
	r, ok := s.p.expect(ctx, q, 200)
	v.note(ok, func() string { return describe(q, r, "200") })
	if jobs, err := s.count(ctx, `SELECT count(*) FROM jobs WHERE account_id = $1`, t.id); err != nil || jobs != 0 {
		v.fail(fmt.Sprintf("the suspended account has %d jobs (%v): a send went through", jobs, err))
	}
	v.row(s.rec, "suspended → 403", "probes as a suspended account answered 403 (then reactivated as before)", "all")
}

// operator suspends or reactivates t through the admin API.
func (s *secState) operator(ctx context.Context, v *verdict, action string, t *secTenant) {
	q := preq{op: s.opAt("POST", "/admin/accounts/{id}/"+action), method: "POST", path: "/admin/accounts/" + t.id + "/" + action,
		headers: adminAuth(), label: "operator: " + action}
	if r, ok := s.p.expect(ctx, q, 200); !ok {
		v.fail(describe(q, r, "200"))
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
