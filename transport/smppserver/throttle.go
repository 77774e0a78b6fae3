package smppserver

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence/redis"
)

// Limiter shares a rate across nodes (persistence/redis.Limiter: one bucket in Redis, taken
// from in short leases by a busy node, each node on its own while Redis is down).
type Limiter interface {
	Allow(ctx context.Context, key string, r redis.Rate) redis.Decision
}

// maxIdleBuckets is the buckets kept before the full ones (accounts idle a second or more)
// are forgotten: a full bucket and no bucket allow the same.
const maxIdleBuckets = 1024

// throttle is a token bucket per account, shared by all its binds: rate submits a second, a
// burst of one second's worth. With a Limiter the bucket is shared by every node's binds too;
// without, by this node's. A zero rate allows everything.
type throttle struct {
	rate   float64
	shared Limiter // nil: buckets in this node's memory

	mu      sync.Mutex
	buckets map[uuid.UUID]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newThrottle(rate int, shared Limiter) *throttle {
	return &throttle{rate: float64(rate), shared: shared, buckets: map[uuid.UUID]*bucket{}}
}

// allow takes a token of account's bucket at now, if it has one.
func (t *throttle) allow(account uuid.UUID, now time.Time) bool {
	if t.rate <= 0 {
		return true
	}
	if t.shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return t.shared.Allow(ctx, "smpp-tps:"+account.String(), redis.Rate{PerSecond: t.rate, Burst: max(int(t.rate), 1)}).Allowed
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buckets[account]
	if b == nil {
		if len(t.buckets) >= maxIdleBuckets {
			t.forgetFull(now)
		}
		b = &bucket{tokens: t.rate, at: now}
		t.buckets[account] = b
	}
	if now.After(b.at) {
		b.tokens = min(t.rate, b.tokens+now.Sub(b.at).Seconds()*t.rate)
		b.at = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (t *throttle) forgetFull(now time.Time) {
	for id, b := range t.buckets {
		if now.Sub(b.at) >= time.Second {
			delete(t.buckets, id)
		}
	}
}
