package bench

import (
	"math"
	"testing"
	"time"
)

// series samples a submit counter every 200 ms (with a little jitter) over total, where
// count(t) gives the submits so far t into the run.
func series(total time.Duration, count func(t time.Duration) float64) ([]time.Time, []float64) {
	t0 := time.Unix(1000, 0)
	var ts []time.Time
	var cs []float64
	for i := 0; time.Duration(i)*samplePeriod <= total; i++ {
		at := time.Duration(i)*samplePeriod + time.Duration(i%3)*time.Millisecond
		ts = append(ts, t0.Add(at))
		cs = append(cs, count(at))
	}
	return ts, cs
}

// steady submits at rate from 1 s to 1 s + d, as whole messages.
func steady(rate float64, d time.Duration) func(time.Duration) float64 {
	return func(t time.Duration) float64 {
		t -= time.Second
		return math.Floor(rate * min(max(t, 0), d).Seconds())
	}
}

func TestEgressSteady(t *testing.T) {
	ts, cs := series(20*time.Second, steady(100, 16*time.Second))
	e := egressOf(ts, cs, 100)
	if !e.Pass || e.AvgErrorPct > 1 || e.Max1s > 102 || e.SteadyS < 11 || e.Messages != 1600 {
		t.Errorf("steady 100/s: %+v", e)
	}
}

func TestEgressSlowAndFastFail(t *testing.T) {
	ts, cs := series(20*time.Second, steady(96, 16*time.Second))
	if e := egressOf(ts, cs, 100); e.Pass || e.AvgErrorPct < 3 {
		t.Errorf("96/s against 100: %+v; want a fail", e)
	}
	ts, cs = series(20*time.Second, steady(104, 16*time.Second))
	if e := egressOf(ts, cs, 100); e.Pass {
		t.Errorf("104/s against 100: %+v; want a fail", e)
	}
}

// TestEgressBurst: the average is right but one second carries 20 extra submits (taken from
// the next second): only the window maximum catches it.
func TestEgressBurst(t *testing.T) {
	base := steady(50, 16*time.Second)
	ts, cs := series(20*time.Second, func(t time.Duration) float64 {
		n := base(t)
		if t >= 8*time.Second && t < 9*time.Second {
			n += 20
		} else if t >= 9*time.Second && t < 10*time.Second {
			n += 20 - math.Floor(20*(t-9*time.Second).Seconds())
		}
		return n
	})
	e := egressOf(ts, cs, 50)
	if e.Pass || e.AvgErrorPct > 1 || e.Max1s < 65 {
		t.Errorf("burst: %+v; want the average within 2%% and the max ≥ 65", e)
	}
}

// TestEgressRampExcluded: a start-up burst within the first 2 s is reported in the whole-run
// maximum but does not fail the steady part.
func TestEgressRampExcluded(t *testing.T) {
	base := steady(100, 16*time.Second)
	ts, cs := series(20*time.Second, func(t time.Duration) float64 {
		if t >= 1100*time.Millisecond { // 10 at once, 0.1 s into the egress
			return base(t) + 10
		}
		return base(t)
	})
	e := egressOf(ts, cs, 100)
	if !e.Pass || e.Max1sAll < 109 || e.Max1s > 101 {
		t.Errorf("ramp: %+v", e)
	}
}

func TestEgressTooShortOrIdle(t *testing.T) {
	ts, cs := series(6*time.Second, steady(100, 3*time.Second))
	if e := egressOf(ts, cs, 100); e.Pass || e.Note == "" {
		t.Errorf("3 s of egress: %+v; want a fail with a note", e)
	}
	ts, cs = series(6*time.Second, func(time.Duration) float64 { return 7 })
	if e := egressOf(ts, cs, 100); e.Pass || e.Note != "no submits seen" {
		t.Errorf("idle: %+v", e)
	}
	if e := egressOf(nil, nil, 100); e.Pass {
		t.Errorf("no samples: %+v", e)
	}
}
