package redis

import (
	"context"
	"encoding/hex"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// tombstone marks an API key hash that must not authenticate (rotated, or never existed).
// Fills use SET NX, so a slow reader can never overwrite a tombstone with a stale mapping.
const tombstone = "!"

// localHold is how long a value this node just published overrides its own client-side
// cache: Redis pushes the invalidation after the write's reply, so for a few milliseconds the
// local cache can still hold the old value. Short, because another node may change it again.
const localHold = 2 * time.Second

// Principals caches who an API key belongs to and whether an account may use the API.
// Lookups go through rueidis client-side caching, so a warm lookup never leaves the process;
// Redis pushes an invalidation to every node when a value changes.
type Principals struct {
	c        *Client
	ttl      time.Duration
	negTTL   time.Duration
	mu       sync.Mutex
	revoked  map[string]time.Time // key hash → until; a revoked key never comes back, so hold it a full TTL
	held     map[string]held      // values this node just published (see localHold)
	pending  map[string]string    // writes that failed while Redis was down, replayed on recovery
	lastTidy time.Time

	lookups sync.Map // "k"+hash or "a"+account id → *lookup, so a warm lookup builds nothing
	nLookup atomic.Int64
}

// lookup is a cached GET, built once: formatting the key and hashing its slot were a fifth of
// a cached lookup. The command is pinned, so rueidis lets it be sent again and again.
type lookup struct {
	key string
	cmd rueidis.Cacheable
}

// maxLookups bounds the built lookups (one per API key and account in use); past it they
// are forgotten and built again as needed.
const maxLookups = 100_000

func (p *Principals) lookupFor(rc rueidis.Client, id string, key func() string) *lookup {
	if l, ok := p.lookups.Load(id); ok {
		return l.(*lookup)
	}
	k := key()
	l := &lookup{key: k, cmd: rc.B().Get().Key(k).Cache().Pin()}
	if p.nLookup.Add(1) > maxLookups {
		p.lookups.Clear()
		p.nLookup.Store(1)
	}
	p.lookups.Store(id, l)
	return l
}

// NewPrincipals returns a cache whose entries live ttl.
func NewPrincipals(c *Client, ttl time.Duration) *Principals {
	p := &Principals{c: c, ttl: ttl, negTTL: time.Minute, revoked: map[string]time.Time{}, held: map[string]held{},
		pending: map[string]string{}}
	c.OnRecover(p.replay)
	return p
}

func (p *Principals) keyKey(hash []byte) string { return p.c.Key("key", hex.EncodeToString(hash)) }

// acctKey holds "status:token version"; named apart from the status-only values of older
// releases, which a rolling upgrade may still find in Redis.
func (p *Principals) acctKey(id string) string { return p.c.Key("access", id) }

// KeyAccount returns the account id for an API key hash. hit is false when the cache cannot
// answer (miss, Redis down) and the caller must ask the database; found is false for a key
// known not to authenticate.
func (p *Principals) KeyAccount(ctx context.Context, hash []byte) (id string, found, hit bool) {
	rc := p.live()
	if rc == nil {
		return "", false, false
	}
	l := p.lookupFor(rc, "k"+string(hash), func() string { return p.keyKey(hash) })
	if p.isRevoked(l.key) {
		return "", false, false
	}
	v, ok := p.get(ctx, rc, l.cmd)
	if !ok {
		return "", false, false
	}
	if v == tombstone {
		return "", false, true
	}
	return v, true, true
}

// FillKey records the database's answer for a key hash (accountID "" = no such live key).
func (p *Principals) FillKey(ctx context.Context, hash []byte, accountID string) {
	if accountID == "" {
		p.setNX(ctx, p.keyKey(hash), tombstone, p.negTTL)
		return
	}
	p.setNX(ctx, p.keyKey(hash), accountID, p.ttl)
}

// RevokeKey makes a key hash stop authenticating on every node at once.
func (p *Principals) RevokeKey(ctx context.Context, hash []byte) {
	k := p.keyKey(hash)
	p.mu.Lock()
	p.revoked[k] = time.Now().Add(p.ttl)
	p.mu.Unlock()
	p.set(ctx, k, tombstone, p.ttl)
}

// AccountAccess returns the cached status of an account and the version its access tokens
// must carry (bumped when the password changes), so a bearer token is checked without a
// database query. hit is false when the caller must ask the database.
func (p *Principals) AccountAccess(ctx context.Context, accountID string) (status string, tokenVersion int64, hit bool) {
	rc := p.live()
	if rc == nil {
		return "", 0, false
	}
	l := p.lookupFor(rc, "a"+accountID, func() string { return p.acctKey(accountID) })
	v, ok := p.heldValue(l.key)
	if !ok {
		if v, ok = p.get(ctx, rc, l.cmd); !ok {
			return "", 0, false
		}
	}
	return decodeAccess(v)
}

// FillAccountAccess records the database's answer for an account, unless a newer one is cached.
func (p *Principals) FillAccountAccess(ctx context.Context, accountID, status string, tokenVersion int64) {
	p.setNX(ctx, p.acctKey(accountID), encodeAccess(status, tokenVersion), p.ttl)
}

// SetAccountAccess publishes a change (suspend, reactivate, a new password) to every node.
func (p *Principals) SetAccountAccess(ctx context.Context, accountID, status string, tokenVersion int64) {
	k, v := p.acctKey(accountID), encodeAccess(status, tokenVersion)
	p.mu.Lock()
	p.held[k] = held{val: v, until: time.Now().Add(localHold)}
	p.mu.Unlock()
	p.set(ctx, k, v, p.ttl)
}

// encodeAccess writes "status:version"; anything else read back is a miss, so a value of
// another format (an older release's) is simply asked for again.
func encodeAccess(status string, tokenVersion int64) string {
	return status + ":" + strconv.FormatInt(tokenVersion, 10)
}

func decodeAccess(v string) (status string, tokenVersion int64, ok bool) {
	status, ver, found := strings.Cut(v, ":")
	if !found || status == "" {
		return "", 0, false
	}
	n, err := strconv.ParseInt(ver, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return status, n, true
}

type held struct {
	val   string
	until time.Time
}

func (p *Principals) heldValue(key string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.held) == 0 {
		return "", false
	}
	h, ok := p.held[key]
	if !ok {
		return "", false
	}
	if time.Now().After(h.until) {
		delete(p.held, key)
		return "", false
	}
	return h.val, true
}

// get reads through client-side caching. It takes no timer of its own: a hit never leaves
// the process, and a miss is bounded by the caller's deadline and by rueidis dropping a dead
// connection (ConnWriteTimeout), after which the client is marked down and skipped.
func (p *Principals) get(ctx context.Context, rc rueidis.Client, cmd rueidis.Cacheable) (string, bool) {
	v, err := rc.DoCache(ctx, cmd, p.ttl).ToString()
	if err != nil {
		p.c.failed(err)
		return "", false
	}
	return v, true
}

// live is the Redis client while Redis is up, else nil (the caller asks the database).
func (p *Principals) live() rueidis.Client {
	if !p.c.up.Load() {
		return nil
	}
	return p.c.conn()
}

func (p *Principals) setNX(ctx context.Context, key, val string, ttl time.Duration) {
	rc, cctx, cancel, ok := p.c.do(ctx)
	if !ok {
		return // a fill is only an optimisation
	}
	defer cancel()
	err := rc.Do(cctx, rc.B().Set().Key(key).Value(val).Nx().Ex(ttl).Build()).Error()
	p.c.failed(err)
}

// set writes an authoritative change; if Redis cannot take it now it is kept and replayed,
// so a revocation made during an outage still reaches every node's cache.
func (p *Principals) set(ctx context.Context, key, val string, ttl time.Duration) {
	rc, cctx, cancel, ok := p.c.do(ctx)
	if ok {
		err := rc.Do(cctx, rc.B().Set().Key(key).Value(val).Ex(ttl).Build()).Error()
		cancel()
		if err == nil {
			return
		}
		p.c.failed(err)
	}
	p.mu.Lock()
	p.pending[key] = val
	p.mu.Unlock()
}

func (p *Principals) replay(rc rueidis.Client) {
	p.mu.Lock()
	pending := p.pending
	p.pending = map[string]string{}
	p.mu.Unlock()
	failed := 0
	for k, v := range pending {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := rc.Do(ctx, rc.B().Set().Key(k).Value(v).Ex(p.ttl).Build()).Error()
		cancel()
		if err != nil {
			failed++
			p.mu.Lock()
			if _, newer := p.pending[k]; !newer {
				p.pending[k] = v
			}
			p.mu.Unlock()
		}
	}
	if len(pending) > 0 {
		p.c.log.Info("replayed principal cache writes after redis recovered",
			slog.Int("writes", len(pending)), slog.Int("failed", failed))
	}
}

func (p *Principals) isRevoked(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.revoked) == 0 {
		return false
	}
	now := time.Now()
	if now.Sub(p.lastTidy) > time.Minute {
		for k, until := range p.revoked {
			if now.After(until) {
				delete(p.revoked, k)
			}
		}
		p.lastTidy = now
	}
	until, ok := p.revoked[key]
	return ok && now.Before(until)
}
