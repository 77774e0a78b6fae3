package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tuma-sms/tuma/carriers"
)

// benchMessage is one GSM-7 part even with the company prefix the shared sender adds.
const benchMessage = "Your order has shipped. Track it at example.com/t/123"

// numberWidth is the width of a pooled number in JSON with its comma: "0712345678",
const numberWidth = 13

// prefixes of 10-digit numbers per network (carriers/plan_ke.tsv): 3 digits, 7 free.
func prefixes(n carriers.Network) []string {
	switch n {
	case carriers.Safaricom:
		return []string{"070", "071", "072", "079", "011"}
	case carriers.Airtel:
		return []string{"073", "078"}
	case carriers.Telkom:
		return []string{"077"}
	}
	return nil
}

// mixPrefixes spread numbers over the networks roughly as Kenyan traffic is: 5 Safaricom,
// 2 Airtel and 1 Telkom in 8.
func mixPrefixes() []string {
	var out []string
	for _, n := range carriers.Networks() {
		out = append(out, prefixes(n)...)
	}
	return out
}

// numbers is a pool of distinct phone numbers pre-rendered as JSON array elements, so the body
// of a send of n recipients is one copy of a window of it. Read-only once built.
type numbers struct {
	joined []byte // "0700000000","0710000000",… each numberWidth bytes
	count  int
}

func newNumbers(pre []string, size int) *numbers {
	p := &numbers{joined: make([]byte, 0, size*numberWidth), count: size}
	for k := range size {
		p.joined = append(p.joined, '"')
		p.joined = append(p.joined, pre[k%len(pre)]...)
		suffix := strconv.Itoa(k / len(pre))
		for range 7 - len(suffix) {
			p.joined = append(p.joined, '0')
		}
		p.joined = append(p.joined, suffix...)
		p.joined = append(p.joined, '"', ',')
	}
	return p
}

// body renders a send of the n numbers from index from into dst's storage. A window that
// would run past the pool's end starts over at its beginning (n never exceeds the pool).
func (p *numbers) body(dst []byte, from, n int) []byte {
	from %= p.count
	if from+n > p.count {
		from = 0
	}
	dst = append(dst[:0], `{"recipients":[`...)
	dst = append(dst, p.joined[from*numberWidth:(from+n)*numberWidth-1]...)
	dst = append(dst, `],"message":"`+benchMessage+`"}`...)
	return dst
}

// poolSize is how many numbers a pool holds: twice the largest send, so windows vary.
func poolSize(largest int) int { return max(2*largest, 1<<16) }

// tally counts what the clients saw. Each client owns one; they are merged at the end.
type tally struct {
	requests  int64
	s2xx      int64
	s4xx      int64
	s429      int64 // also counted in s4xx
	s5xx      int64
	sOther    int64            // 1xx, 3xx: not success either
	codes     map[string]int64 // non-2xx answers by status and problem code ("503 unavailable")
	transport int64            // no HTTP answer (connection error, timeout)
	badBody   int64            // a 202 whose body did not say how many recipients it took
	offered   int64            // recipients in every send made
	accepted  int64            // recipients the 202s took (recipients_count)
	lat       []time.Duration
	at        []time.Duration // when each accepted send started, since the load began
	jobs      []jobStart      // the job each accepted send created, and when the send began
}

func (t *tally) add(o *tally) {
	t.requests += o.requests
	t.s2xx += o.s2xx
	t.s4xx += o.s4xx
	t.s429 += o.s429
	t.s5xx += o.s5xx
	t.sOther += o.sOther
	for k, v := range o.codes {
		t.addCode(k, v)
	}
	t.transport += o.transport
	t.badBody += o.badBody
	t.offered += o.offered
	t.accepted += o.accepted
	t.lat = append(t.lat, o.lat...)
	t.at = append(t.at, o.at...)
	t.jobs = append(t.jobs, o.jobs...)
}

// live are the counters the progress display reads while the clients run.
type live struct {
	ready    atomic.Int64 // accounts registered and funded (setup phase)
	requests atomic.Int64
	accepted atomic.Int64 // messages
	errors   atomic.Int64 // requests that were not 2xx
	final    atomic.Int64 // messages delivered or failed (drain phase)
}

// loadResult is the sending phase.
type loadResult struct {
	tally
	start, end time.Time // first request, last answer
	missed     int64     // open-loop sends not started because every client was busy
}

// loader runs a scenario's sends.
type loader struct {
	cfg      Config
	api      *api
	tenants  []*tenant
	live     *live
	messages *numbers // mixed networks
}

// send posts one send and counts its outcome, and says how long a refusal asks the client to
// wait before its next (0: none). body must stay unchanged until it returns.
func (l *loader) send(t *tenant, body []byte, n int, tl *tally, since time.Time) time.Duration {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	l.api.prepare(req, "POST", "/sms/send", body, "X-API-Key", t.key)
	start := time.Now()
	err := l.api.client.DoTimeout(req, resp, l.api.timeout)
	took := time.Since(start)
	tl.requests++
	tl.offered += int64(n)
	l.live.requests.Add(1)
	status := resp.StatusCode()
	switch {
	case err != nil:
		// Not accepted, whatever the server may have done: the client never heard.
		tl.transport++
		l.live.errors.Add(1)
		return 0
	case status >= 200 && status < 300:
		tl.s2xx++
		got := int64(n)
		var r struct {
			JobID           string `json:"job_id"`
			RecipientsCount *int64 `json:"recipients_count"`
		}
		if json.Unmarshal(resp.Body(), &r) == nil && r.RecipientsCount != nil {
			got = *r.RecipientsCount // duplicates are sent once
			tl.jobs = append(tl.jobs, jobStart{id: r.JobID, at: start})
		} else {
			tl.badBody++
		}
		tl.accepted += got
		tl.lat = append(tl.lat, took)
		tl.at = append(tl.at, start.Sub(since))
		t.accepted.Add(got)
		l.live.accepted.Add(got)
		return 0
	}
	tl.countCode(status, resp.Body())
	switch {
	case status == 429:
		tl.s4xx++
		tl.s429++
	case status >= 400 && status < 500:
		tl.s4xx++
	case status >= 500:
		tl.s5xx++
	default:
		tl.sOther++
	}
	l.live.errors.Add(1)
	return retryAfter(status, resp.Header.Peek("Retry-After"))
}

// maxRetryAfter bounds the wait a refusal can impose on a client of the tool.
const maxRetryAfter = 10 * time.Second

// retryAfter is the wait a 429 or 503 asks for in its Retry-After (whole seconds), at most
// maxRetryAfter; 0 for any other answer. A client that asks again at once, as the tool's did,
// meets the same refusal hundreds of times a second and counts each.
func retryAfter(status int, header []byte) time.Duration {
	if status != 429 && status != 503 {
		return 0
	}
	secs, err := strconv.Atoi(string(header))
	if err != nil || secs <= 0 {
		return 0
	}
	return min(time.Duration(secs)*time.Second, maxRetryAfter)
}

// wait sleeps for d unless ctx ends first; false when it did.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// countCode counts a refused send by its status and problem code, so a run says why it was
// refused, not only how often.
func (t *tally) countCode(status int, body []byte) {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(body, &p)
	if p.Code == "" {
		p.Code = "(no problem code)"
	}
	t.addCode(fmt.Sprintf("%d %s", status, p.Code), 1)
}

func (t *tally) addCode(key string, n int64) {
	if t.codes == nil {
		t.codes = map[string]int64{}
	}
	t.codes[key] += n
}

// sizer picks the recipients of a client's next send.
type sizer func(r *rand.Rand) int

func (l *loader) sizer() sizer {
	n := l.cfg.Recipients
	if l.cfg.Scenario != ScenarioMixed {
		return func(*rand.Rand) int { return n }
	}
	return func(r *rand.Rand) int {
		if r.IntN(10) > 0 { // nine in ten are single messages
			return 1
		}
		return mixedMinBulk + r.IntN(n-mixedMinBulk+1)
	}
}

// run sends for the configured duration, closed-loop (each client sends again as soon as it
// is answered) or, with a rate, open-loop (sends start on a schedule, whatever the answers).
func (l *loader) run(ctx context.Context) loadResult {
	if l.cfg.Scenario == ScenarioThrottled {
		return l.runBacklog(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.Duration)
	defer cancel()
	start := time.Now()
	var ticks <-chan struct{}
	var missed atomic.Int64
	var wg sync.WaitGroup
	if l.cfg.Rate > 0 {
		ch := make(chan struct{}, l.cfg.Concurrency)
		ticks = ch
		wg.Go(func() { pace(ctx, start, l.cfg.Rate, ch, &missed) })
	}
	tallies := make([]tally, l.cfg.Concurrency)
	size := l.sizer()
	for c := range l.cfg.Concurrency {
		wg.Go(func() {
			tl := &tallies[c]
			rng := rand.New(rand.NewPCG(uint64(c), 0x7475_6d61)) // reproducible mixes
			buf := make([]byte, 0, 256)
			from := c * 7919 // clients start at different numbers
			for i := 0; ; i++ {
				if ticks != nil {
					if _, ok := <-ticks; !ok {
						return
					}
				}
				if ctx.Err() != nil {
					return
				}
				n := size(rng)
				buf = l.messages.body(buf, from, n)
				from += n
				// Refused, a client waits what the answer asks, as the API tells clients to.
				if !wait(ctx, l.send(l.tenants[(c+i*l.cfg.Concurrency)%len(l.tenants)], buf, n, tl, start)) {
					return
				}
			}
		})
	}
	wg.Wait()
	res := loadResult{start: start, end: time.Now(), missed: missed.Load()}
	for i := range tallies {
		res.add(&tallies[i])
	}
	return res
}

// pace offers one send every 1/rate seconds from start until ctx ends (sends due at or after
// its deadline are not offered), then closes ticks. ticks holds one send per client at most;
// a send due while it is full is counted as missed rather than queued further: a growing
// queue would hide that the offered rate was not met.
func pace(ctx context.Context, start time.Time, rate float64, ticks chan<- struct{}, missed *atomic.Int64) {
	defer close(ticks)
	every := time.Duration(float64(time.Second) / rate)
	end, bounded := ctx.Deadline()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i := int64(0); ; {
		// Offer every send that is due, so a late wake-up catches up instead of losing rate.
		for now := time.Now(); !start.Add(time.Duration(i) * every).After(now); i++ {
			if bounded && !start.Add(time.Duration(i)*every).Before(end) {
				return
			}
			select {
			case ticks <- struct{}{}:
			default:
				missed.Add(1)
			}
		}
		timer.Reset(time.Until(start.Add(time.Duration(i) * every)))
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
	}
}

// backlogSend is one send of the throttled scenario.
type backlogSend struct {
	network carriers.Network
	tenant  *tenant
	from, n int
}

// backlog plans the throttled scenario: cap×duration messages per capped network, in sends
// of about two seconds of egress each, every send to one network only and networks on
// separate accounts, so each link's queue is fed by several jobs at once.
func (l *loader) backlog() []backlogSend {
	var nets []carriers.Network
	for _, n := range carriers.Networks() {
		if l.cfg.Caps[n] > 0 {
			nets = append(nets, n)
		}
	}
	var out []backlogSend
	for ni, n := range nets {
		total := int(math.Round(l.cfg.Caps[n] * l.cfg.Duration.Seconds()))
		chunk := min(l.cfg.Recipients, max(1, int(math.Ceil(2*l.cfg.Caps[n]))))
		for k, from := 0, 0; from < total; k, from = k+1, from+chunk {
			out = append(out, backlogSend{network: n, tenant: l.tenants[(ni+k*len(nets))%len(l.tenants)],
				from: from, n: min(chunk, total-from)})
		}
	}
	// Interleave the networks so they all start at once.
	slices.SortStableFunc(out, func(a, b backlogSend) int { return cmp.Compare(a.from, b.from) })
	return out
}

// runBacklog sends the throttled scenario's backlog as fast as the clients can.
func (l *loader) runBacklog(ctx context.Context) loadResult {
	plan := l.backlog()
	pools := map[carriers.Network]*numbers{}
	largest := 0
	for _, s := range plan {
		largest = max(largest, s.from+s.n)
	}
	for _, n := range carriers.Networks() {
		pools[n] = newNumbers(prefixes(n), max(largest, 1))
	}
	work := make(chan backlogSend)
	start := time.Now()
	tallies := make([]tally, l.cfg.Concurrency)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(work)
		for _, s := range plan {
			select {
			case work <- s:
			case <-ctx.Done():
				return
			}
		}
	})
	for c := range l.cfg.Concurrency {
		wg.Go(func() {
			var buf []byte
			for s := range work {
				buf = pools[s.network].body(buf, s.from, s.n)
				if !wait(ctx, l.send(s.tenant, buf, s.n, &tallies[c], start)) {
					return
				}
			}
		})
	}
	wg.Wait()
	res := loadResult{start: start, end: time.Now()}
	for i := range tallies {
		res.add(&tallies[i])
	}
	return res
}
