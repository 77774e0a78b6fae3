package redis

import (
	"sync"
	"time"

	"github.com/tuma-sms/tuma/persistence/lru"
)

// keyed is per-key state kept in process (rate-limit buckets and leases), bounded because
// every key is outside input (client IPs, emails), least recently used dropped first, and
// rid of idle entries once a minute.
type keyed[V any] struct {
	mu       sync.Mutex
	m        *lru.Cache[string, V]
	lastTidy time.Time
	idle     func(v V, now time.Time) bool // the entry carries no state worth keeping
}

// newKeyed holds at most max keys (0: no cap).
func newKeyed[V any](max int, idle func(V, time.Time) bool) *keyed[V] {
	return &keyed[V]{m: lru.New[string, V](max), idle: idle}
}

// with runs fn on key's entry, made by fresh when there is none, under the map's lock.
func (k *keyed[V]) with(key string, now time.Time, fresh func() V, fn func(V)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	fn(k.getLocked(key, now, fresh))
}

// get returns key's entry, made by fresh when there is none.
func (k *keyed[V]) get(key string, now time.Time, fresh func() V) V {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.getLocked(key, now, fresh)
}

func (k *keyed[V]) getLocked(key string, now time.Time, fresh func() V) V {
	if now.Sub(k.lastTidy) > time.Minute {
		// The oldest are at the back.
		for key, v, ok := k.m.Oldest(); ok && k.idle(v, now); key, v, ok = k.m.Oldest() {
			k.m.Remove(key)
		}
		k.lastTidy = now
	}
	v, ok := k.m.Get(key)
	if !ok {
		v = fresh()
		k.m.Add(key, v)
	}
	return v
}

// len is how many entries are held.
func (k *keyed[V]) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.m.Len()
}
