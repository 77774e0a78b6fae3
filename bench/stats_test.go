package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestNearestRank(t *testing.T) {
	ten := make([]time.Duration, 10)
	for i := range ten {
		ten[i] = time.Duration(i + 1)
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{
		{0, 1}, {1, 1}, {10, 1}, {10.01, 2}, {50, 5}, {50.5, 6}, {90, 9}, {99, 10}, {99.9, 10}, {100, 10},
	} {
		if got := nearestRank(ten, tc.p); got != tc.want {
			t.Errorf("p%v of 1..10 = %v; want %v", tc.p, got, tc.want)
		}
	}
	if got := nearestRank(nil, 50); got != 0 {
		t.Errorf("p50 of nothing = %v", got)
	}
	if got := nearestRank([]time.Duration{7}, 99); got != 7 {
		t.Errorf("p99 of one value = %v", got)
	}
}

// TestNearestRankMillion checks exact ranks on a million shuffled samples, where rounding of
// p×n (99.9 × 1e6 is not exact in binary) would pick a neighbour.
func TestNearestRankMillion(t *testing.T) {
	const n = 1_000_000
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = time.Duration(i + 1) // the k-th smallest is k
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(n, func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
	l := summarise(ds)
	want := map[string][2]float64{
		"p50": {l.P50MS, 500_000}, "p90": {l.P90MS, 900_000}, "p99": {l.P99MS, 990_000},
		"p99.9": {l.P999MS, 999_000}, "max": {l.MaxMS, n}, "min": {l.MinMS, 1},
	}
	for name, g := range want {
		if got := g[0] * 1e6; math.Abs(got-g[1]) > 1e-3 { // ms → ns
			t.Errorf("%s = %v ns; want %v", name, got, g[1])
		}
	}
	if l.Count != n || math.Abs(l.MeanMS*1e6-500_000.5) > 1e-3 {
		t.Errorf("count %d mean %v", l.Count, l.MeanMS)
	}
	if !slices.IsSorted(ds) {
		t.Error("summarise must leave the samples sorted")
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{10, 1000, 11}, 11},
	} {
		in := slices.Clone(tc.in)
		if got := median(in); got != tc.want {
			t.Errorf("median(%v) = %v; want %v", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("median changed its input to %v", in)
		}
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing should be NaN")
	}
	if ratio(1, 0) != 0 || ratio(math.NaN(), 1) != 0 || ratio(6, 3) != 2 {
		t.Error("ratio")
	}
}
