package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/cmd/tuma/app"
	"github.com/tuma-sms/tuma/persistence/pgtest"
	"github.com/tuma-sms/tuma/persistence/redis/redistest"
)

const adminToken = "test-admin-token-0123456789"

// node is a running Tuma on a random port with its own database and Redis key space.
type node struct {
	t     *testing.T
	base  string
	dbURL string
	// internal is the base URL of the internal listener (TUMA_METRICS_ADDR), "" when off.
	internal string
	http     *http.Client
	stop     func()
	logs     *syncBuffer // what the node logged at warn and above
	smpp     string      // the tenants' SMPP server (TUMA_SMPP_SERVER_ADDR), "" when off
}

// syncBuffer is a buffer safe for a logger writing while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startNode runs the real application. env overrides the test defaults.
func startNode(t *testing.T, env map[string]string, opts ...app.Option) *node {
	t.Helper()
	n, err := bootNode(t, env, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// bootNode runs the real application and waits until it has booted, or says why it stopped.
func bootNode(t *testing.T, env map[string]string, opts ...app.Option) (*node, error) {
	t.Helper()
	vars := map[string]string{
		"TUMA_HTTP_ADDR":        "127.0.0.1:0",
		"TUMA_DATABASE_URL":     "", // filled below unless overridden
		"TUMA_REDIS_PREFIX":     redistest.Prefix(),
		"TUMA_DATA_DIR":         t.TempDir(),
		"TUMA_BCRYPT_COST":      "4",
		"TUMA_ADMIN_TOKEN":      adminToken,
		"TUMA_ACCESS_LOG":       "false",
		"TUMA_LOG_LEVEL":        "warn",
		"TUMA_SHUTDOWN_TIMEOUT": "10s",
		// Tests register many accounts and log in often from 127.0.0.1; the tests of these
		// budgets set them themselves.
		"TUMA_SIGNUP_LIMIT_PER_IP": "0",
		"TUMA_AUTH_LIMIT_PER_IP":   "0",
	}
	for k, v := range env {
		vars[k] = v
	}
	if vars["TUMA_DATABASE_URL"] == "" {
		vars["TUMA_DATABASE_URL"] = pgtest.NewDatabase(t)
	}
	if vars["TUMA_REDIS_URL"] == "" {
		vars["TUMA_REDIS_URL"] = redistest.URL(t)
	}
	cfg, err := app.LoadConfig(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(io.MultiWriter(t.Output(), logs), &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := app.New(context.Background(), cfg, log, opts...)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	select { // it serves at once; wait until it has booted
	case <-a.Ready():
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("node stopped while booting: %w", err)
	case <-time.After(time.Minute):
		t.Fatalf("node did not boot within a minute")
	}
	n := &node{t: t, base: "http://" + a.Addr(), dbURL: cfg.DatabaseURL, http: &http.Client{Timeout: 30 * time.Second}, logs: logs}
	n.smpp = a.SMPPServerAddr()
	if ia := a.InternalAddr(); ia != "" {
		n.internal = "http://" + ia
	}
	stopped := false
	n.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("node shutdown: %v", err)
		}
	}
	t.Cleanup(n.stop)
	return n, nil
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// json decodes the body into a map (or fails the test).
func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response %d %q is not a JSON object: %v", r.Status, r.Body, err)
	}
	return m
}

// problem checks the response is a problem with the given status and code.
func (r response) problem(t *testing.T, status int, code string) map[string]any {
	t.Helper()
	if r.Status != status || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("got %d %s %q; want a %d problem", r.Status, r.Header.Get("Content-Type"), r.Body, status)
	}
	m := r.json(t)
	if m["code"] != code || m["status"] != float64(status) || m["type"] != "about:blank" {
		t.Fatalf("problem = %v; want code %q status %d", m, code, status)
	}
	return m
}

// do sends a request. body may be nil, a string (sent as is) or a value (sent as JSON).
func (n *node) do(method, path string, body any, headers ...string) response {
	n.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			n.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, n.base+path, rd)
	if err != nil {
		n.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return n.roundTrip(req)
}

// roundTrip sends a request built by the test and checks the answer against the contract.
func (n *node) roundTrip(req *http.Request) response {
	n.t.Helper()
	resp, err := n.http.Do(req)
	if err != nil {
		n.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		n.t.Fatal(err)
	}
	n.checkContract(req, resp, b)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// account is a registered tenant.
type account struct {
	ID, Email, Password, APIKey string
}

func (n *node) register(email string) account {
	n.t.Helper()
	r := n.do("POST", "/auth/register", map[string]string{
		"email": email, "password": "Secret123", "full_name": "Jane Wanjiru", "company_name": "Acme Ltd",
		"phone": "0712345678", "business_type": "retail", "country": "KE",
	})
	if r.Status != 201 {
		n.t.Fatalf("register %s = %d %s", email, r.Status, r.Body)
	}
	m := r.json(n.t)
	return account{ID: m["id"].(string), Email: email, Password: "Secret123", APIKey: m["api_key"].(string)}
}

func (n *node) login(a account) (access, refresh string) {
	n.t.Helper()
	r := n.do("POST", "/auth/login", map[string]string{"email": a.Email, "password": a.Password})
	if r.Status != 200 {
		n.t.Fatalf("login %s = %d %s", a.Email, r.Status, r.Body)
	}
	m := r.json(n.t)
	return m["access_token"].(string), m["refresh_token"].(string)
}

func key(a account) []string       { return []string{"X-API-Key", a.APIKey} }
func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }
func adminAuth() []string          { return []string{"Authorization", "Bearer " + adminToken} }

// json2 decodes a body that is a JSON array.
func (r response) json2(t *testing.T) []any {
	t.Helper()
	var a []any
	if err := json.Unmarshal(r.Body, &a); err != nil {
		t.Fatalf("response %d %q is not a JSON array: %v", r.Status, r.Body, err)
	}
	return a
}
