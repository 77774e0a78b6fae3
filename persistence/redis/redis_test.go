package redis_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/persistence/redis"
	"github.com/tuma-sms/tuma/persistence/redis/redistest"
)

func newClient(t *testing.T, url, prefix string) *redis.Client {
	t.Helper()
	c, err := redis.New(context.Background(), redis.Options{URL: url, Prefix: prefix, CheckInterval: 50 * time.Millisecond}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// steadyClient is a client that a loaded machine does not push into its local fallback: a
// health check every second and commands given 5 s, for tests of what Redis shares.
func steadyClient(t *testing.T, url, prefix string) *redis.Client {
	t.Helper()
	c, err := redis.New(context.Background(), redis.Options{URL: url, Prefix: prefix, CheckInterval: time.Second,
		CommandTimeout: 5 * time.Second}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// eventually polls cond until it holds or 5 seconds pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRevocationReachesEveryNode(t *testing.T) {
	url, prefix := redistest.URL(t), redistest.Prefix()
	ctx := context.Background()
	nodeA := redis.NewPrincipals(newClient(t, url, prefix), time.Minute)
	nodeB := redis.NewPrincipals(newClient(t, url, prefix), time.Minute)
	hash := sha256.Sum256([]byte("sk_live_example"))

	if _, _, hit := nodeA.KeyAccount(ctx, hash[:]); hit {
		t.Fatal("cold cache hit; want a miss")
	}
	nodeA.FillKey(ctx, hash[:], "acct-1")
	eventually(t, "node A to see its fill", func() bool {
		id, found, hit := nodeA.KeyAccount(ctx, hash[:])
		return hit && found && id == "acct-1"
	})
	// Node B rotates the key: node A, which holds it in its client-side cache, must stop
	// accepting it without any call from B to A.
	nodeB.RevokeKey(ctx, hash[:])
	eventually(t, "node A to see the revocation", func() bool {
		_, found, hit := nodeA.KeyAccount(ctx, hash[:])
		return hit && !found
	})
	// A slow reader that looked the key up before the rotation cannot resurrect it.
	nodeA.FillKey(ctx, hash[:], "acct-1")
	if _, found, _ := nodeB.KeyAccount(ctx, hash[:]); found {
		t.Fatal("a stale fill overwrote the revocation")
	}
	// The node that revoked refuses at once, before any invalidation could arrive.
	if _, found, _ := nodeB.KeyAccount(ctx, hash[:]); found {
		t.Fatal("revoking node still accepts the key")
	}
}

func TestAccountAccessPublish(t *testing.T) {
	url, prefix := redistest.URL(t), redistest.Prefix()
	ctx := context.Background()
	nodeA := redis.NewPrincipals(newClient(t, url, prefix), time.Minute)
	nodeB := redis.NewPrincipals(newClient(t, url, prefix), time.Minute)
	is := func(p *redis.Principals, status string, version int64) func() bool {
		return func() bool { s, v, hit := p.AccountAccess(ctx, "acct-2"); return hit && s == status && v == version }
	}
	nodeA.FillAccountAccess(ctx, "acct-2", "active", 0)
	eventually(t, "access cached", is(nodeA, "active", 0))
	nodeB.FillAccountAccess(ctx, "acct-2", "active", 0)
	eventually(t, "access cached on B", is(nodeB, "active", 0))
	nodeB.SetAccountAccess(ctx, "acct-2", "suspended", 0)
	// The publishing node sees its own change at once, before Redis's invalidation reaches it.
	if s, _, hit := nodeB.AccountAccess(ctx, "acct-2"); !hit || s != "suspended" {
		t.Fatalf("publishing node reads %q (hit %v) right after the change; want suspended", s, hit)
	}
	eventually(t, "suspension seen by node A", is(nodeA, "suspended", 0))
	nodeA.FillAccountAccess(ctx, "acct-2", "active", 0) // stale fill must not win
	if s, _, _ := nodeB.AccountAccess(ctx, "acct-2"); s != "suspended" {
		t.Fatalf("status after stale fill = %q; want suspended", s)
	}
	// A new password bumps the token version: every node learns it.
	nodeA.SetAccountAccess(ctx, "acct-2", "active", 1)
	eventually(t, "new token version seen by node B", is(nodeB, "active", 1))
}

func TestLimiterSharedBucket(t *testing.T) {
	url, prefix := redistest.URL(t), redistest.Prefix()
	ctx := context.Background()
	// Steady clients: a check timing out on a busy CI machine (50 ms) sent a node to its local
	// bucket, which let 12 of 15 through.
	a := redis.NewLimiter(steadyClient(t, url, prefix), 0)
	b := redis.NewLimiter(steadyClient(t, url, prefix), 0)
	r := redis.Rate{PerSecond: 0.5, Burst: 10}
	allowed := 0
	var last redis.Decision
	for i := range 15 {
		l := a
		if i%2 == 1 {
			l = b // two nodes share one bucket
		}
		last = l.Allow(ctx, "acct:x", r)
		if last.Allowed {
			allowed++
		}
	}
	if allowed != 10 {
		t.Fatalf("allowed %d of 15 against a burst of 10; want 10", allowed)
	}
	if last.RetryAfter <= 0 || last.RetryAfter > 2*time.Second {
		t.Fatalf("RetryAfter = %v; want about 2s (one token at 0.5/s)", last.RetryAfter)
	}
	if d := a.Allow(ctx, "acct:other", r); !d.Allowed {
		t.Fatal("another key shares the bucket; want independent buckets")
	}
}

// TestLocalBucketsAreBounded: while Redis is down every key (client IPs, emails: outside
// input) gets an in-process bucket; past the cap the least recently used is dropped.
func TestLocalBucketsAreBounded(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, "redis://127.0.0.1:1/0", redistest.Prefix()) // nothing listens there
	if c.Available() {
		t.Fatal("redis on port 1 is available; want it down")
	}
	l := redis.NewLimiter(c, 2)
	r := redis.Rate{PerSecond: 0.001, Burst: 1}
	if !l.Allow(ctx, "ip:a", r).Allowed || l.Allow(ctx, "ip:a", r).Allowed {
		t.Fatal("bucket a: want one request allowed, then refused")
	}
	l.Allow(ctx, "ip:b", r)
	l.Allow(ctx, "ip:c", r) // a is now the least recently used of three: dropped
	if l.LocalBuckets() != 2 {
		t.Errorf("LocalBuckets() = %d; want 2 (the cap)", l.LocalBuckets())
	}
	if !l.Allow(ctx, "ip:a", r).Allowed {
		t.Error("bucket a was kept beyond the cap; want it dropped (and so full again)")
	}
	for i := range 1000 {
		l.Allow(ctx, fmt.Sprintf("ip:%d", i), r)
	}
	if l.LocalBuckets() != 2 {
		t.Errorf("after 1000 keys LocalBuckets() = %d; want 2", l.LocalBuckets())
	}
}

func TestFallbacksWhenRedisDies(t *testing.T) {
	srv := redistest.StartServer(t)
	ctx := context.Background()
	c := newClient(t, srv.URL, redistest.Prefix())
	eventually(t, "redis available", c.Available)
	p := redis.NewPrincipals(c, time.Minute)
	l := redis.NewLimiter(c, 0)
	hash := sha256.Sum256([]byte("k"))
	p.FillKey(ctx, hash[:], "acct")
	eventually(t, "fill visible", func() bool { _, found, _ := p.KeyAccount(ctx, hash[:]); return found })

	srv.Kill()
	start := time.Now()
	// Lookups degrade to misses (the caller asks PostgreSQL) instead of failing or hanging.
	eventually(t, "cache to report misses", func() bool { _, _, hit := p.KeyAccount(ctx, hash[:]); return !hit })
	if time.Since(start) > 3*time.Second {
		t.Errorf("noticing the outage took %v", time.Since(start))
	}
	eventually(t, "client to report redis down", func() bool { return !c.Available() })
	r := redis.Rate{PerSecond: 1, Burst: 3}
	allowed := 0
	for range 5 {
		if l.Allow(ctx, "acct:y", r).Allowed {
			allowed++
		}
	}
	if allowed != 3 {
		t.Fatalf("in-process fallback allowed %d of 5 against a burst of 3; want 3", allowed)
	}
	// A revocation made during the outage is kept and still refused locally.
	p.RevokeKey(ctx, hash[:])
	if _, found, hit := p.KeyAccount(ctx, hash[:]); found || hit {
		t.Fatalf("revoked key during outage: found=%v hit=%v; want a miss so the database decides", found, hit)
	}
}

func TestRevocationDuringOutageIsReplayed(t *testing.T) {
	srv := redistest.StartServer(t)
	ctx := context.Background()
	prefix := redistest.Prefix()
	cA, cB := newClient(t, srv.URL, prefix), newClient(t, srv.URL, prefix)
	nodeA, nodeB := redis.NewPrincipals(cA, time.Minute), redis.NewPrincipals(cB, time.Minute)
	eventually(t, "both nodes connected", func() bool { return cA.Available() && cB.Available() })
	hash := sha256.Sum256([]byte("rotated during outage"))

	srv.Kill()
	eventually(t, "node B to notice the outage", func() bool { nodeB.KeyAccount(ctx, hash[:]); return !cB.Available() })
	nodeB.RevokeKey(ctx, hash[:]) // cannot reach Redis: kept for replay
	srv.Restart()
	eventually(t, "node A to read the replayed revocation", func() bool {
		_, found, hit := nodeA.KeyAccount(ctx, hash[:])
		return hit && !found
	})
}
