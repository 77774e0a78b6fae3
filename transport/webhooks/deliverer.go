// The Deliverer: rounds that claim deliveries, attempts that run beside them.

package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/tuma-sms/tuma/persistence"
)

// Store is what the Deliverer needs of persistence.
type Store interface {
	ClaimWebhookDeliveries(ctx context.Context, c persistence.WebhookClaim) ([]persistence.WebhookDelivery, error)
	WebhookEventMessages(ctx context.Context, accountID uuid.UUID, events []persistence.WebhookEvent) ([]persistence.MessageEventData, error)
	WebhookFailed(ctx context.Context, a persistence.WebhookAttempt, failingLimit time.Duration) (*persistence.DisabledWebhook, error)
	WebhookSucceeded(ctx context.Context, as []persistence.WebhookAttempt, forms []persistence.WebhookForm, c persistence.WebhookClaim) (persistence.WebhookSuccesses, error)
	PruneWebhooks(ctx context.Context, before time.Time, limit int) (int64, error)
	WebhookBacklog(ctx context.Context) (persistence.WebhookBacklog, error)
}

// DefaultSchedule is the delay before each retry (CONTRACT §14): after the ninth failed
// attempt (about 47 hours on) the delivery has failed.
var DefaultSchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
	10 * time.Hour, 10 * time.Hour, 14 * time.Hour}

// Options tune the Deliverer; zero values take the defaults.
type Options struct {
	Schedule     []time.Duration // retry delays, ±10 % jitter (default DefaultSchedule)
	Lanes        int             // pending deliveries per endpoint, so requests in flight to it (default 8)
	InFlight     int             // requests in flight from this node (default 64)
	Timeout      time.Duration   // an attempt succeeds with a 2xx within this (default 10 s)
	Lease        time.Duration   // a claimed delivery is this node's for this long (default 1 minute)
	FailingLimit time.Duration   // an endpoint with no success for this long is disabled (default 72 h; negative: never)
	Retention    time.Duration   // finished deliveries are kept this long (default 30 days)
	MaxRetryWait time.Duration   // the longest Retry-After honoured (default 24 h)
	UserAgent    string          // default Tuma-Webhooks/dev
	Policy       Policy
	// Wake asks for a round at once (the engine's worker): an attempt ended and its lane is free.
	Wake func()
}

func (o Options) withDefaults() Options {
	if len(o.Schedule) == 0 {
		o.Schedule = DefaultSchedule
	}
	if o.Lanes <= 0 {
		o.Lanes = 8
	}
	if o.InFlight <= 0 {
		o.InFlight = 64
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Lease <= 0 {
		o.Lease = time.Minute
	}
	o.Lease = max(o.Lease, 2*o.Timeout)
	if o.FailingLimit == 0 {
		o.FailingLimit = 72 * time.Hour
	}
	if o.Retention <= 0 {
		o.Retention = 30 * 24 * time.Hour
	}
	if o.MaxRetryWait <= 0 {
		o.MaxRetryWait = 24 * time.Hour
	}
	if o.UserAgent == "" {
		o.UserAgent = "Tuma-Webhooks/dev"
	}
	if o.Wake == nil {
		o.Wake = func() {}
	}
	return o
}

// ParseSchedule reads a retry schedule: comma-separated durations such as 5s,5m,30m.
func ParseSchedule(v string) ([]time.Duration, error) {
	var out []time.Duration
	for _, part := range strings.Split(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d <= 0 {
			return nil, errors.New("must be comma-separated positive durations such as 5s,5m,30m")
		}
		out = append(out, d)
	}
	return out, nil
}

// Deliverer delivers the outbox. Its Round is an engine worker's round: it claims what this
// node has room for and hands each delivery to Run, which attempts them side by side, each on
// its own goroutine and connection: a slow or dead endpoint holds only its own lanes (Lanes
// at most, across nodes, since a delivery is claimed by one node at a time), never another
// endpoint's deliveries, the round or the engine.
type Deliverer struct {
	store    Store
	opts     Options
	client   *http.Client
	log      *slog.Logger
	m        *Metrics
	work     chan persistence.WebhookDelivery
	inflight atomic.Int64
	lastDue  atomic.Int64 // when a round last claimed due deliveries, Unix nanoseconds
	now      func() time.Time
}

// New makes a Deliverer; start its Run before its rounds.
func New(store Store, opts Options, log *slog.Logger, m *Metrics) *Deliverer {
	opts = opts.withDefaults()
	return &Deliverer{store: store, opts: opts, client: NewClient(opts.Policy, opts.InFlight), log: log, m: m,
		work: make(chan persistence.WebhookDelivery, opts.InFlight), now: time.Now}
}

// NewClient is the HTTP client of deliveries: connections kept per host, up to perHost idle
// (the node's requests in flight: many endpoints can share a host, a tenant's several or a
// service's many tenants, and a connection let go at each request is a dial at the next),
// every dial checked by the policy, no proxy from the environment (it would dial for us),
// redirects not followed (a 3xx is the answer, and a failure).
func NewClient(p Policy, perHost int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:           p.dial,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          1024,
			MaxIdleConnsPerHost:   perHost,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			// A batch of 100 message events is about 55 kB: with the headers it goes out of
			// this buffer in one write. With the default 4 kB, the headers and the body's start
			// went in one, and the rest through a 32 kB buffer allocated for each request.
			WriteBufferSize: 64 << 10,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Run attempts the deliveries the rounds claim until ctx ends, then waits for the attempts
// under way (cancelled: their leases lapse and another round takes them again) and records
// the successes they handed over.
func (d *Deliverer) Run(ctx context.Context) {
	successes := make(chan success, d.opts.InFlight)
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		d.record(ctx, successes)
	}()
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		close(successes)
		<-recorded
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case w := <-d.work:
			wg.Add(1)
			go func() {
				defer wg.Done()
				d.attempt(ctx, w, successes)
				d.inflight.Add(-1)
				d.opts.Wake()
			}()
		}
	}
}

// Round claims the deliveries this node has room for and hands them to Run.
func (d *Deliverer) Round(ctx context.Context) (more bool, err error) {
	busy := d.inflight.Load() > 0
	free := d.reserve(d.opts.InFlight)
	if free <= 0 {
		return false, nil // an attempt that ends wakes the next round
	}
	now := d.now().UnixNano()
	due := !busy || now-d.lastDue.Load() >= int64(dueEvery)
	if due {
		d.lastDue.Store(now)
	}
	claimed, err := d.store.ClaimWebhookDeliveries(ctx, persistence.WebhookClaim{Limit: free, Lanes: d.opts.Lanes, Lease: d.opts.Lease,
		SkipDue: !due})
	if err := d.dispatch(ctx, claimed, free); err != nil {
		return false, err
	}
	return len(claimed) == free, err
}

// dueEvery spaces a busy node's claims of due deliveries (retries, tests, redeliveries, leases
// that lapsed): every attempt's end wakes a round, and at batch_size 1 nearly every round's
// claim found none, a tenth of the node's CPU (bench/RESULTS.md, 2026-11-28). An idle node
// claims them at once; a busy one's next attempt to end wakes the round that does.
const dueEvery = 100 * time.Millisecond

// reserve takes up to n of the node's free places in flight and says how many it took.
func (d *Deliverer) reserve(n int) int {
	for {
		cur := d.inflight.Load()
		free := min(int64(n), int64(d.opts.InFlight)-cur)
		if free <= 0 {
			return 0
		}
		if d.inflight.CompareAndSwap(cur, cur+free) {
			return int(free)
		}
	}
}

// dispatch hands claimed deliveries to Run and gives back the places reserved for them that
// they did not fill.
func (d *Deliverer) dispatch(ctx context.Context, claimed []persistence.WebhookDelivery, reserved int) error {
	d.inflight.Add(int64(len(claimed) - reserved))
	for i, w := range claimed {
		select {
		case d.work <- w:
		case <-ctx.Done(): // stopping: the leases lapse and the deliveries wait for the next start
			d.inflight.Add(-int64(len(claimed) - i))
			return ctx.Err()
		}
	}
	return nil
}

// bookkeeping bounds recording an outcome, which must happen even when the attempt's context
// has just ended.
const bookkeeping = 5 * time.Second

// attempt makes one attempt of a delivery and records it, or hands a success to the recorder.
func (d *Deliverer) attempt(ctx context.Context, w persistence.WebhookDelivery, successes chan<- success) {
	start := d.now()
	if w.Attempts == 0 {
		for _, e := range w.Events {
			d.m.firstTry.Observe(start.Sub(e.CreatedAt).Seconds())
		}
	}
	status, retryAfter, err := d.post(ctx, w)
	if ctx.Err() != nil {
		return // stopping: not the endpoint's failure; the lease lapses and it goes again
	}
	var unsent *unsentError
	if errors.As(err, &unsent) {
		// Ours, not the endpoint's: no attempt is counted against it (its retries and the
		// days until it is disabled are its own failures'); the lease lapses and it goes again.
		d.log.Error("prepare webhook delivery; its lease will lapse and it goes again", slog.Any("error", err),
			slog.String("delivery", w.ID.String()))
		return
	}
	a := persistence.WebhookAttempt{DeliveryID: w.ID, EndpointID: w.EndpointID, LeaseUntil: w.LeaseUntil, At: start, Duration: d.now().Sub(start), StatusCode: status}
	outcome := outcomeSucceeded
	switch {
	case err != nil:
		a.Error, outcome = err.Error(), errOutcome(err)
	case status >= 200 && status < 300:
		a.Succeeded = true
	default:
		a.Error, outcome = fmt.Sprintf("HTTP %d", status), outcomeStatus
	}
	d.m.attempts.WithLabelValues(outcome).Inc()
	if a.Succeeded {
		for _, e := range w.Events {
			d.m.delivered.Observe(d.now().Sub(e.CreatedAt).Seconds())
		}
	} else {
		a.RetryAt = d.retryAt(w.Attempts, status, retryAfter)
		if status == http.StatusGone {
			a.Disable = "the endpoint answered 410 Gone"
		}
	}
	if a.Succeeded {
		successes <- success{w: w, a: a}
		return
	}
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeeping)
	defer cancel()
	disabled, err := d.store.WebhookFailed(bctx, a, d.opts.FailingLimit)
	if err != nil {
		d.recordFailed(err, w, a)
		return
	}
	if disabled != nil {
		reason := "failing"
		if a.Disable != "" {
			reason = "gone"
		}
		d.m.disabled.WithLabelValues(reason).Inc()
		d.log.Warn("webhook endpoint disabled", slog.String("endpoint", disabled.ID.String()),
			slog.String("account", disabled.AccountID.String()), slog.String("reason", disabled.Reason))
	}
}

// unsentError is a failure to make a delivery's request, before anything was sent: reading
// its messages, rendering or signing its body.
type unsentError struct{ err error }

func (e *unsentError) Error() string { return "webhook request not made: " + e.err.Error() }
func (e *unsentError) Unwrap() error { return e.err }

// post sends the delivery once: the status it got (0: none) and its Retry-After. An error
// before the request was sent is an *unsentError.
func (d *Deliverer) post(ctx context.Context, w persistence.WebhookDelivery) (int, time.Duration, error) {
	msgs, err := d.store.WebhookEventMessages(ctx, w.AccountID, w.Events)
	if err != nil {
		return 0, 0, &unsentError{err}
	}
	body, err := Body(w, msgs)
	if err != nil {
		return 0, 0, &unsentError{err}
	}
	id := w.ID.String()
	ts := d.now().Unix()
	sig, err := Sign(w.Secrets, id, ts, body)
	if err != nil {
		return 0, 0, &unsentError{err}
	}
	rctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		// The endpoint's URL does not make a request: its own fault, as an unreachable one is.
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", d.opts.UserAgent)
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	// Read a little of the body so the connection can be kept, then let it go.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, retryAfter(resp.Header.Get("Retry-After"), d.now()), nil
}

func errOutcome(err error) string {
	var ue *URLError
	var ne net.Error
	switch {
	case errors.As(err, &ue):
		return outcomeRefused
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return outcomeTimeout
	}
	return outcomeNetwork
}

// retryAt is when a failed attempt is retried: after Retry-After for a 429 or 503 that gives
// one, else after the schedule's next step with ±10 % jitter; zero when the schedule is spent.
func (d *Deliverer) retryAt(before, status int, after time.Duration) time.Time {
	if before >= len(d.opts.Schedule) {
		return time.Time{}
	}
	if (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) && after > 0 {
		return d.now().Add(min(after, d.opts.MaxRetryWait))
	}
	step := d.opts.Schedule[before]
	jitter := time.Duration((rand.Float64()*0.2 - 0.1) * float64(step))
	return d.now().Add(step + jitter)
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// pruneBatch is how many rows one retention statement deletes.
const pruneBatch = 1000

// Prune is the retention worker's round: it deletes finished deliveries older than the
// retention a batch at a time; more while batches come back full.
func (d *Deliverer) Prune(ctx context.Context) (more bool, err error) {
	n, err := d.store.PruneWebhooks(ctx, d.now().Add(-d.opts.Retention), pruneBatch)
	d.m.retentions.Add(float64(n))
	return n >= pruneBatch, err
}

// Measure sets the backlog gauges (a worker's round).
func (d *Deliverer) Measure(ctx context.Context) (bool, error) {
	b, err := d.store.WebhookBacklog(ctx)
	if err != nil {
		return false, err
	}
	d.m.pending.Set(float64(b.Pending))
	d.m.queued.Set(float64(b.Queued))
	d.m.lag.Set(b.Lag.Seconds())
	return false, nil
}
