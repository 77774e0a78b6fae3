package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/carriers"
	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/payments"
)

// PostgreSQL cannot store U+0000: every body that carries one is a 422 naming the field,
// before anything reaches the store (it was a 500, and a send with it failed its whole group
// commit, other tenants' sends included).
func TestNulInABodyIsRefused(t *testing.T) {
	plan := carriers.DefaultPlan()
	for name, parse := range map[string]func() error{
		"register": func() error {
			_, err := parseRegistration([]byte(`{"email":"a@b.co","password":"Secret123","full_name":"J\u0000","company_name":"A"}`), plan)
			return err
		},
		"login": func() error {
			_, err := parseLogin([]byte(`{"email":"a\u0000@b.co","password":"x"}`))
			return err
		},
		"profile": func() error {
			_, err := parseProfile([]byte(`{"country":"K\u0000E"}`), plan)
			return err
		},
		"send": func() error {
			_, err := parseSend([]byte(`{"recipients":["0712345678"],"message":"hi\u0000"}`), plan)
			return err
		},
		"credit": func() error {
			_, _, err := parseCredit([]byte(`{"amount_kes":1,"description":"\u0000"}`))
			return err
		},
	} {
		var p *Problem
		if err := parse(); !errors.As(err, &p) || p.Status != 422 || len(p.Errors) == 0 {
			t.Errorf("%s with NUL = %v; want a 422 naming the field", name, err)
		}
	}
}

// noSandboxStore fails the test if a sandbox transaction with NUL is written.
type noSandboxStore struct {
	SandboxStore
	t *testing.T
}

func (s noSandboxStore) SandboxCreate(_ context.Context, tx persistence.SandboxTx) (persistence.SandboxTx, error) {
	if strings.ContainsRune(tx.Email+tx.CallbackURL+string(tx.Metadata), 0) || strings.Contains(string(tx.Metadata), `\u0000`) {
		s.t.Errorf("a sandbox transaction with NUL reached the store: %+v", tx)
	}
	return tx, nil
}

// The answers that took text the store cannot hold without a JSON body's decoder: a payer's
// return, a signed webhook, the sandbox's API, an Idempotency-Key; and pprof's pages, whose
// 404 is a problem.
func TestUnstorableTextOutsideBodies(t *testing.T) {
	const secret, admin = "sk_test_secret", "admin-token"
	reg := prometheus.NewRegistry()
	s, err := New(Options{Pprof: true, AdminToken: admin, DashboardURL: "http://dash"}, Deps{
		Log: slog.New(slog.DiscardHandler), Registerer: reg, Gatherer: reg,
		WebhookSchemes: payments.Schemes{payments.PaystackHMAC{Secret: []byte(secret)}},
		Sandbox:        &Sandbox{Store: noSandboxStore{t: t}, Secret: secret},
		Now:            time.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.handle("POST", "/keyed", public, func(ctx context.Context, rc *fasthttp.RequestCtx) error {
		return s.idempotent(ctx, rc, idempotentOp{}, func(*persistence.IdempotencyKey) error { return writeJSON(rc, 200, nil) })
	})
	c := serveInMemory(t, s)
	do := func(method, path string, body []byte, headers ...string) *fasthttp.Response {
		req, resp := fasthttp.AcquireRequest(), &fasthttp.Response{}
		defer fasthttp.ReleaseRequest(req)
		req.SetRequestURI("http://tuma" + path)
		req.Header.SetMethod(method)
		req.Header.SetContentType("application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		req.SetBody(body)
		if err := c.Do(req, resp); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return resp
	}

	for _, ref := range []string{"a%00b", "%ED%A0%80", "TUMA%20X"} {
		r := do("GET", "/wallet/callback?reference="+ref, nil)
		if r.StatusCode() != 303 || !strings.Contains(string(r.Header.Peek("Location")), "reason=unknown_reference") {
			t.Errorf("callback with reference %s = %d %s; want 303 to unknown_reference", ref, r.StatusCode(), r.Header.Peek("Location"))
		}
	}

	body := []byte(`{"event":"charge.success","data":{"status":"success","reference":"R\u0000","amount":1,"currency":"KES"}}`)
	m := hmac.New(sha512.New, []byte(secret))
	m.Write(body)
	r := do("POST", "/payments/webhook", body, "X-Paystack-Signature", hex.EncodeToString(m.Sum(nil)))
	if r.StatusCode() != 400 || !strings.Contains(string(r.Body()), "malformed_webhook") {
		t.Errorf("signed webhook with NUL = %d %s; want 400 malformed_webhook", r.StatusCode(), r.Body())
	}

	for _, b := range []string{`{"email":"a\u0000@b.c","amount":100}`, `{"email":"a@b.c","amount":100,"metadata":{"k":"\u0000"}}`} {
		r := do("POST", "/sandbox/paystack/transaction/initialize", []byte(b), "Authorization", "Bearer "+secret)
		if r.StatusCode() != 400 {
			t.Errorf("sandbox initialize %s = %d %s; want 400", b, r.StatusCode(), r.Body())
		}
	}

	r = do("POST", "/keyed", []byte(`{}`), "Idempotency-Key", "key-\xed\xa0\x80")
	if r.StatusCode() != 400 || !strings.Contains(string(r.Body()), "invalid_idempotency_key") {
		t.Errorf("Idempotency-Key not UTF-8 = %d %s; want 400 invalid_idempotency_key", r.StatusCode(), r.Body())
	}

	r = do("GET", "/debug/pprof/no-such-profile", nil, "Authorization", "Bearer "+admin)
	if r.StatusCode() != 404 || string(r.Header.ContentType()) != "application/problem+json" {
		t.Errorf("unknown profile = %d %s; want a 404 problem", r.StatusCode(), r.Header.ContentType())
	}
	if r := do("GET", "/debug/pprof/cmdline", nil, "Authorization", "Bearer "+admin); r.StatusCode() != 200 {
		t.Errorf("cmdline = %d; want 200", r.StatusCode())
	}
}
