package actors

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tuma-sms/tuma/persistence"
)

// BenchmarkUnsuppressed10kOf1M is what leaving suppressed numbers out costs a 10,000-recipient
// send on an account with a million of them (none among the recipients: every lookup misses).
func BenchmarkUnsuppressed10kOf1M(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	list := make([]uint32, 1_000_000)
	for i := range list {
		list[i] = 700_000_000 + r.Uint32N(100_000_000)
	}
	slices.Sort(list)
	list = slices.Compact(list)
	rs := make([]persistence.Recipient, 0, 10_000)
	for len(rs) < 10_000 {
		if n := 700_000_000 + r.Uint32N(100_000_000); !slices.Contains(list[:0], n) {
			if _, found := slices.BinarySearch(list, n); !found {
				rs = append(rs, persistence.Recipient{NSN: n})
			}
		}
	}
	t := &tenantActor{}
	t.suppressed.reset(list)
	b.ReportAllocs()
	for b.Loop() {
		if _, n := t.unsuppressed(rs); n != 0 {
			b.Fatal(n)
		}
	}
}
