package bench

import (
	"math"
	"testing"
	"time"
)

func TestHistogramQuantile(t *testing.T) {
	inf := math.Inf(1)
	// 100 observations: 50 in (0, 0.1], 40 in (0.1, 0.5], 9 in (0.5, 1], 1 above 1.
	bs := []bucket{{1, 99}, {0.1, 50}, {inf, 100}, {0.5, 90}}
	cases := []struct{ q, want float64 }{
		{0.5, 0.1},                          // the 50th falls on the first bound
		{0.25, 0.05},                        // halfway into the first bucket
		{0.7, 0.1 + 0.4*(70.0-50)/(90-50)},  // interpolated in the second
		{0.99, 1},                           // the 99th on the last finite bound
		{0.999, 1},                          // in +Inf: the largest finite bound
		{0.95, 0.5 + 0.5*(95.0-90)/(99-90)}, // in the third
	}
	for _, c := range cases {
		if got := histogramQuantile(bs, c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("q%v = %v; want %v", c.q, got, c.want)
		}
	}
	if got := histogramQuantile(nil, 0.5); got != 0 {
		t.Errorf("no buckets: %v", got)
	}
	if got := histogramQuantile([]bucket{{0.1, 0}, {inf, 0}}, 0.5); got != 0 {
		t.Errorf("no observations: %v", got)
	}
}

func TestEndToEndFromSampleAndServerDelta(t *testing.T) {
	inf := math.Inf(1)
	base := snapshot{e2e: map[float64]float64{0.1: 10, 1: 10, inf: 10}}
	final := snapshot{e2e: map[float64]float64{0.1: 60, 1: 110, inf: 110}}
	var sample []time.Duration
	for i := range 100 {
		sample = append(sample, time.Duration(i+1)*time.Millisecond)
	}
	e := newEndToEnd(sample, 1, base, final)
	if e.Sampled != 100 || e.P50MS != 50 || e.P99MS != 99 || e.SampleErrors != 1 {
		t.Errorf("sample figures %+v", e)
	}
	// The run's own 100 observations: 50 by 0.1 s, all by 1 s.
	if e.ServerCount != 100 || math.Abs(e.ServerP50MS-100) > 1e-6 || math.Abs(e.ServerP99MS-(100+900*49.0/50)) > 1e-6 {
		t.Errorf("server figures %+v", e)
	}
}
