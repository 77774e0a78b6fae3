// Package lru is a bounded map that forgets its least recently used entries: the in-process
// caches and fallbacks that outside input can grow (rate-limit buckets, unknown API keys)
// must never grow without bound.
package lru

import "container/list"

// Cache maps keys to values, holding at most its capacity of them. It is not safe for
// concurrent use: callers hold their own lock, usually around more than one call.
type Cache[K comparable, V any] struct {
	max   int
	order *list.List // front: most recently used
	items map[K]*list.Element
}

type entry[K comparable, V any] struct {
	key K
	val V
}

// New returns a cache of at most max entries; max 0 means no bound.
func New[K comparable, V any](max int) *Cache[K, V] {
	return &Cache[K, V]{max: max, order: list.New(), items: map[K]*list.Element{}}
}

// Get returns the value of key and marks it used.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	e, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*entry[K, V]).val, true
}

// Add sets key to val, marks it used, and drops the least recently used entry beyond capacity.
func (c *Cache[K, V]) Add(key K, val V) {
	if e, ok := c.items[key]; ok {
		e.Value.(*entry[K, V]).val = val
		c.order.MoveToFront(e)
		return
	}
	c.items[key] = c.order.PushFront(&entry[K, V]{key: key, val: val})
	if c.max > 0 && c.order.Len() > c.max {
		c.Remove(c.order.Back().Value.(*entry[K, V]).key)
	}
}

// Remove forgets key.
func (c *Cache[K, V]) Remove(key K) {
	if e, ok := c.items[key]; ok {
		c.order.Remove(e)
		delete(c.items, key)
	}
}

// Oldest returns the least recently used entry without marking it used.
func (c *Cache[K, V]) Oldest() (K, V, bool) {
	e := c.order.Back()
	if e == nil {
		var (
			k K
			v V
		)
		return k, v, false
	}
	en := e.Value.(*entry[K, V])
	return en.key, en.val, true
}

// Len is the number of entries held.
func (c *Cache[K, V]) Len() int { return c.order.Len() }
