package redis

import (
	"context"
	"sync"
	"time"
)

// A busy bucket is served from leases: tokens taken from Redis ahead of demand and spent by
// this node, so an account's requests cost one round trip per lease instead of one each. A
// lease holds at most what the rate refills in leaseSpan, and a token is never spent twice,
// so over any window a bucket lets through at most one lease per node beyond its rate and
// burst (at the default 100/s, 5 requests). Tokens a lease still holds after leaseLife are
// dropped, never handed back: a node that goes quiet parks at most one lease.
const (
	leaseSpan = 50 * time.Millisecond
	leaseLife = time.Second
)

// leaseCap is the most tokens one lease of r takes: what the rate refills in leaseSpan, and
// no more than a quarter of the burst. 1 means no leasing (every request asks Redis), which
// keeps slow buckets (logins, sign-ups, e-mails per address) exact across nodes.
func leaseCap(r Rate) int {
	n := int(r.PerSecond * leaseSpan.Seconds())
	return max(min(n, r.Burst/4), 1)
}

// lease is one bucket's tokens held by this node.
type lease struct {
	mu      sync.Mutex // held across the Redis call: a key's requests queue for one lease
	tokens  int        // taken from Redis and not yet spent
	until   time.Time  // tokens left after this are dropped
	want    int        // the next lease's size: doubled when one runs out, halved when one expires unspent
	refused time.Time  // Redis had no token: refuse locally until then
}

// idle: the lease has nothing worth keeping (a new one starts small again).
func (le *lease) idle(now time.Time) bool {
	if !le.mu.TryLock() {
		return false
	}
	defer le.mu.Unlock()
	return now.Sub(le.until) > time.Minute && now.After(le.refused)
}

// leased spends a token of key's lease, taking a new lease from Redis when it is spent or
// stale, and falls back to the node's own bucket when Redis does not answer.
func (l *Limiter) leased(ctx context.Context, key string, r Rate) Decision {
	le := l.leases.get(key, time.Now(), func() *lease { return &lease{want: 1} })
	le.mu.Lock()
	defer le.mu.Unlock()
	now := time.Now() // after the wait for the lock, which another request's round trip may hold
	if now.Before(le.refused) {
		return Decision{RetryAfter: le.refused.Sub(now)}
	}
	if le.tokens > 0 && now.Before(le.until) {
		le.tokens--
		return Decision{Allowed: true}
	}
	le.resize(now, leaseCap(r))
	granted, retry, ok := l.take(ctx, key, r, le.want)
	if !ok {
		le.tokens = 0
		return l.local.allow(key, r, now)
	}
	if granted == 0 {
		le.tokens, le.want, le.refused = 0, 1, now.Add(retry)
		return Decision{RetryAfter: retry}
	}
	le.tokens, le.until = granted-1, now.Add(leaseLife)
	return Decision{Allowed: true}
}

// resize sizes the next lease from how the last one went: spent before it expired, demand
// outruns it; expired with tokens left, it was too large (those tokens are lost to every node).
func (le *lease) resize(now time.Time, most int) {
	switch {
	case le.tokens > 0:
		le.want = max(le.want/2, 1)
	case now.Before(le.until):
		le.want *= 2
	}
	le.want = min(le.want, most)
}
