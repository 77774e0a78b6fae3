package api

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/persistence/pgtest"
	"github.com/tuma-sms/tuma/persistence/redis"
	"github.com/tuma-sms/tuma/persistence/redis/redistest"
	"github.com/tuma-sms/tuma/transport/auth"
)

// BenchmarkAuthMiddlewareAPIKey measures the whole middleware chain (request id, metrics,
// API-key authentication, principal) for a request whose key is warm in Redis client-side
// caching. The per-account rate limit is off: it is a Redis round trip of its own.
func BenchmarkAuthMiddlewareAPIKey(b *testing.B) {
	st, _ := pgtest.NewStore(b)
	log := slog.New(slog.DiscardHandler)
	rc, err := redis.New(context.Background(), redis.Options{URL: redistest.URL(b), Prefix: redistest.Prefix()}, log)
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	principals := redis.NewPrincipals(rc, time.Minute)
	key, prefix, hash, err := auth.NewAPIKey()
	if err != nil {
		b.Fatal(err)
	}
	na := newTestAccount("bench@example.com")
	na.APIKeyHash, na.APIKeyPrefix = hash, prefix
	if _, err := st.CreateAccount(context.Background(), na); err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	tokens := auth.NewTokens([]byte("0123456789abcdef0123456789abcdef"), nil)
	s, err := New(Options{}, Deps{Log: log, Registerer: reg,
		Auth: auth.NewAuthenticator(st, principals, tokens), Limiter: redis.NewLimiter(rc, 0)},
		route("GET", "/bench", Account, func(_ context.Context, rc *fasthttp.RequestCtx) error {
			if Principal(rc).Source != auth.SourceAPI {
				b.Fatal("not authenticated by key")
			}
			rc.SetStatusCode(204)
			return nil
		}))
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/bench")
	ctx.Request.Header.Set("X-API-Key", key)
	for range 100 { // fill the cache and wait for client-side caching to hold it
		h(&ctx)
	}
	if _, _, hit := principals.KeyAccount(context.Background(), hash); !hit {
		b.Fatal("key not cached")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ctx.Response.Reset()
		h(&ctx)
		if ctx.Response.StatusCode() != 204 {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}
