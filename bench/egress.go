package bench

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

// samplePeriod is how often the run reads /metrics: fine enough for 1-second windows.
const samplePeriod = 200 * time.Millisecond

// sampler scrapes /metrics on a period from start until stop.
type sampler struct {
	cancel context.CancelFunc
	done   chan []snapshot
	errors atomic.Int64
}

// startSampler begins scraping at once. The caller must call stop.
func startSampler(ctx context.Context, a *api, period time.Duration) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel, done: make(chan []snapshot, 1)}
	go func() {
		var out []snapshot
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			if sn, err := a.scrape(ctx); err == nil {
				out = append(out, sn)
			} else if ctx.Err() == nil {
				s.errors.Add(1)
			}
			select {
			case <-ctx.Done():
				s.done <- out
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends the scraping and returns every snapshot taken, oldest first.
func (s *sampler) stop() []snapshot {
	s.cancel()
	return <-s.done
}

// Egress tolerance of the throttled scenario: the steady average within 2% of the cap, and no
// 1-second window above the cap by more than 2% plus one message (a window's edges can split
// a submit).
const (
	egressTolerance = 0.02
	egressSlack     = 1.0
	egressEdge      = 2 * time.Second // the ramp at each end, left out of the steady part
)

// Egress is one network's measured submit rate against its cap.
type Egress struct {
	Network     string  `json:"network"`
	Cap         float64 `json:"cap_per_s"`
	Messages    float64 `json:"messages"`      // submits started (tuma_link_submit_attempts_total Δ)
	ActiveS     float64 `json:"active_s"`      // from the first submit to the last
	SteadyS     float64 `json:"steady_s"`      // the part measured: active less 2 s at each end
	AvgPerS     float64 `json:"avg_per_s"`     // steady average
	AvgErrorPct float64 `json:"avg_error_pct"` // |avg − cap| / cap
	Max1s       float64 `json:"max_1s"`        // most in any 1-second window of the steady part
	Max1sAll    float64 `json:"max_1s_all"`    // … of the whole active time, ramp-up included
	Pass        bool    `json:"pass"`
	Note        string  `json:"note,omitempty"`
}

// measureEgress computes each capped network's egress from the snapshots.
func measureEgress(samples []snapshot, caps Caps) []Egress {
	var out []Egress
	for _, n := range carriers.Networks() {
		if caps[n] <= 0 {
			continue
		}
		ts := make([]time.Time, len(samples))
		counts := make([]float64, len(samples))
		for i, s := range samples {
			ts[i], counts[i] = s.at, s.submitted[n]
		}
		e := egressOf(ts, counts, caps[n])
		e.Network = n.String()
		out = append(out, e)
	}
	return out
}

// egressOf measures one counter sampled at ts against cap.
func egressOf(ts []time.Time, counts []float64, limit float64) Egress {
	e := Egress{Cap: limit}
	first, last := -1, -1
	for i := 1; i < len(counts); i++ {
		if counts[i] > counts[i-1] {
			if first < 0 {
				first = i - 1 // the submits began after this sample
			}
			last = i
		}
	}
	if first < 0 {
		e.Note = "no submits seen"
		return e
	}
	e.Messages = counts[last] - counts[first]
	e.ActiveS = ts[last].Sub(ts[first]).Seconds()
	e.Max1sAll = maxWindow(ts[first:last+1], counts[first:last+1])
	from, to := ts[first].Add(egressEdge), ts[last].Add(-egressEdge)
	i0, i1 := -1, -1
	for i := first; i <= last; i++ {
		if i0 < 0 && !ts[i].Before(from) {
			i0 = i
		}
		if !ts[i].After(to) {
			i1 = i
		}
	}
	if i0 < 0 || i1-i0 < 2 || ts[i1].Sub(ts[i0]) < egressEdge {
		e.Note = fmt.Sprintf("egress lasted %.1f s: too short for a steady part (run longer)", e.ActiveS)
		return e
	}
	e.SteadyS = ts[i1].Sub(ts[i0]).Seconds()
	e.AvgPerS = slope(ts[i0:i1+1], counts[i0:i1+1])
	e.AvgErrorPct = math.Abs(e.AvgPerS-limit) / limit * 100
	e.Max1s = maxWindow(ts[i0:i1+1], counts[i0:i1+1])
	e.Pass = e.AvgErrorPct <= egressTolerance*100 && e.Max1s <= limit*(1+egressTolerance)+egressSlack
	if !e.Pass {
		e.Note = "outside ±2% of the cap"
	}
	return e
}

// maxWindow is the most submits in about one second: for each sample, the increase to the
// first sample at least a second later (less a little scheduling jitter), as a rate over that
// window when it is longer than a second (a late sample must not count as a burst).
func maxWindow(ts []time.Time, counts []float64) float64 {
	const minSpan = time.Second - samplePeriod/10
	best := 0.0
	j := 0
	for i := range ts {
		for j < len(ts) && ts[j].Sub(ts[i]) < minSpan {
			j++
		}
		if j == len(ts) {
			break
		}
		span := ts[j].Sub(ts[i]).Seconds()
		best = max(best, (counts[j]-counts[i])/max(span, 1))
	}
	return best
}

// slope is the least-squares rate of counts over ts: every sample weighs in, so one scrape
// answered late (its time is only known to within the request) cannot tilt the average the
// way two end points alone would.
func slope(ts []time.Time, counts []float64) float64 {
	n := float64(len(ts))
	var sx, sy, sxx, sxy float64
	for i := range ts {
		x := ts[i].Sub(ts[0]).Seconds()
		sx, sy, sxx, sxy = sx+x, sy+counts[i], sxx+x*x, sxy+x*counts[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}
