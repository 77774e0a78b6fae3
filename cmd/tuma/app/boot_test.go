package app_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/cmd/tuma/app"
	"github.com/tuma-sms/tuma/persistence/pgtest"
	"github.com/tuma-sms/tuma/persistence/redis/redistest"
)

// gatedProxy forwards TCP connections to target once opened; before that it refuses them, as
// a database that is not up yet does.
type gatedProxy struct {
	ln     net.Listener
	target string
	open   atomic.Bool
}

func newGatedProxy(t *testing.T, target string) *gatedProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &gatedProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !p.open.Load() {
				c.Close()
				continue
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c) }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return p
}

// The node listens and answers liveness within a second of start, and readiness says it is
// starting, while PostgreSQL cannot be reached; once it can, the node boots by itself.
func TestServesFirstWhileTheDatabaseIsDown(t *testing.T) {
	dbURL, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newGatedProxy(t, dbURL.Host)
	dbURL.Host = proxy.ln.Addr().String()
	vars := map[string]string{
		"TUMA_HTTP_ADDR": "127.0.0.1:0", "TUMA_DATABASE_URL": dbURL.String(), "TUMA_REDIS_URL": redistest.URL(t),
		"TUMA_REDIS_PREFIX": redistest.Prefix(), "TUMA_LOG_LEVEL": "error", "TUMA_BCRYPT_COST": "4",
	}
	cfg, err := app.LoadConfig(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	base := "http://" + a.Addr()
	get := func(path string) int {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := get("/healthz"); s != 200 {
		t.Fatalf("/healthz while booting = %d; want 200", s)
	}
	if took := time.Since(started); took > time.Second {
		t.Errorf("/healthz answered %v after start; want within a second", took)
	}
	if s := get("/readyz"); s != 503 {
		t.Errorf("/readyz while the database is down = %d; want 503", s)
	}
	if s := get("/sms/stats"); s != 503 {
		t.Errorf("an API call while booting = %d; want 503", s)
	}
	proxy.open.Store(true)
	select {
	case <-a.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the node did not boot once the database came up")
	}
	if s := get("/readyz"); s != 200 {
		t.Errorf("/readyz after booting = %d; want 200", s)
	}
}
