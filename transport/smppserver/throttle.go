package smppserver

import (
	"sync"
	"time"

	"github.com/google/uuid"
)

// maxIdleBuckets is the buckets kept before the full ones (accounts idle a second or more)
// are forgotten: a full bucket and no bucket allow the same.
const maxIdleBuckets = 1024

// throttle is a token bucket per account, shared by all its binds on this node: rate submits
// a second, a burst of one second's worth. A zero rate allows everything. Buckets are not
// shared across nodes.
type throttle struct {
	rate float64

	mu      sync.Mutex
	buckets map[uuid.UUID]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newThrottle(rate int) *throttle {
	return &throttle{rate: float64(rate), buckets: map[uuid.UUID]*bucket{}}
}

// allow takes a token of account's bucket at now, if it has one.
func (t *throttle) allow(account uuid.UUID, now time.Time) bool {
	if t.rate <= 0 {
		return true
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
