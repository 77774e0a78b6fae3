package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence"
	"github.com/tuma-sms/tuma/transport/auth"
)

func TestKESFormatting(t *testing.T) {
	tests := []struct {
		cents int64
		want  string
	}{{0, "0.00"}, {5, "0.05"}, {50, "0.50"}, {250, "2.50"}, {123456, "1234.56"}, {-48, "-0.48"}}
	for _, tt := range tests {
		b, err := json.Marshal(KES(tt.cents))
		if err != nil || string(b) != tt.want {
			t.Errorf("KES(%d) = %s, %v; want %s", tt.cents, b, err, tt.want)
		}
	}
}

func TestProblemJSONFlattensExtra(t *testing.T) {
	p := NewProblem("invalid_code", "wrong code")
	p.Extra = map[string]any{"attempts_remaining": 3}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	want := map[string]any{"type": "about:blank", "title": "Bad Request", "status": 400.0, "detail": "wrong code",
		"code": "invalid_code", "attempts_remaining": 3.0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("problem JSON = %v; want %v", got, want)
	}
}

func TestProblemForMapsDomainErrors(t *testing.T) {
	tests := []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("wrapped: %w", persistence.ErrNotFound), 404, "not_found"},
		{persistence.ErrEmailTaken, 409, "email_taken"},
		{persistence.ErrTokenReused, 401, "refresh_token_reused"},
		{persistence.ErrIdempotencyBusy, 409, "idempotency_key_in_use"},
		{persistence.ErrIdempotencyUsed, 422, "idempotency_key_reused"},
		{auth.ErrUnauthenticated, 401, "unauthenticated"},
		{auth.ErrSuspended, 403, "account_suspended"},
		{NewProblem("malformed_json", "x"), 400, "malformed_json"},
		// A store call that ran out of the request's time: unknown outcome, retry.
		{fmt.Errorf("create account: timeout: %w", context.DeadlineExceeded), 503, "unavailable"},
		{errors.New("pq: relation accounts is on fire"), 500, "internal_error"},
	}
	for _, tt := range tests {
		p := problemFor(tt.err)
		if p.Status != tt.status || p.Code != tt.code {
			t.Errorf("problemFor(%v) = %d %s; want %d %s", tt.err, p.Status, p.Code, tt.status, tt.code)
		}
	}
	if p := problemFor(errors.New("secret driver text")); p.Detail == "secret driver text" {
		t.Error("a 500 problem leaks the error text")
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	type body struct {
		Name  string   `json:"name"`
		Count int      `json:"count"`
		Tags  []string `json:"tags"`
	}
	tests := []struct {
		in     string
		status int
		field  string
	}{
		{``, 400, ""},
		{`{"name": "x"`, 400, ""},
		{`{"name": "x"} trailing`, 400, ""},
		{`{"name": 'x'}`, 400, ""},
		{`{"`, 400, ""}, // a string left open: it panicked (a 500) before the decoder saw it
		{`{"name":"x","name`, 400, ""},
		{`{"name": 5}`, 422, "name"},
		{`{"count": "5"}`, 422, "count"},
		{`{"tags": "a"}`, 422, "tags"},
		{`[1,2]`, 422, "body"},
		{`{"unknown": true, "name": "ok"}`, 0, ""},
	}
	for _, tt := range tests {
		var v body
		err := ParseJSON([]byte(tt.in), &v)
		if tt.status == 0 {
			if err != nil {
				t.Errorf("decode(%q) = %v; want success", tt.in, err)
			}
			continue
		}
		p := problemFor(err)
		if p.Status != tt.status {
			t.Errorf("decode(%q) status = %d (%v); want %d", tt.in, p.Status, err, tt.status)
			continue
		}
		if tt.field != "" && (len(p.Errors) != 1 || p.Errors[0].Field != tt.field) {
			t.Errorf("decode(%q) errors = %+v; want one naming %q", tt.in, p.Errors, tt.field)
		}
	}
}

func TestNormalizeEmail(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"Jane@Example.COM", "jane@example.com", true},
		{"  jane@example.com ", "jane@example.com", true},
		{"jane", "", false},
		{"jane@localhost", "", false},
		{"Jane <jane@example.com>", "", false},
		{"jane@@example.com", "", false},
	}
	for _, tt := range tests {
		got, ok := NormalizeEmail(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// While PostgreSQL is down or restarting, requests that need it answer 503 "unavailable" with
// Retry-After (retry later, same Idempotency-Key), never an opaque 500.
func TestDatabaseDownIs503WithRetryAfter(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, refused := pgconn.Connect(ctx, "postgres://postgres@"+addr+"/tuma?sslmode=disable&connect_timeout=2")
	if refused == nil {
		t.Fatal("connected to a closed port")
	}
	s, _ := bareServer(t, Options{}, route("POST", "/needs-the-database", Public, func(context.Context, *fasthttp.RequestCtx) error {
		return fmt.Errorf("claim idempotency key: %w", refused)
	}))
	c := serveInMemory(t, s)
	status, h, p := call(t, c, "POST", "/needs-the-database", "", nil)
	if status != 503 || p.Code != "unavailable" {
		t.Fatalf("database down = %d %+v; want 503 unavailable", status, p)
	}
	if ra := string(h.Peek("Retry-After")); ra == "" || ra == "0" {
		t.Errorf("Retry-After = %q; want a positive number of seconds", ra)
	}
	if strings.Contains(p.Detail, addr) {
		t.Errorf("the problem reveals the database address: %q", p.Detail)
	}
}
