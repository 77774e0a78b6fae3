package drill

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// depsTraffic is a steady stream of sends at a set rate, each with its own Idempotency-Key and
// retried until definite (load), whose answers are tallied per window of the drill (before,
// during and after an outage).
type depsTraffic struct {
	r       *runner
	ld      *load
	tenants []*tenant
	label   string
	size    int // recipients per send, spread over the networks

	mu       sync.Mutex
	interval time.Duration // between sends
	due      time.Time
	serial   int
	stopped  bool
	spans    []sendSpan

	window atomic.Pointer[answerTally]
	wg     sync.WaitGroup
}

// sendSpan is when a send started and how it ended.
type sendSpan struct {
	start time.Time
	o     outcome
}

func newDepsTraffic(r *runner, c *client, tenants []*tenant, label string, size int, perSecond float64) *depsTraffic {
	t := &depsTraffic{r: r, ld: newLoad(c, 3*time.Minute), tenants: tenants, label: label, size: size}
	t.setRate(perSecond)
	t.ld.onAttempt = func(rp reply) {
		if w := t.window.Load(); w != nil {
			w.add(rp)
		}
	}
	return t
}

// setRate changes how many sends per second start.
func (t *depsTraffic) setRate(perSecond float64) {
	t.mu.Lock()
	t.interval = time.Duration(float64(time.Second) / perSecond)
	t.mu.Unlock()
}

// watch tallies every answer from now on in w (the previous window stops counting).
func (t *depsTraffic) watch(w *answerTally) { t.window.Store(w) }

// start runs workers until stop. Workers stuck retrying (an outage) let the schedule slip
// rather than bursting to catch up when the outage ends.
func (t *depsTraffic) start(ctx context.Context, workers int) {
	for w := range workers {
		t.wg.Go(func() {
			for ctx.Err() == nil {
				s, ok := t.next(w)
				if !ok {
					return
				}
				start := time.Now()
				o := t.ld.do(ctx, s)
				t.mu.Lock()
				t.spans = append(t.spans, sendSpan{start: start, o: o})
				t.mu.Unlock()
			}
		})
	}
}

func (t *depsTraffic) next(w int) (send, bool) {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return send{}, false
	}
	now := time.Now()
	if t.due.Before(now.Add(-t.interval)) {
		t.due = now
	}
	due, i := t.due, t.serial
	t.due = t.due.Add(t.interval)
	t.serial++
	t.mu.Unlock()
	time.Sleep(time.Until(due))
	tn := t.tenants[i%len(t.tenants)]
	return send{t: tn, key: fmt.Sprintf("deps-%s-%s-%d", t.r.id, t.label, i), n: t.size,
		body: sendBody(i*t.size%900_000, t.size, "Drill: dependencies are being tested")}, true
}

// stop lets the sends under way finish (retrying until definite) and waits for them.
func (t *depsTraffic) stop() {
	t.mu.Lock()
	t.stopped = true
	t.mu.Unlock()
	t.wg.Wait()
}

// spansOf are the sends that started before end and ended after start.
func (t *depsTraffic) spansOf(start, end time.Time) []sendSpan {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []sendSpan
	for _, s := range t.spans {
		if s.start.Before(end) && s.o.at.After(start) {
			out = append(out, s)
		}
	}
	return out
}

// answerTally counts the answers of one window of the drill.
type answerTally struct {
	mu      sync.Mutex
	codes   map[int]int64 // status; 0 is no HTTP answer
	codes5  map[string]int64
	noRetry int64     // 429 and 503 without Retry-After
	firstOK time.Time // the first 2xx answered in the window
	lat     []time.Duration
}

func newAnswerTally() *answerTally {
	return &answerTally{codes: map[int]int64{}, codes5: map[string]int64{}}
}

func (w *answerTally) add(rp reply) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.codes[rp.status]++
	switch {
	case rp.status >= 200 && rp.status < 300:
		if w.firstOK.IsZero() {
			w.firstOK = time.Now()
		}
		w.lat = append(w.lat, rp.took)
	case rp.status >= 500:
		w.codes5[strconv.Itoa(rp.status)+" "+firstOf(problemCode(rp.body), "?")]++
	}
	if (rp.status == 429 || rp.status == 503) && rp.header.Get("Retry-After") == "" {
		w.noRetry++
	}
}

// count is the answers with a status in [lo, hi].
func (w *answerTally) count(lo, hi int) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n int64
	for k, v := range w.codes {
		if k >= lo && k <= hi {
			n += v
		}
	}
	return n
}

func (w *answerTally) total() int64 { return w.count(math.MinInt, math.MaxInt) }

func (w *answerTally) firstSuccess() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstOK
}

func (w *answerTally) missingRetryAfter() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.noRetry
}

// p99 is the 99th percentile of the 2xx answers' latency.
func (w *answerTally) p99() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return percentile(slices.Clone(w.lat), 99)
}

// String renders the statuses, e.g. "202×120 503 unavailable×80 no answer×2".
func (w *answerTally) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	keys := make([]int, 0, len(w.codes))
	for k := range w.codes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case k == 0:
			parts = append(parts, fmt.Sprintf("no answer×%s", count(w.codes[k])))
		case k >= 500:
		default:
			parts = append(parts, fmt.Sprintf("%d×%s", k, count(w.codes[k])))
		}
	}
	fives := make([]string, 0, len(w.codes5))
	for k := range w.codes5 {
		fives = append(fives, k)
	}
	slices.Sort(fives)
	for _, k := range fives {
		parts = append(parts, fmt.Sprintf("%s×%s", k, count(w.codes5[k])))
	}
	if len(parts) == 0 {
		return "no answers"
	}
	return strings.Join(parts, " ")
}
