package redis

import (
	"context"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
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
// bucket correctly. It grants up to ARGV[3] whole tokens, as many as the bucket holds, and
// returns {granted, retry_ms}: retry_ms, when nothing was granted, is when one token will be.
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
local granted, retry = math.min(math.floor(tokens), cost), 0
if granted >= 1 then
  tokens = tokens - granted
else
  granted = 0
  retry = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {granted, retry}
`

// Limiter enforces token buckets shared by every node through Redis, and falls back to
// per-process buckets while Redis is unavailable (each node then enforces the rate alone).
// Busy buckets are served from leases (lease.go) rather than by a round trip per request.
type Limiter struct {
	c      *Client
	script *rueidis.Lua
	local  localBuckets
	leases *keyed[*lease] // dropping one only loses its tokens
	calls  atomic.Int64
}

// NewLimiter returns a limiter on c. localKeys caps the per-process buckets kept while Redis
// is down (0: no cap): every key is outside input (client IPs, emails), so without a cap an
// outage would let anyone grow this map at will.
func NewLimiter(c *Client, localKeys int) *Limiter {
	return &Limiter{c: c, script: rueidis.NewLuaScript(tokenBucket), local: newLocalBuckets(localKeys), leases: newKeyed(localKeys, (*lease).idle)}
}

// Allow takes one token from the bucket named key.
func (l *Limiter) Allow(ctx context.Context, key string, r Rate) Decision {
	if r.PerSecond <= 0 || r.Burst <= 0 {
		return Decision{Allowed: true}
	}
	k := l.c.Key("rl", key)
	if leaseCap(r) > 1 {
		return l.leased(ctx, k, r)
	}
	if granted, retry, ok := l.take(ctx, k, r, 1); ok {
		return Decision{Allowed: granted == 1, RetryAfter: retry}
	}
	return l.local.allow(k, r, time.Now())
}

// take asks Redis for up to n tokens of bucket k; ok is false when Redis did not answer.
func (l *Limiter) take(ctx context.Context, k string, r Rate, n int) (granted int, retry time.Duration, ok bool) {
	rc, cctx, cancel, up := l.c.do(ctx)
	if !up {
		return 0, 0, false
	}
	l.calls.Add(1)
	res, err := l.script.Exec(cctx, rc, []string{k}, []string{
		strconv.FormatFloat(r.PerSecond, 'f', -1, 64), strconv.Itoa(r.Burst), strconv.Itoa(n),
	}).AsIntSlice()
	cancel()
	if err != nil || len(res) != 2 {
		l.c.failed(err)
		return 0, 0, false
	}
	return int(res[0]), time.Duration(res[1]) * time.Millisecond, true
}

// RemoteCalls is how many times the limiter has asked Redis (for tests and debugging).
func (l *Limiter) RemoteCalls() int64 { return l.calls.Load() }

// LocalBuckets is how many per-process fallback buckets are held (for tests and debugging).
func (l *Limiter) LocalBuckets() int { return l.local.len() }

type bucket struct {
	tokens float64
	at     time.Time
}

// localBuckets are the per-process fallback buckets. A dropped bucket starts full again,
// which only ever errs towards allowing.
type localBuckets struct{ *keyed[*bucket] }

func newLocalBuckets(max int) localBuckets {
	// A bucket idle long enough to be full again carries no state worth keeping.
	return localBuckets{newKeyed(max, func(b *bucket, now time.Time) bool { return now.Sub(b.at) > time.Hour })}
}

func (lb localBuckets) allow(key string, r Rate, now time.Time) (d Decision) {
	fresh := func() *bucket { return &bucket{tokens: float64(r.Burst), at: now} }
	lb.with(key, now, fresh, func(b *bucket) {
		if el := now.Sub(b.at).Seconds(); el > 0 {
			b.tokens = math.Min(float64(r.Burst), b.tokens+el*r.PerSecond)
		}
		b.at = now
		if b.tokens >= 1 {
			b.tokens--
			d = Decision{Allowed: true}
			return
		}
		d = Decision{RetryAfter: time.Duration(math.Ceil((1 - b.tokens) / r.PerSecond * float64(time.Second)))}
	})
	return d
}
