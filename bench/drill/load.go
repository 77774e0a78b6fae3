package drill

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// networks are the simulated networks' names, in the order of the numbering prefixes below.
var networks = []string{"safaricom", "airtel", "telkom"}

// prefixes are one numbering range per network (07 + a Safaricom, Airtel or Telkom range).
var prefixes = []string{"0712", "0733", "0777"}

// sendBody renders a send of n distinct recipients spread over the three networks in turn,
// numbered from serial, with a one-part GSM-7 message (with the company prefix).
func sendBody(serial, n int, text string) []byte {
	return sendBodyOn(serial, n, text, []int{0, 1, 2})
}

// sendBodyOn is sendBody over some networks only (indices into networks).
func sendBodyOn(serial, n int, text string, nets []int) []byte {
	var b strings.Builder
	b.Grow(32 + 13*n + len(text))
	b.WriteString(`{"recipients":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		net := nets[i%len(nets)]
		num := (serial + i/len(nets)) % 1_000_000
		fmt.Fprintf(&b, `"%s%06d"`, prefixes[net], num)
	}
	b.WriteString(`],"message":`)
	j, _ := json.Marshal(text)
	b.Write(j)
	b.WriteString(`}`)
	return []byte(b.String())
}

// send is one planned POST /sms/send with its own Idempotency-Key.
type send struct {
	t    *tenant
	key  string
	body []byte
	n    int // recipients
}

// outcome is what the client finally heard about a send.
type outcome struct {
	send
	status   int    // the definite answer: 2xx or a 4xx other than 409 (0: never definite)
	jobID    string // of a 2xx
	cents    int64  // cost_kes of a 2xx, in cents
	count    int    // recipients_count of a 2xx
	attempts int
	err      string // the last answer when never definite
	at       time.Time
	// unknownAt is when the first attempt started that was answered 503 "unavailable" (the
	// outcome is unknown: the engine did not answer in time); zero if none was.
	unknownAt  time.Time
	unknownReq string    // that attempt's X-Request-Id, to find what the node logged of it
	lastStart  time.Time // of the attempt with the definite answer
	replayed   bool      // the definite answer carried Idempotent-Replayed: true
}

// load sends with Idempotency-Keys and retries each send with the same key until the answer
// is definite: 2xx, or a 4xx other than 409 (in flight) and 429 (rate limited). Transport
// errors, 409, 429 and 5xx are retried after a pause (Retry-After when given, bounded).
type load struct {
	c      *client
	giveUp time.Duration // a send still not definite after this is recorded as such

	mu           sync.Mutex
	outcomes     []outcome
	codes        map[int]int64   // every attempt's status; 0 is no HTTP answer
	lat          []time.Duration // of 2xx attempts
	noRetryAfter int64           // 429 and 503 without Retry-After
	resets       int64           // requests written in full that got no answer
	refused      int64           // requests that never reached a server

	accepted  atomic.Int64 // recipients of 2xx
	definite  atomic.Int64 // sends
	attempts  atomic.Int64
	replayed  atomic.Int64  // answers with Idempotent-Replayed
	onAttempt func(r reply) // optional, called after every attempt
}

func newLoad(c *client, giveUp time.Duration) *load {
	return &load{c: c, giveUp: giveUp, codes: map[int]int64{}}
}

// run starts workers that each take their next send from next until it reports false.
// Stopping next (not cancelling ctx) lets the sends under way finish retrying.
func (l *load) run(ctx context.Context, workers int, next func(w int) (send, bool)) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				s, ok := next(w)
				if !ok {
					return
				}
				l.do(ctx, s)
			}
		})
	}
	wg.Wait()
}

// plan returns a next function handing out sends from a list, in order, to any worker.
func plan(sends []send) func(int) (send, bool) {
	var i atomic.Int64
	return func(int) (send, bool) {
		k := int(i.Add(1)) - 1
		if k >= len(sends) {
			return send{}, false
		}
		return sends[k], true
	}
}

// do sends s until its answer is definite, ctx ends or giveUp passes.
func (l *load) do(ctx context.Context, s send) outcome {
	o := outcome{send: s}
	start := time.Now()
	pause := 50 * time.Millisecond
	for ctx.Err() == nil {
		o.attempts++
		l.attempts.Add(1)
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		o.lastStart = time.Now()
		r := l.c.do(rctx, "POST", "/sms/send", s.body, append(s.t.apiKey(), "Idempotency-Key", s.key)...)
		cancel()
		l.note(r)
		if l.onAttempt != nil {
			l.onAttempt(r)
		}
		var wait time.Duration
		switch {
		case r.err != nil:
			o.err = r.err.Error()
			wait = pause
		case r.status >= 200 && r.status < 300:
			o.status = r.status
			var body struct {
				JobID           string      `json:"job_id"`
				RecipientsCount int         `json:"recipients_count"`
				CostKES         json.Number `json:"cost_kes"`
			}
			if err := r.decode(&body); err != nil {
				o.err = err.Error()
			}
			o.jobID, o.count = body.JobID, body.RecipientsCount
			o.cents = cents(body.CostKES)
			if r.header.Get("Idempotent-Replayed") == "true" {
				o.replayed = true
				l.replayed.Add(1)
			}
			l.accepted.Add(int64(o.count))
		case r.status == 409, r.status == 429, r.status >= 500:
			o.err = fmt.Sprintf("%d %s", r.status, clip(r.body, 200))
			if r.status == 503 && o.unknownAt.IsZero() && problemCode(r.body) == "unavailable" {
				o.unknownAt, o.unknownReq = o.lastStart, r.header.Get("X-Request-Id")
			}
			wait = r.retryAfter(pause, time.Second)
		default: // a refusal: definite, nothing charged
			o.status = r.status
			o.err = fmt.Sprintf("%d %s", r.status, clip(r.body, 200))
		}
		if o.status != 0 {
			l.definite.Add(1)
			break
		}
		if time.Since(start) > l.giveUp {
			o.err = "gave up after " + secs(time.Since(start)) + ": " + o.err
			break
		}
		pause = min(2*pause, 400*time.Millisecond)
		select {
		case <-ctx.Done():
		case <-time.After(wait + time.Duration(rand.Int64N(int64(wait/2+1)))):
		}
	}
	o.at = time.Now()
	l.mu.Lock()
	l.outcomes = append(l.outcomes, o)
	l.mu.Unlock()
	return o
}

func (l *load) note(r reply) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.codes[r.status]++
	switch {
	case r.err != nil && r.refused():
		l.refused++
	case r.err != nil:
		l.resets++
	case r.status >= 200 && r.status < 300:
		l.lat = append(l.lat, r.took)
	case (r.status == 429 || r.status == 503) && r.header.Get("Retry-After") == "":
		l.noRetryAfter++
	}
}

// results is a copy of every send's outcome so far.
func (l *load) results() []outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.outcomes)
}

// codeList renders the attempts' statuses, e.g. "202×512 503×12 conn×3".
func (l *load) codeList() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]int, 0, len(l.codes))
	for k := range l.codes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		name := strconv.Itoa(k)
		if k == 0 {
			name = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s×%s", name, count(l.codes[k])))
	}
	return strings.Join(parts, " ")
}

func (l *load) code(status int) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.codes[status]
}

// undefined counts the sends never answered definitely, with an example.
func undefined(os []outcome) (n int, example string) {
	for _, o := range os {
		if o.status == 0 {
			n++
			example = o.err
		}
	}
	return n, example
}

// problemCode is the code of a problem+json body ("" if it is none).
func problemCode(body []byte) string {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(body, &p)
	return p.Code
}

// cents parses a KES amount with at most two decimals exactly.
func cents(n json.Number) int64 {
	s := string(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	frac = (frac + "00")[:2]
	w, _ := strconv.ParseInt(whole, 10, 64)
	f, _ := strconv.ParseInt(frac, 10, 64)
	v := w*100 + f
	if neg {
		return -v
	}
	return v
}

// percentile is the p-th percentile (0–100) of ds by nearest rank; it sorts ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	k := int(float64(len(ds))*p/100+0.999999) - 1
	return ds[min(max(k, 0), len(ds)-1)]
}
