package api_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/api"
	"github.com/tuma-sms/tuma/transport/api/accounts"
	"github.com/tuma-sms/tuma/transport/api/admin"
	"github.com/tuma-sms/tuma/transport/api/campaigns"
	"github.com/tuma-sms/tuma/transport/api/contacts"
	"github.com/tuma-sms/tuma/transport/api/inbound"
	"github.com/tuma-sms/tuma/transport/api/notifications"
	"github.com/tuma-sms/tuma/transport/api/ops"
	"github.com/tuma-sms/tuma/transport/api/sandbox"
	"github.com/tuma-sms/tuma/transport/api/senders"
	"github.com/tuma-sms/tuma/transport/api/smpp"
	"github.com/tuma-sms/tuma/transport/api/sms"
	"github.com/tuma-sms/tuma/transport/api/suppressions"
	"github.com/tuma-sms/tuma/transport/api/wallet"
	"github.com/tuma-sms/tuma/transport/api/webhooks"
	"github.com/tuma-sms/tuma/transport/auth"
	"github.com/tuma-sms/tuma/transport/payments"
)

// everyGroup is the front door with every group, none with stores: enough for routing and
// for the answers given before a store is asked. A group given replaces the one of its type.
func everyGroup(t *testing.T, opts api.Options, given ...api.Group) *api.Server {
	t.Helper()
	groups := []api.Group{
		accounts.New(accounts.Options{}, accounts.Deps{}),
		accounts.NewVerification(accounts.Options{}, accounts.VerificationDeps{}),
		sms.New(sms.Options{}, sms.Deps{}),
		senders.New(senders.Options{}, senders.Deps{}),
		contacts.New(contacts.Options{}, contacts.Deps{}),
		campaigns.New(campaigns.Deps{}),
		wallet.New(wallet.Options{}, wallet.Deps{}),
		webhooks.New(webhooks.Deps{}),
		suppressions.New(suppressions.Deps{}),
		inbound.New(inbound.Options{}, inbound.Deps{}),
		smpp.New(smpp.Options{}, smpp.Deps{}),
		notifications.New(nil),
		admin.New(nil),
		sandbox.New(sandbox.Options{}, sandbox.Deps{}),
		opsGroup(t, ops.Options{}),
	}
	for _, g := range given {
		for i := range groups {
			if sameType(groups[i], g) {
				groups[i] = nil
			}
		}
	}
	var all []api.Group
	for _, g := range groups {
		if g != nil {
			all = append(all, g)
		}
	}
	s, err := api.New(opts, api.Deps{Log: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry()}, append(all, given...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sameType(a, b api.Group) bool {
	return strings.TrimPrefix(typeName(a), "*") == strings.TrimPrefix(typeName(b), "*")
}

func typeName(g api.Group) string { return fmt.Sprintf("%T", g) }

func opsGroup(t *testing.T, o ops.Options) *ops.Handler {
	t.Helper()
	reg := prometheus.NewRegistry()
	h, err := ops.New(o, ops.Deps{Log: slog.New(slog.DiscardHandler), Registerer: reg, Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// serveInMemory runs s on an in-memory listener and returns a client for it.
func serveInMemory(t *testing.T, s *api.Server) *fasthttp.Client {
	t.Helper()
	ln := fasthttputil.NewInmemoryListener()
	f := api.NewFront(0, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	f.Attach(s)
	go func() { _ = f.Serve(ln) }()
	t.Cleanup(func() { _ = f.Shutdown(context.Background()) })
	return &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}
}

// TestOpenAPIMatchesRoutes fails when a registered route is missing from the document or the
// document describes a route that does not exist.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q; want 3.1.0", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	// The dashboard's pages are HTML for people, not the API: the document leaves them out.
	s := everyGroup(t, api.Options{}, api.GroupFunc(func(r *api.Router) {
		r.HandlePage("GET", "/app/", api.Page, stubPages{}, func(context.Context, *fasthttp.RequestCtx) error { return nil })
		r.HandlePage("POST", "/app/login", api.PagePublic, stubPages{}, func(context.Context, *fasthttp.RequestCtx) error { return nil })
	}))
	catchAll := regexp.MustCompile(`\{(\w+):\*\}`)
	registered := map[string]bool{}
	pages := 0
	for _, r := range s.Routes() {
		if r.Access.IsPage() {
			pages++
			continue
		}
		registered[r.Method+" "+catchAll.ReplaceAllString(r.Path, "{$1}")] = true
	}
	if pages != 2 {
		t.Errorf("%d page routes registered; want the 2 of the test", pages)
	}
	var missing, extra []string
	for r := range registered {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for r := range documented {
		if !registered[r] {
			extra = append(extra, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes missing from openapi.json: %v", missing)
	}
	if len(extra) > 0 {
		t.Errorf("openapi.json describes routes that do not exist: %v", extra)
	}
}

// stubPages admits no one; the routes test only registers pages.
type stubPages struct{}

func (stubPages) Admit(context.Context, *fasthttp.RequestCtx, api.Access) (auth.Principal, error) {
	return auth.Principal{}, auth.ErrUnauthenticated
}

func (stubPages) RenderProblem(*fasthttp.RequestCtx, *api.Problem) {}

// noSandboxStore fails the test if a sandbox transaction with NUL is written.
type noSandboxStore struct {
	sandbox.Store
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
	opts := api.Options{AdminToken: admin}
	keys := api.NewKeys(nil, opts, slog.New(slog.DiscardHandler))
	s := everyGroup(t, opts,
		wallet.New(wallet.Options{DashboardURL: "http://dash"},
			wallet.Deps{Webhooks: payments.Schemes{payments.PaystackHMAC{Secret: []byte(secret)}}}),
		sandbox.New(sandbox.Options{On: true, Secret: secret}, sandbox.Deps{Store: noSandboxStore{t: t}}),
		opsGroup(t, ops.Options{Pprof: true}),
		api.GroupFunc(func(r *api.Router) {
			r.Handle("POST", "/keyed", api.Public, func(ctx context.Context, rc *fasthttp.RequestCtx) error {
				return keys.Run(ctx, rc, api.Op{}, func(*persistence.IdempotencyKey) error { return api.WriteJSON(rc, 200, nil) })
			})
		}))
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
