package actors

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The set answers as a plain map would, through adds, removals and folds, for lookups of
// every size (the radix sort takes over from 256).
func TestSuppressedSetAgreesWithAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	want := map[uint32]bool{}
	var base []uint32
	for range 50_000 {
		n := 700_000_000 + r.Uint32N(200_000)
		want[n] = true
		base = append(base, n)
	}
	slices.Sort(base)
	var s suppressedSet
	s.reset(slices.Compact(base))
	for round := range 40 {
		for range 300 { // changes, enough to fold now and then
			n := 700_000_000 + r.Uint32N(200_000)
			on := r.IntN(2) == 0
			s.set(n, on)
			want[n] = on
		}
		size := []int{0, 1, 7, 255, 256, 1000, 10_000}[round%7]
		q := make([]uint32, size)
		for i := range q {
			q[i] = 700_000_000 + r.Uint32N(200_000)
		}
		hits := s.hits(slices.Clone(q))
		for _, n := range q {
			_, got := hits[n]
			if got != want[n] || s.has(n) != want[n] {
				t.Fatalf("round %d: %d suppressed = %v (has %v); want %v", round, n, got, s.has(n), want[n])
			}
		}
	}
}

func TestRadixSortSorts(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 255, 256, 257, 10_000} {
		a := make([]uint32, n)
		for i := range a {
			a[i] = r.Uint32()
		}
		want := slices.Sorted(slices.Values(a))
		radixSort(a)
		if !slices.Equal(a, want) {
			t.Fatalf("%d numbers not sorted", n)
		}
	}
}
