package bench

import (
	"math"
	"slices"
	"time"
)

// nearestRank is the p-th percentile (0 < p ≤ 100) of sorted by the nearest-rank method: the
// smallest value with at least p% of the values at or below it. It is always a measured
// value, exact for any number of samples. p ≤ 0 gives the minimum; no values give 0.
func nearestRank(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// The epsilon keeps p×n that is a whole number in exact arithmetic from rounding up
	// (99.9 is not exact in binary).
	rank := int(math.Ceil(p/100*float64(n) - 1e-9))
	return sorted[min(max(rank, 1), n)-1]
}

// Latency summarises a set of request latencies, in milliseconds.
type Latency struct {
	Count  int     `json:"count"`
	MinMS  float64 `json:"min_ms"`
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms"`
	P90MS  float64 `json:"p90_ms"`
	P99MS  float64 `json:"p99_ms"`
	P999MS float64 `json:"p999_ms"`
	MaxMS  float64 `json:"max_ms"`
}

// summarise sorts ds in place and summarises it.
func summarise(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return Latency{
		Count:  len(ds),
		MinMS:  ms(ds[0]),
		MeanMS: ms(sum) / float64(len(ds)),
		P50MS:  ms(nearestRank(ds, 50)),
		P90MS:  ms(nearestRank(ds, 90)),
		P99MS:  ms(nearestRank(ds, 99)),
		P999MS: ms(nearestRank(ds, 99.9)),
		MaxMS:  ms(ds[len(ds)-1]),
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// median of xs (the mean of the middle two for an even count); NaN for none. xs is not changed.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ratio is a/b, or 0 when b is 0 (so no figure is ever NaN or infinite).
func ratio(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return 0
	}
	return a / b
}
