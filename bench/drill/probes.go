package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// prober sends the security drill's probes to one node and audits every answer against the
// API's rules, whatever the probe was for: no 5xx, a status the document lists for the
// operation, errors as problem+json (or the media type the document gives), Retry-After on
// every 429 and 503, and no answer slowed by an injected pg_sleep.
type prober struct {
	base string
	hc   *http.Client
	a    *audit
	sec  *secrets // credentials found in answers join the run's secrets
}

// audit is the tally of every probe answer, shared by the drill's nodes.
type audit struct {
	mu        sync.Mutex
	requests  int
	perOp     map[*operation]int
	serverErr tally
	noAnswer  tally
	media     tally
	undoc     tally
	retry     tally
	slow      tally
}

// tally counts failures, keeps the first as an example and names the kinds (operation and
// what was tried) of the others, so one row tells every place that needs looking at.
type tally struct {
	n       int
	first   string
	kinds   []string
	seenKey map[string]bool
}

func (t *tally) add(kind, example string) {
	t.n++
	if t.first == "" {
		t.first = clip([]byte(example), 400)
	}
	if t.seenKey == nil {
		t.seenKey = map[string]bool{}
	}
	if !t.seenKey[kind] {
		t.seenKey[kind] = true
		t.kinds = append(t.kinds, kind)
	}
}

// example is the first failure and the kinds of all of them.
func (t *tally) example() string {
	if t.n == 0 {
		return ""
	}
	kinds := t.kinds
	more := ""
	if len(kinds) > 12 {
		more = fmt.Sprintf(" … %d more", len(kinds)-12)
		kinds = kinds[:12]
	}
	return fmt.Sprintf("%s [%d kinds: %s%s]", t.first, len(t.kinds), strings.Join(kinds, "; "), more)
}

// slowAnswer is far longer than a probe takes on loopback, shorter than the injected sleeps.
const slowAnswer = 4500 * time.Millisecond

func newAudit() *audit { return &audit{perOp: map[*operation]int{}} }

func newProber(base string, a *audit, sec *secrets) *prober {
	// A connection per probe: a hostile request can leave bytes the server answers as a second
	// request, which a reused connection would mistake for the next probe's answer.
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true,
		DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second,
		// Redirects are answers to check, not to follow (verification links, payment returns).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &prober{base: base, hc: hc, a: a, sec: sec}
}

// preq is one probe.
type preq struct {
	op      *operation // nil for paths outside the document
	method  string
	path    string
	body    []byte // nil for none
	ctype   string // Content-Type of the body ("" for none)
	headers []string
	label   string // what the probe tries, for the examples of failures
	sleeps  bool   // it carries an injected pg_sleep: a slow answer means it ran
}

func (q preq) String() string {
	return fmt.Sprintf("%s: %s %s", q.label, q.method, clip([]byte(q.path), 80))
}

// do sends a probe and audits its answer.
func (p *prober) do(ctx context.Context, q preq) reply {
	var rd io.Reader
	if q.body != nil {
		rd = bytes.NewReader(q.body)
	}
	r := reply{}
	req, err := http.NewRequestWithContext(ctx, q.method, p.base+q.path, rd)
	if err != nil {
		r.err = err
		p.a.see(q, r)
		return r
	}
	if q.ctype != "" {
		req.Header.Set("Content-Type", q.ctype)
	}
	for i := 0; i+1 < len(q.headers); i += 2 {
		req.Header.Set(q.headers[i], q.headers[i+1])
	}
	start := time.Now()
	resp, err := p.hc.Do(req)
	if err != nil {
		r = reply{err: err, took: time.Since(start)}
	} else {
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		r = reply{status: resp.StatusCode, header: resp.Header, body: b, took: time.Since(start), err: rerr}
		if rerr != nil {
			r.status = 0
		}
	}
	p.a.see(q, r)
	if r.status >= 200 && r.status < 300 {
		p.harvest(r.body)
	}
	return r
}

// harvest remembers the credentials an answer carries (a registration's key, a login's
// tokens), so the log scan looks for them too.
func (p *prober) harvest(body []byte) {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return
	}
	for k, kind := range map[string]string{"api_key": "api key", "access_token": "bearer token", "refresh_token": "refresh token"} {
		if v, ok := m[k].(string); ok {
			p.sec.add(kind, v)
		}
	}
}

// see audits one answer.
func (a *audit) see(q preq, r reply) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests++
	if q.op != nil {
		a.perOp[q.op]++
	}
	where := q.method + " " + clip([]byte(q.path), 60)
	if q.op != nil {
		where = q.op.String()
	}
	kind := fmt.Sprintf("%s (%s)", where, q.label)
	if r.err != nil || r.status == 0 {
		a.noAnswer.add(kind, fmt.Sprintf("%s: %s", q, clip([]byte(fmt.Sprint(r.err)), 200)))
		return
	}
	if r.status >= 500 {
		a.serverErr.add(kind, fmt.Sprintf("%s → %d %s", q, r.status, clip(r.body, 160)))
	}
	if q.op != nil && !q.op.documented(r.status) {
		a.undoc.add(fmt.Sprintf("%s → %d", q.op, r.status), fmt.Sprintf("%s → %d %s, not in the document for %s", q, r.status, clip(r.body, 120), q.op))
	}
	if r.status >= 400 {
		if why := mediaProblem(q.op, r); why != "" {
			a.media.add(fmt.Sprintf("%s → %d", where, r.status), fmt.Sprintf("%s → %d: %s", q, r.status, why))
		}
	}
	if r.status == 429 || r.status == 503 {
		if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
			a.retry.add(kind, fmt.Sprintf("%s → %d with Retry-After %q", q, r.status, r.header.Get("Retry-After")))
		}
	}
	if q.sleeps && r.took >= slowAnswer {
		a.slow.add(kind, fmt.Sprintf("%s took %s", q, secs(r.took)))
	}
}

// mediaProblem says what is wrong with an error answer's body ("" for nothing): it must be
// of the media type the document gives for the status, problem+json where it gives none, and
// a problem must carry its status and code.
func mediaProblem(op *operation, r reply) string {
	want := "application/problem+json"
	if op != nil && op.responses[r.status] != "" {
		want = op.responses[r.status]
	}
	got, _, _ := mime.ParseMediaType(r.header.Get("Content-Type"))
	if got != want {
		return fmt.Sprintf("Content-Type %q, want %s", r.header.Get("Content-Type"), want)
	}
	if want != "application/problem+json" {
		return ""
	}
	var pb struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
		Title  string `json:"title"`
	}
	if err := json.Unmarshal(r.body, &pb); err != nil {
		return "body is not a problem: " + err.Error()
	}
	if pb.Status != r.status || pb.Code == "" || pb.Title == "" {
		return fmt.Sprintf("problem with status %d, code %q, title %q", pb.Status, pb.Code, pb.Title)
	}
	if r.status == 401 && r.header.Get("WWW-Authenticate") == "" {
		return "401 without WWW-Authenticate"
	}
	return ""
}

// expect sends a probe and tells whether it got want (0: any 4xx the document lists for
// the operation).
func (p *prober) expect(ctx context.Context, q preq, want int) (reply, bool) {
	r := p.do(ctx, q)
	return r, answered(q.op, r, want)
}

func answered(op *operation, r reply, want int) bool {
	if r.err != nil || r.status == 0 {
		return false
	}
	if want != 0 {
		return r.status == want
	}
	return r.status >= 400 && r.status < 500 && (op == nil || op.documented(r.status))
}

// outcome of one kind of probe: how many got what they should, and an example of one that
// did not.
type verdict struct {
	mu      sync.Mutex
	ok, all int
	example string
}

func (v *verdict) note(ok bool, example func() string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.all++
	if ok {
		v.ok++
	} else if v.example == "" {
		v.example = clip([]byte(example()), 600)
	}
}

func (v *verdict) fail(example string) { v.note(false, func() string { return example }) }

// row records the verdict as a check (target: every one).
func (v *verdict) row(rec *recorder, check, what, target string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	ok := v.all > 0 && v.ok == v.all
	reason := v.example
	if v.all == 0 {
		reason = "nothing was probed"
	}
	rec.value(check, float64(v.all-v.ok), "probes", ok, fmt.Sprintf("%d of %d %s", v.ok, v.all, what), target, reason)
}

// describe renders an answer for an example.
func describe(q preq, r reply, want string) string {
	if r.err != nil {
		return fmt.Sprintf("%s: no answer (%v), want %s", q, r.err, want)
	}
	return fmt.Sprintf("%s → %d %s, want %s", q, r.status, clip(r.body, 160), want)
}

func wantText(want int) string {
	if want == 0 {
		return "a documented 4xx"
	}
	return strconv.Itoa(want)
}

// rows records the audit's checks.
func (a *audit) rows(rec *recorder, doc *apiDoc) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.requests
	rec.value("no 5xx", float64(a.serverErr.n), "answers", a.serverErr.n == 0,
		fmt.Sprintf("%d of %s probe answers were 5xx", a.serverErr.n, count(int64(n))), "0", a.serverErr.example())
	rec.value("every probe answered", float64(a.noAnswer.n), "probes", a.noAnswer.n == 0,
		fmt.Sprintf("%d of %s probes got no HTTP answer", a.noAnswer.n, count(int64(n))), "0", a.noAnswer.example())
	rec.value("errors are problem+json", float64(a.media.n), "answers", a.media.n == 0,
		fmt.Sprintf("%d error answers not problem+json (or the documented type) with status and code", a.media.n), "0", a.media.example())
	rec.value("statuses documented", float64(a.undoc.n), "answers", a.undoc.n == 0,
		fmt.Sprintf("%d answers with a status /openapi.json does not list for the operation", a.undoc.n), "0", a.undoc.example())
	rec.value("Retry-After on 429/503", float64(a.retry.n), "answers", a.retry.n == 0,
		fmt.Sprintf("%d answers 429 or 503 without Retry-After", a.retry.n), "0", a.retry.example())
	rec.value("no injected delay", float64(a.slow.n), "answers", a.slow.n == 0,
		fmt.Sprintf("%d answers to probes with pg_sleep(5) injected took %s or more", a.slow.n, secs(slowAnswer)), "0", a.slow.example())
	var missed []string
	for _, op := range doc.ops {
		if a.perOp[op] == 0 {
			missed = append(missed, op.String())
		}
	}
	slices.Sort(missed)
	rec.value("operations probed", float64(len(doc.ops)-len(missed)), "operations", len(missed) == 0,
		fmt.Sprintf("%d of %d operations of /openapi.json", len(doc.ops)-len(missed), len(doc.ops)), "all",
		"never probed: "+strings.Join(missed, ", "))
}
