package app_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tuma-sms/tuma/persistence/redis/redistest"
)

func TestRegisterAndAuthenticate(t *testing.T) {
	n := startNode(t, nil)
	r := n.do("POST", "/auth/register", map[string]string{
		"email": "Jane@Example.COM", "password": "Secret123", "full_name": "Jane", "company_name": "Acme",
		"phone": "+254 712 345 678",
	})
	if r.Status != 201 {
		t.Fatalf("register = %d %s", r.Status, r.Body)
	}
	u := r.json(t)
	apiKey, _ := u["api_key"].(string)
	if !strings.HasPrefix(apiKey, "sk_live_") || u["api_key_prefix"] != apiKey[:12] {
		t.Fatalf("api_key %q, prefix %v; want sk_live_… and its first 12 characters", apiKey, u["api_key_prefix"])
	}
	if u["email"] != "jane@example.com" || u["phone"] != "+254712345678" || u["is_verified"] != false || u["is_active"] != true {
		t.Errorf("user = %v; want lower-cased email, E.164 phone, unverified, active", u)
	}
	if w, _ := u["wallet"].(map[string]any); w["balance_kes"] != 0.0 {
		t.Errorf("wallet = %v; want balance 0", u["wallet"])
	}

	// Only a hash of the key is stored.
	conn, err := pgx.Connect(context.Background(), n.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var stored []byte
	if err := conn.QueryRow(context.Background(), "SELECT key_hash FROM api_keys WHERE account_id = $1", u["id"]).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256([]byte(apiKey)); string(stored) != string(sum[:]) {
		t.Error("stored key is not the SHA-256 of the key")
	}
	var leaks int
	if err := conn.QueryRow(context.Background(),
		"SELECT count(*) FROM api_keys WHERE position($1 in key_hash::text || prefix) > 0", apiKey).Scan(&leaks); err != nil || leaks != 0 {
		t.Errorf("the clear key appears in storage (%d rows, %v)", leaks, err)
	}

	// /auth/me with the key (source api) and with a bearer token (source browser).
	me := n.do("GET", "/auth/me", nil, "X-API-Key", apiKey)
	if me.Status != 200 || me.json(t)["id"] != u["id"] || me.json(t)["api_key"] != nil {
		t.Fatalf("me with key = %d %s; want the user without api_key", me.Status, me.Body)
	}
	login := n.do("POST", "/auth/login", map[string]string{"email": "JANE@example.com", "password": "Secret123"})
	if login.Status != 200 {
		t.Fatalf("login = %d %s", login.Status, login.Body)
	}
	tok := login.json(t)
	if tok["token_type"] != "bearer" || tok["expires_in"] != 1800.0 || tok["refresh_token"] == "" {
		t.Fatalf("login = %v; want bearer tokens expiring in 1800", tok)
	}
	me = n.do("GET", "/auth/me", nil, bearer(tok["access_token"].(string))...)
	if me.Status != 200 || me.json(t)["email"] != "jane@example.com" {
		t.Fatalf("me with token = %d %s", me.Status, me.Body)
	}

	// Unauthenticated calls.
	n.do("GET", "/auth/me", nil).problem(t, 401, "unauthenticated")
	n.do("GET", "/auth/me", nil, "X-API-Key", "sk_live_nope").problem(t, 401, "unauthenticated")
	n.do("GET", "/auth/me", nil, bearer("not.a.jwt")...).problem(t, 401, "unauthenticated")
	if got := n.do("GET", "/auth/me", nil).Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
		t.Errorf("WWW-Authenticate = %q; want Bearer", got)
	}
}

func TestRegistrationRules(t *testing.T) {
	n := startNode(t, nil)
	n.register("taken@example.com")
	n.do("POST", "/auth/register", map[string]string{
		"email": "TAKEN@Example.com", "password": "Secret123", "full_name": "X", "company_name": "Y",
	}).problem(t, 409, "email_taken")

	for _, tt := range []struct{ password, message string }{
		{"Sh0rtPw", "must be at least 8 characters long"},
		{"nouppercase1", "must contain at least one uppercase letter"},
		{"NoDigitsHere", "must contain at least one digit"},
	} {
		p := n.do("POST", "/auth/register", map[string]string{
			"email": "p@example.com", "password": tt.password, "full_name": "X", "company_name": "Y",
		}).problem(t, 422, "validation_failed")
		errs := p["errors"].([]any)
		if len(errs) != 1 || errs[0].(map[string]any)["field"] != "password" || errs[0].(map[string]any)["message"] != tt.message {
			t.Errorf("password %q errors = %v; want one naming password: %s", tt.password, errs, tt.message)
		}
	}
	p := n.do("POST", "/auth/register", map[string]string{"email": "nope", "password": "Secret123", "company_name": strings.Repeat("x", 61), "phone": "0800123456"}).
		problem(t, 422, "validation_failed")
	fields := map[string]bool{}
	for _, e := range p["errors"].([]any) {
		fields[e.(map[string]any)["field"].(string)] = true
	}
	for _, f := range []string{"email", "full_name", "company_name", "phone"} {
		if !fields[f] {
			t.Errorf("errors %v do not name %s", p["errors"], f)
		}
	}
	n.do("POST", "/auth/register", `{"email": "a@b.co", "password": `).problem(t, 400, "malformed_json")
	p = n.do("POST", "/auth/register", `{"email": 42, "password": "Secret123"}`).problem(t, 422, "validation_failed")
	if e := p["errors"].([]any)[0].(map[string]any); e["field"] != "email" {
		t.Errorf("wrong type names %v; want email", e)
	}
	// Nothing was stored by the rejected requests.
	n.do("POST", "/auth/login", map[string]string{"email": "p@example.com", "password": "Sh0rtPw"}).problem(t, 401, "invalid_credentials")
}

func TestConcurrentRegistrationsOfOneEmail(t *testing.T) {
	n := startNode(t, nil)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		codes = map[int]int{}
		busy  []string
	)
	for i := range 50 {
		wg.Go(func() {
			r := n.do("POST", "/auth/register", map[string]string{
				"email": fmt.Sprintf("Same@Example.com%s", strings.Repeat(" ", i%3)), "password": "Secret123",
				"full_name": "X", "company_name": "Y",
			})
			mu.Lock()
			defer mu.Unlock()
			if r.Status == 503 { // a box short of CPU for 50 password hashes at once may shed some
				codes[r.Status]++
				busy = append(busy, fmt.Sprint(r.json(t)["code"]))
				return
			}
			codes[r.Status]++
		})
	}
	wg.Wait()
	for _, c := range busy {
		if c != "overloaded" && c != "unavailable" {
			t.Errorf("a 503 with code %q", c)
		}
	}
	if codes[201] != 1 || codes[409]+codes[503] != 49 {
		t.Fatalf("status counts %v; want exactly one 201 and 49 409s (or 503s shed)", codes)
	}
	// However many were shed, the email has one account.
	n.do("POST", "/auth/register", map[string]string{"email": "same@example.com", "password": "Secret123",
		"full_name": "X", "company_name": "Y"}).problem(t, 409, "email_taken")
	if got := n.sqlInt(`SELECT count(*) FROM accounts WHERE lower(email) = 'same@example.com'`); got != 1 {
		t.Errorf("%d accounts with the email; want 1", got)
	}
}

func TestLoginRules(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("login@example.com")
	n.do("POST", "/auth/login", map[string]string{"email": a.Email, "password": "Wrong1234"}).problem(t, 401, "invalid_credentials")
	n.do("POST", "/auth/login", map[string]string{"email": "ghost@example.com", "password": "Secret123"}).problem(t, 401, "invalid_credentials")
	n.do("POST", "/auth/login", map[string]string{"email": a.Email}).problem(t, 422, "validation_failed")

	// Suspension: 403 at login and on every authenticated call, by key and by token.
	access, _ := n.login(a)
	n.do("POST", "/admin/accounts/"+a.ID+"/suspend", nil, adminAuth()...)
	n.do("POST", "/auth/login", map[string]string{"email": a.Email, "password": a.Password}).problem(t, 403, "account_suspended")
	n.do("GET", "/auth/me", nil, key(a)...).problem(t, 403, "account_suspended")
	n.do("GET", "/auth/me", nil, bearer(access)...).problem(t, 403, "account_suspended")
	n.do("POST", "/auth/rotate-api-key", nil, key(a)...).problem(t, 403, "account_suspended")
	// A wrong password on a suspended account still says nothing about the suspension.
	n.do("POST", "/auth/login", map[string]string{"email": a.Email, "password": "Wrong1234"}).problem(t, 401, "invalid_credentials")

	r := n.do("POST", "/admin/accounts/"+a.ID+"/reactivate", nil, adminAuth()...)
	if r.Status != 200 || r.json(t)["status"] != "active" {
		t.Fatalf("reactivate = %d %s", r.Status, r.Body)
	}
	if r := n.do("GET", "/auth/me", nil, key(a)...); r.Status != 200 {
		t.Fatalf("me after reactivation = %d %s", r.Status, r.Body)
	}
}

func TestLoginThrottle(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_LOGIN_ATTEMPTS_PER_MINUTE": "3"})
	a := n.register("throttle@example.com")
	for range 3 {
		n.do("POST", "/auth/login", map[string]string{"email": a.Email, "password": "Wrong1234"}).problem(t, 401, "invalid_credentials")
	}
	// Even the right password is refused until the bucket refills: guessing cannot go fast.
	r := n.do("POST", "/auth/login", map[string]string{"email": a.Email, "password": a.Password})
	r.problem(t, 429, "too_many_login_attempts")
	if ra := r.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After = %q; want seconds", ra)
	}
	// Another account from the same address still gets through (the per-IP budget is larger).
	b := n.register("other@example.com")
	n.login(b)
}

func TestRefreshRotationAndReuse(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("refresh@example.com")
	_, rt1 := n.login(a)
	r := n.do("POST", "/auth/refresh", map[string]string{"refresh_token": rt1})
	if r.Status != 200 {
		t.Fatalf("refresh = %d %s", r.Status, r.Body)
	}
	pair := r.json(t)
	rt2 := pair["refresh_token"].(string)
	if rt2 == rt1 || pair["expires_in"] != 1800.0 || pair["token_type"] != "bearer" {
		t.Fatalf("refresh = %v; want a new pair", pair)
	}
	if r := n.do("GET", "/auth/me", nil, bearer(pair["access_token"].(string))...); r.Status != 200 {
		t.Fatalf("me with refreshed token = %d", r.Status)
	}
	n.do("POST", "/auth/refresh", map[string]string{"refresh_token": rt1}).problem(t, 401, "refresh_token_reused")
	n.do("POST", "/auth/refresh", map[string]string{"refresh_token": rt2}).problem(t, 401, "invalid_refresh_token")
	n.do("POST", "/auth/refresh", map[string]string{"refresh_token": "rt_garbage"}).problem(t, 401, "invalid_refresh_token")
	n.do("POST", "/auth/refresh", map[string]string{}).problem(t, 422, "validation_failed")
	// Another login is a new family, unaffected.
	_, rt3 := n.login(a)
	if r := n.do("POST", "/auth/refresh", map[string]string{"refresh_token": rt3}); r.Status != 200 {
		t.Fatalf("refresh in a new family = %d %s", r.Status, r.Body)
	}
}

func TestProfileAndPassword(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("profile@example.com")
	r := n.do("PATCH", "/auth/profile", map[string]any{"full_name": "Jane W.", "country": "Kenya", "phone": "0110123456"}, key(a)...)
	if r.Status != 200 {
		t.Fatalf("profile = %d %s", r.Status, r.Body)
	}
	if u := r.json(t); u["full_name"] != "Jane W." || u["country"] != "Kenya" || u["phone"] != "+254110123456" || u["company_name"] != "Acme Ltd" {
		t.Errorf("profile = %v; want the changes applied and the rest kept", u)
	}
	p := n.do("PATCH", "/auth/profile", map[string]any{"email": "new@example.com"}, key(a)...).problem(t, 422, "validation_failed")
	if p["errors"].([]any)[0].(map[string]any)["field"] != "email" {
		t.Errorf("errors = %v; want email named", p["errors"])
	}
	n.do("PATCH", "/auth/profile", map[string]any{"company_name": ""}, key(a)...).problem(t, 422, "validation_failed")
	n.do("PATCH", "/auth/profile", map[string]any{"full_name": 7}, key(a)...).problem(t, 422, "validation_failed")

	_, refresh := n.login(a)
	n.do("PATCH", "/auth/change-password", map[string]string{"current_password": "Nope12345", "new_password": "Better123"}, key(a)...).
		problem(t, 400, "invalid_current_password")
	n.do("PATCH", "/auth/change-password", map[string]string{"current_password": a.Password, "new_password": "weak"}, key(a)...).
		problem(t, 422, "validation_failed")
	r = n.do("PATCH", "/auth/change-password", map[string]string{"current_password": a.Password, "new_password": "Better123"}, key(a)...)
	if r.Status != 200 || r.json(t)["message"] == "" {
		t.Fatalf("change-password = %d %s", r.Status, r.Body)
	}
	n.do("POST", "/auth/refresh", map[string]string{"refresh_token": refresh}).problem(t, 401, "invalid_refresh_token")
	n.do("POST", "/auth/login", map[string]string{"email": a.Email, "password": a.Password}).problem(t, 401, "invalid_credentials")
	a.Password = "Better123"
	n.login(a)
}

func TestRotateAPIKey(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("rotate@example.com")
	for range 3 { // warm every cache with the old key
		if r := n.do("GET", "/auth/me", nil, key(a)...); r.Status != 200 {
			t.Fatal(r.Status)
		}
	}
	r := n.do("POST", "/auth/rotate-api-key", nil, key(a)...)
	if r.Status != 200 {
		t.Fatalf("rotate = %d %s", r.Status, r.Body)
	}
	m := r.json(t)
	newKey := m["api_key"].(string)
	if newKey == a.APIKey || m["api_key_prefix"] != newKey[:12] {
		t.Fatalf("rotate = %v", m)
	}
	n.do("GET", "/auth/me", nil, key(a)...).problem(t, 401, "unauthenticated")
	if r := n.do("GET", "/auth/me", nil, "X-API-Key", newKey); r.Status != 200 {
		t.Fatalf("me with new key = %d %s", r.Status, r.Body)
	}
}

func TestAdminAPI(t *testing.T) {
	n := startNode(t, nil)
	a := n.register("admin-target@example.com")
	n.do("POST", "/admin/accounts/"+a.ID+"/suspend", nil).problem(t, 401, "unauthenticated")
	n.do("POST", "/admin/accounts/"+a.ID+"/suspend", nil, "Authorization", "Bearer wrong-token-0123456789").problem(t, 401, "unauthenticated")
	n.do("POST", "/admin/accounts/"+a.ID+"/suspend", nil, key(a)...).problem(t, 401, "unauthenticated")
	n.do("POST", "/admin/accounts/01a2016b-4839-76f3-894e-7e3c82ebe08d/suspend", nil, adminAuth()...).problem(t, 404, "not_found")
	n.do("POST", "/admin/accounts/not-a-uuid/suspend", nil, adminAuth()...).problem(t, 404, "not_found")

	off := startNode(t, map[string]string{"TUMA_ADMIN_TOKEN": ""})
	off.do("POST", "/admin/accounts/"+a.ID+"/suspend", nil, adminAuth()...).problem(t, 404, "not_found")
}

func TestRateLimitPerAccount(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_RATE_LIMIT_RPS": "1", "TUMA_RATE_LIMIT_BURST": "3"})
	a := n.register("limited@example.com")
	b := n.register("unlimited@example.com")
	for range 3 {
		if r := n.do("GET", "/auth/me", nil, key(a)...); r.Status != 200 {
			t.Fatalf("within burst = %d", r.Status)
		}
	}
	r := n.do("GET", "/auth/me", nil, key(a)...)
	r.problem(t, 429, "rate_limited")
	if r.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After = %q; want 1", r.Header.Get("Retry-After"))
	}
	if r := n.do("GET", "/auth/me", nil, key(b)...); r.Status != 200 {
		t.Errorf("another account = %d; want 200 (limits are per account)", r.Status)
	}
}

func TestOperationsEndpoints(t *testing.T) {
	n := startNode(t, nil)
	if r := n.do("GET", "/healthz", nil); r.Status != 200 {
		t.Errorf("healthz = %d", r.Status)
	}
	r := n.do("GET", "/readyz", nil)
	if m := r.json(t); r.Status != 200 || m["status"] != "ok" {
		t.Errorf("readyz = %d %s", r.Status, r.Body)
	}
	n.do("GET", "/auth/me", nil)
	metrics := string(n.do("GET", "/metrics", nil).Body)
	for _, want := range []string{
		`tuma_http_requests_total{code="401",method="GET",route="/auth/me"} 1`,
		"tuma_http_request_duration_seconds_bucket", "go_goroutines", "tuma_process_resident_memory_bytes",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	doc := n.do("GET", "/openapi.json", nil)
	if doc.Status != 200 || doc.json(t)["openapi"] != "3.1.0" {
		t.Errorf("openapi.json = %d, openapi %v", doc.Status, doc.json(t)["openapi"])
	}
	docs := n.do("GET", "/docs", nil)
	if docs.Status != 200 || !strings.Contains(string(docs.Body), "/openapi.json") {
		t.Errorf("/docs = %d", docs.Status)
	}
	for _, asset := range []string{"/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css", "/docs/swagger-ui-standalone-preset.js"} {
		if r := n.do("GET", asset, nil); r.Status != 200 || len(r.Body) < 1000 {
			t.Errorf("%s = %d (%d bytes); want the embedded asset", asset, r.Status, len(r.Body))
		}
	}
	n.do("GET", "/nowhere", nil).problem(t, 404, "not_found")
	n.do("PUT", "/auth/me", nil).problem(t, 405, "method_not_allowed")
}

func TestServesWhenRedisIsCut(t *testing.T) {
	redisSrv := redistest.StartServer(t)
	n := startNode(t, map[string]string{"TUMA_REDIS_URL": redisSrv.URL})
	a := n.register("outage@example.com")
	for range 3 {
		if r := n.do("GET", "/auth/me", nil, key(a)...); r.Status != 200 {
			t.Fatal(r.Status)
		}
	}
	redisSrv.Kill()

	// Everything still works on fallbacks: key auth (PostgreSQL), token auth, rate limits.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := n.do("GET", "/readyz", nil)
		if r.json(t)["status"] == "degraded" {
			if r.Status != 200 {
				t.Fatalf("degraded readyz = %d; want 200 (still serving)", r.Status)
			}
			m := string(n.do("GET", "/metrics", nil).Body)
			if !strings.Contains(m, `tuma_dependency_up{dependency="redis"} 0`) || !strings.Contains(m, `tuma_dependency_up{dependency="postgres"} 1`) {
				t.Errorf("tuma_dependency_up does not show Redis down and PostgreSQL up")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz never reported degraded: %s", r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for range 5 {
		if r := n.do("GET", "/auth/me", nil, key(a)...); r.Status != 200 {
			t.Fatalf("me by key with Redis down = %d %s", r.Status, r.Body)
		}
	}
	access, _ := n.login(a)
	if r := n.do("GET", "/auth/me", nil, bearer(access)...); r.Status != 200 {
		t.Fatalf("me by token with Redis down = %d", r.Status)
	}
	b := n.register("during-outage@example.com")
	r := n.do("POST", "/auth/rotate-api-key", nil, key(b)...)
	if r.Status != 200 {
		t.Fatalf("rotate with Redis down = %d %s", r.Status, r.Body)
	}
	n.do("GET", "/auth/me", nil, key(b)...).problem(t, 401, "unauthenticated")
	n.do("POST", "/admin/accounts/"+a.ID+"/suspend", nil, adminAuth()...)
	n.do("GET", "/auth/me", nil, key(a)...).problem(t, 403, "account_suspended")
}
