package redis_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tuma-sms/tuma/persistence/redis"
	"github.com/tuma-sms/tuma/persistence/redis/redistest"
)

// TestLeasedBucketHoldsItsRate: a busy bucket (200/s, so leases of up to 10 tokens) shared by
// two nodes lets through no more than its burst, its refill and one lease per node, and
// asks Redis for a small fraction of the requests.
func TestLeasedBucketHoldsItsRate(t *testing.T) {
	url, prefix := redistest.URL(t), redistest.Prefix()
	ctx := context.Background()
	nodes := []*redis.Limiter{
		redis.NewLimiter(newClient(t, url, prefix), 0),
		redis.NewLimiter(newClient(t, url, prefix), 0),
	}
	r := redis.Rate{PerSecond: 200, Burst: 400}
	const lease, requests = 10, 4000
	var allowed, refusedWithoutRetry atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			l := nodes[g%2]
			for range requests / 8 {
				d := l.Allow(ctx, "acct:busy", r)
				switch {
				case d.Allowed:
					allowed.Add(1)
				case d.RetryAfter <= 0 || d.RetryAfter > 5*time.Millisecond:
					refusedWithoutRetry.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	most := int64(r.Burst) + int64(r.PerSecond*elapsed.Seconds()) + 1 + 2*lease
	if a := allowed.Load(); a > most || a < int64(r.Burst)-4*lease {
		t.Fatalf("allowed %d of %d in %v; want between %d and %d", a, requests, elapsed, r.Burst-4*lease, most)
	}
	if n := refusedWithoutRetry.Load(); n > 0 {
		t.Errorf("%d refusals without a Retry-After in (0, 5ms] (one token at 200/s)", n)
	}
	if calls := nodes[0].RemoteCalls() + nodes[1].RemoteCalls(); calls > requests/4 {
		t.Errorf("asked Redis %d times for %d requests; want leases to answer most of them", calls, requests)
	}
}

// TestRefusedBucketAnswersLocally: once Redis has said the bucket is empty, the node refuses
// until the next token is due without asking again (a client hammering past its limit costs
// no round trips), then asks again.
func TestRefusedBucketAnswersLocally(t *testing.T) {
	url, prefix := redistest.URL(t), redistest.Prefix()
	ctx := context.Background()
	l := redis.NewLimiter(newClient(t, url, prefix), 0)
	r := redis.Rate{PerSecond: 40, Burst: 8} // leases of 2, one token every 25 ms
	var d redis.Decision
	var refusedAt time.Time // before the refusing call: the node's window starts no earlier
	for i := 0; ; i++ {
		refusedAt = time.Now()
		if d = l.Allow(ctx, "acct:hammer", r); !d.Allowed {
			break
		}
		if i > 100 {
			t.Fatal("a burst of 8 at 40/s allowed 100 requests in a row")
		}
	}
	if d.RetryAfter <= 0 || d.RetryAfter > 25*time.Millisecond {
		t.Fatalf("RetryAfter = %v; want (0, 25ms]", d.RetryAfter)
	}
	calls := l.RemoteCalls()
	n := 0
	for time.Since(refusedAt) < d.RetryAfter/3 {
		if l.Allow(ctx, "acct:hammer", r).Allowed {
			t.Fatal("allowed while the bucket was known empty")
		}
		n++
	}
	if got := l.RemoteCalls(); got != calls {
		t.Fatalf("asked Redis %d times during %d refusals inside the retry window; want 0", got-calls, n)
	}
	eventually(t, "a token after the retry window", func() bool { return l.Allow(ctx, "acct:hammer", r).Allowed })
	if l.RemoteCalls() == calls {
		t.Fatal("allowed again without asking Redis")
	}
}
