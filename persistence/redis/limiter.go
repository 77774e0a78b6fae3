package redis

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/tuma-sms/tuma/persistence/lru"
)

// Rate is a token bucket: Burst tokens at most, refilled at PerSecond.
type Rate struct {
	PerSecond float64
	Burst     int
}

// Decision is a limiter's answer.
type Decision struct {
	Allowed    bool
	RetryAfter time.Duration // when not allowed: how long until the request would be
}

// tokenBucket runs atomically in Redis. It reads Redis's own clock so every node shares one
// bucket correctly. Returns {allowed, retry_ms}.
const tokenBucket = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = redis.call('HMGET', KEYS[1], 't', 'ts')
local tokens = tonumber(v[1])
local ts = tonumber(v[2])
if tokens == nil or ts == nil then tokens = burst; ts = now end
if now > ts then tokens = math.min(burst, tokens + (now - ts) * rate / 1000) end
local allowed, retry = 0, 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  retry = math.ceil((cost - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {allowed, retry}
`

// Limiter enforces token buckets shared by every node through Redis, and falls back to
// per-process buckets while Redis is unavailable (each node then enforces the rate alone).
type Limiter struct {
	c      *Client
	script *rueidis.Lua
	local  *localBuckets
}

// NewLimiter returns a limiter on c. localKeys caps the per-process buckets kept while Redis
// is down (0: no cap): every key is outside input (client IPs, emails), so without a cap an
// outage would let anyone grow this map at will.
func NewLimiter(c *Client, localKeys int) *Limiter {
	return &Limiter{c: c, script: rueidis.NewLuaScript(tokenBucket), local: newLocalBuckets(localKeys)}
}

// Allow takes one token from the bucket named key.
func (l *Limiter) Allow(ctx context.Context, key string, r Rate) Decision {
	if r.PerSecond <= 0 || r.Burst <= 0 {
		return Decision{Allowed: true}
	}
	k := l.c.Key("rl", key)
	if rc, cctx, cancel, ok := l.c.do(ctx); ok {
		res, err := l.script.Exec(cctx, rc, []string{k}, []string{
			strconv.FormatFloat(r.PerSecond, 'f', -1, 64), strconv.Itoa(r.Burst), "1",
		}).AsIntSlice()
		cancel()
		if err == nil && len(res) == 2 {
			return Decision{Allowed: res[0] == 1, RetryAfter: time.Duration(res[1]) * time.Millisecond}
		}
		l.c.failed(err)
	}
	return l.local.allow(k, r, time.Now())
}

// LocalBuckets is how many per-process fallback buckets are held (for tests and debugging).
func (l *Limiter) LocalBuckets() int {
	l.local.mu.Lock()
	defer l.local.mu.Unlock()
	return l.local.m.Len()
}

type bucket struct {
	tokens float64
	at     time.Time
}

// localBuckets are the per-process fallback buckets, least recently used dropped first. A
// dropped bucket starts full again, which only ever errs towards allowing.
type localBuckets struct {
	mu       sync.Mutex
	m        *lru.Cache[string, *bucket]
	lastTidy time.Time
}

func newLocalBuckets(max int) *localBuckets {
	return &localBuckets{m: lru.New[string, *bucket](max)}
}

func (lb *localBuckets) allow(key string, r Rate, now time.Time) Decision {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if now.Sub(lb.lastTidy) > time.Minute {
		// A bucket idle long enough to be full again carries no state worth keeping; the
		// oldest are at the back.
		for k, b, ok := lb.m.Oldest(); ok && now.Sub(b.at) > time.Hour; k, b, ok = lb.m.Oldest() {
			lb.m.Remove(k)
		}
		lb.lastTidy = now
	}
	b, ok := lb.m.Get(key)
	if !ok {
		b = &bucket{tokens: float64(r.Burst), at: now}
		lb.m.Add(key, b)
	}
	if el := now.Sub(b.at).Seconds(); el > 0 {
		b.tokens = math.Min(float64(r.Burst), b.tokens+el*r.PerSecond)
	}
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return Decision{Allowed: true}
	}
	wait := time.Duration(math.Ceil((1 - b.tokens) / r.PerSecond * float64(time.Second)))
	return Decision{RetryAfter: wait}
}
