package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
)

// EndToEnd is how long messages took from the send request to delivery. The tool's figures
// come from a sample of delivered messages read back through the API (the time its send
// started, to the message's delivered_at); the server's from the delta of its
// tuma_messages_end_to_end_seconds histogram (acceptance to delivery, interpolated within
// buckets as Prometheus's histogram_quantile does).
type EndToEnd struct {
	Sampled      int     `json:"sampled"` // delivered messages read back
	P50MS        float64 `json:"p50_ms"`
	P99MS        float64 `json:"p99_ms"`
	ServerCount  float64 `json:"server_count"` // messages delivered in the histogram's delta
	ServerP50MS  float64 `json:"server_p50_ms"`
	ServerP99MS  float64 `json:"server_p99_ms"`
	SampleErrors int     `json:"sample_errors"`
}

// e2eSample is how many delivered messages the tool reads back: enough for a p99 within a
// few percent, few enough to leave the server alone (pages of 100).
const e2eSample = 2000

// jobStart is when the tool began the send that created a job.
type jobStart struct {
	id string
	at time.Time
}

// apiMessage is what the sample needs of a message object.
type apiMessage struct {
	JobID       string     `json:"job_id"`
	Status      string     `json:"status"`
	DeliveredAt *time.Time `json:"delivered_at"`
}

// sampleEndToEnd reads pages of each tenant's messages, spread over its history, and returns
// send-to-delivery times of the delivered ones whose job the tool started.
func sampleEndToEnd(ctx context.Context, a *api, tenants []*tenant, starts []jobStart) ([]time.Duration, int) {
	began := make(map[string]time.Time, len(starts))
	for _, s := range starts {
		began[s.id] = s.at
	}
	pagesEach := max(1, int(math.Ceil(float64(e2eSample)/100/float64(max(1, len(tenants))))))
	var (
		mu   sync.Mutex
		out  []time.Duration
		errs int
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, drainPollers)
	for _, t := range tenants {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ds, n := sampleTenant(ctx, a, t, pagesEach, began)
			mu.Lock()
			out, errs = append(out, ds...), errs+n
			mu.Unlock()
		})
	}
	wg.Wait()
	return out, errs
}

// sampleTenant reads up to pages pages of one tenant's messages: the first (newest), and
// others spread evenly back to the oldest.
func sampleTenant(ctx context.Context, a *api, t *tenant, pages int, began map[string]time.Time) ([]time.Duration, int) {
	var out []time.Duration
	errs := 0
	read := func(page int) (total int) {
		c := a.do(ctx, "GET", "/sms/messages?page_size=100&page="+strconv.Itoa(page), nil, "X-API-Key", t.key)
		var env struct {
			Data  []apiMessage `json:"data"`
			Pages int          `json:"pages"`
		}
		if err := c.expect(200); err != nil || json.Unmarshal(c.body, &env) != nil {
			errs++
			return 0
		}
		for _, m := range env.Data {
			start, ok := began[m.JobID]
			if m.Status == "delivered" && m.DeliveredAt != nil && ok {
				out = append(out, max(0, m.DeliveredAt.Sub(start)))
			}
		}
		return env.Pages
	}
	total := read(1)
	for i := 1; i < pages && total > 1; i++ {
		read(1 + i*(total-1)/max(1, pages-1))
	}
	return out, errs
}

// bucket is one cumulative histogram bucket: count of observations ≤ le.
type bucket struct {
	le    float64
	count float64
}

// histogramQuantile estimates the q-th quantile (0..1) of cumulative buckets, interpolating
// linearly within the bucket it falls in (Prometheus's histogram_quantile). Past the largest
// finite bound it answers that bound.
func histogramQuantile(bs []bucket, q float64) float64 {
	bs = slices.Clone(bs)
	slices.SortFunc(bs, func(a, b bucket) int { return cmpFloat(a.le, b.le) })
	if len(bs) == 0 || bs[len(bs)-1].count <= 0 {
		return 0
	}
	rank := q * bs[len(bs)-1].count
	prevLE, prevCount := 0.0, 0.0
	for _, b := range bs {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return prevLE
			}
			if b.count == prevCount {
				return b.le
			}
			return prevLE + (b.le-prevLE)*(rank-prevCount)/(b.count-prevCount)
		}
		prevLE, prevCount = b.le, b.count
	}
	return prevLE
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// bucketDelta is the buckets of final minus those of base (the run's own observations).
func bucketDelta(base, final map[float64]float64) []bucket {
	out := make([]bucket, 0, len(final))
	for le, c := range final {
		out = append(out, bucket{le: le, count: c - base[le]})
	}
	return out
}

// newEndToEnd summarises the sample and the server's histogram delta.
func newEndToEnd(sample []time.Duration, errs int, base, final snapshot) EndToEnd {
	e := EndToEnd{Sampled: len(sample), SampleErrors: errs}
	if len(sample) > 0 {
		slices.Sort(sample)
		e.P50MS, e.P99MS = ms(nearestRank(sample, 50)), ms(nearestRank(sample, 99))
	}
	bs := bucketDelta(base.e2e, final.e2e)
	for _, b := range bs {
		if math.IsInf(b.le, 1) {
			e.ServerCount = b.count
		}
	}
	e.ServerP50MS = 1000 * histogramQuantile(bs, 0.5)
	e.ServerP99MS = 1000 * histogramQuantile(bs, 0.99)
	return e
}

func (e EndToEnd) String() string {
	return fmt.Sprintf("p50 %s · p99 %s (%d delivered messages read back) · server p50 %s · p99 %s",
		msStr(e.P50MS), msStr(e.P99MS), e.Sampled, msStr(e.ServerP50MS), msStr(e.ServerP99MS))
}
