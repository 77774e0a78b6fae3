package lru

import "testing"

func TestCacheDropsLeastRecentlyUsed(t *testing.T) {
	c := New[string, int](2)
	c.Add("a", 1)
	c.Add("b", 2)
	c.Get("a") // b is now the least recently used
	c.Add("c", 3)
	if _, ok := c.Get("b"); ok {
		t.Error("Get(b) found it; want it dropped as the least recently used")
	}
	for k, want := range map[string]int{"a": 1, "c": 3} {
		if v, ok := c.Get(k); !ok || v != want {
			t.Errorf("Get(%s) = %d, %v; want %d, true", k, v, ok, want)
		}
	}
	if c.Len() != 2 {
		t.Errorf("Len = %d; want 2", c.Len())
	}
	c.Add("a", 10) // an update is not an insert
	if v, _ := c.Get("a"); v != 10 || c.Len() != 2 {
		t.Errorf("after update Get(a) = %d, Len = %d; want 10, 2", v, c.Len())
	}
	if k, _, ok := c.Oldest(); !ok || k != "c" {
		t.Errorf("Oldest = %q, %v; want c", k, ok)
	}
	c.Remove("c")
	if _, ok := c.Get("c"); ok || c.Len() != 1 {
		t.Errorf("after Remove(c) Len = %d; want 1 and c gone", c.Len())
	}
}

func TestCacheUnbounded(t *testing.T) {
	c := New[int, int](0)
	for i := range 1000 {
		c.Add(i, i)
	}
	if c.Len() != 1000 {
		t.Errorf("Len = %d; want 1000 (max 0 means no bound)", c.Len())
	}
}
