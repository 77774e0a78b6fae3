// Package sim simulates one carrier network (an SMSC) in process. It is the
// default carrier for development, tests and benchmarks: it answers submits
// after a configurable latency, throttles above a TPS cap, fails or rejects a
// configurable share of them, and pushes a final delivery receipt for every
// accepted message after a configurable delay.
//
// # Answers
//
// Submit checks, in this order, and answers:
//
//   - ErrClosed at once when the network is closed;
//   - ctx.Err() at once when ctx is already done;
//   - ErrThrottled at once with probability ThrottleRate;
//   - an error wrapping ErrRejected, after the latency, when the submission is
//     malformed (destination not E.164, Parts outside 1..carriers.MaxParts,
//     unknown Encoding), like ESME_RINVDSTADR or ESME_RINVMSGLEN;
//   - ErrTemporary, after the latency, with probability FailureRate;
//   - ErrRejected, after the latency, with probability RejectRate;
//   - ErrThrottled at once when the TPS token bucket is empty;
//   - otherwise, after the latency, the provider id of the accepted message.
//
// Each rate applies to the submits that reach its check, so with ThrottleRate
// 0.5 and FailureRate 0.5 a quarter of all submits fail with ErrTemporary.
// Only submits bound for acceptance take a TPS token. A ctx cancelled during
// the latency makes Submit return ctx.Err(); that message is not accepted and
// gets no receipt (its TPS token is spent). Close during the latency makes
// Submit return ErrClosed.
//
// # Receipts
//
// Every accepted submit gets exactly one final receipt (one per Submission,
// whatever its Parts; a real SMSC sends one per part), pushed through
// Options.OnReceipt from one goroutine owned by the Network, so calls never
// overlap. Receipts are pushed in non-decreasing DoneAt order, at or after
// DoneAt. The receipt for an id is enqueued as the last step of the Submit
// that returns the id, so everything Submit did happens before OnReceipt
// sees the id. OnReceipt may however run concurrently with the caller's code
// right after Submit returns (with ReceiptDelay 0 it usually does): a caller
// that must know the id before its receipt has to serialise both itself, for
// example by sending the submit result and the receipt to the same actor and
// holding receipts for ids it has not seen yet. Close drops pending receipts.
//
// # Provider ids
//
// A provider id is 22 to 39 characters of [0-9a-v] plus one '-', so it is
// ASCII and URL-safe. For example, a Safaricom message to be delivered after
// 1.5 s, the first of its instance:
//
//	s d 1k80pr6ga 2ecdt 1es - 1 rv5
//	| | |         |     |     | |
//	| | |         |     |     | check digits over the rest
//	| | |         |     |     sequence within the instance
//	| | |         |     receipt delay, ms (1500)
//	| | |         random tag of the instance
//	| | submit time, unix ms
//	| outcome: d DELIVRD, u UNDELIV, e EXPIRED, r REJECTD
//	network: s Safaricom, a Airtel, t Telkom
//
// (written without the spaces: "sd1k80pr6ga2ecdt1es-1rv5"). Numbers are in
// lower-case base 32; the submit time, tag and check digits have fixed
// widths, the delay and sequence none. The final outcome is drawn at submit
// from the outcome mix then in force and written into the id, so the fate of
// a message is a pure function of its id: Query answers for ids issued
// before a restart, and a later Configure does not change the fate of
// earlier messages. Ids are unique across networks (the network letter) and
// instances (the random tag and the submit time).
package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tuma-sms/tuma/carriers"
)

// Errors a submit can fail with. Errors that wrap them say why; compare with
// errors.Is.
var (
	// ErrThrottled means the carrier asks to slow down (ESME_RTHROTTLED): the
	// message did not fail and may be resubmitted later.
	ErrThrottled = errors.New("sim: throttled")
	// ErrTemporary is a transient failure (ESME_RSYSERR): retry later.
	ErrTemporary = errors.New("sim: temporary failure")
	// ErrRejected is permanent for this message (ESME_RINVDSTADR): never retry.
	ErrRejected = errors.New("sim: message rejected")
	// ErrClosed means the network was closed.
	ErrClosed = errors.New("sim: network closed")
	// ErrUnknownMessage means Query got an id this network never issued, or
	// Lookup a message id it has no (remembered) submission of.
	ErrUnknownMessage = errors.New("sim: unknown message id")
	// ErrDown means the network cannot be reached at all (Options.Down): nothing was
	// submitted.
	ErrDown = errors.New("sim: network unreachable")
	// ErrLostAnswer means the submit's answer was lost on the way back (a
	// response timeout): the message may or may not have been accepted.
	ErrLostAnswer = errors.New("sim: answer lost")
)

// maxReceiptDelay bounds ReceiptDelay+ReceiptJitter so the delay fits its
// field of the provider id. It is the usual SMSC validity period ceiling.
const maxReceiptDelay = 7 * 24 * time.Hour

// Options configure a Network. The zero value, with a Network set, accepts
// every submit at once and delivers every message at once.
type Options struct {
	// Network is the carrier network simulated. It is fixed at New.
	Network carriers.Network
	// Latency is the time Submit takes before answering (0 = answer at once).
	Latency time.Duration
	// Jitter adds a uniform extra latency in [0, Jitter).
	Jitter time.Duration
	// TPS is the number of accepted submits per second; beyond it Submit
	// answers ErrThrottled at once. The token bucket holds max(1, TPS/10)
	// tokens, so egress cannot burst far above the cap. 0 = unlimited.
	TPS float64
	// FailureRate is the probability a submit fails with ErrTemporary.
	FailureRate float64
	// RejectRate is the probability a submit fails with ErrRejected.
	RejectRate float64
	// ThrottleRate is the probability a submit answers ErrThrottled,
	// regardless of TPS.
	ThrottleRate float64
	// LostAnswerRate is the probability that an accepted submit answers
	// ErrLostAnswer: the message was accepted (and gets its receipt) but the
	// caller never learns its id, as when a response times out. Lookup finds it.
	LostAnswerRate float64
	// Down makes the network unreachable: every submit answers ErrDown at once, as a refused
	// connection would. Pending receipts are still pushed.
	Down bool
	// ReceiptDelay is the time from an accepted submit to its final receipt,
	// rounded up to the millisecond. ReceiptDelay+ReceiptJitter is at most
	// 7 days.
	ReceiptDelay time.Duration
	// ReceiptJitter adds a uniform extra delay in [0, ReceiptJitter).
	ReceiptJitter time.Duration
	// Delivered, Undeliverable, Expired and Rejected weigh the final outcome
	// of accepted messages (DELIVRD, UNDELIV, EXPIRED, REJECTD). They are
	// normalised; all zero means every message is delivered.
	Delivered, Undeliverable, Expired, Rejected float64
	// Seed seeds the submit-time draws (throttling, failures, jitters,
	// outcome); 0 picks a random seed. With a fixed seed the n-th Submit
	// call makes the same draws in every run. It is fixed at New.
	Seed uint64
	// OnReceipt is called for every final receipt, from the Network's own
	// goroutine. It must not block long, and must not call Close. Nil drops
	// receipts (Query still works). It is fixed at New.
	OnReceipt func(Receipt)
}

// Stats counts what a Network did. Submits is every Submit call; it equals
// Accepted+Throttled+Temporary+Rejected+Canceled plus the calls answered
// ErrClosed, once all calls have returned.
type Stats struct {
	Submits, Accepted, Throttled, Temporary, Rejected uint64
	// Receipts counts the receipts delivered through OnReceipt.
	Receipts uint64
	// MaxRate is the highest number of submits admitted for acceptance in
	// any 1-second window, counted at their arrival: the accepted ones plus
	// any cancelled by their caller during the latency. It is measured in
	// 10 ms slots, so windows last between 0.99 and 1 s.
	MaxRate float64
	// Canceled counts the submits whose ctx was done before they were
	// answered.
	Canceled uint64
	// Lost counts accepted submits whose answer was lost (ErrLostAnswer);
	// they are included in Accepted.
	Lost uint64
}

// Network simulates one carrier network. Its methods are safe for
// concurrent use.
type Network struct {
	network   carriers.Network
	tag       uint64 // random per instance, keeps ids unique across restarts
	seed      uint64
	onReceipt func(Receipt)
	// start is the origin of the Network's clock: monotonic nanoseconds
	// since start, turned into unix time by adding startNs. Reading only the
	// monotonic clock halves the cost of telling the time, and submit times
	// never go backwards with the wall clock.
	start   time.Time
	startNs int64

	cfg    atomic.Pointer[config]
	seq    atomic.Uint64 // one per Submit call: draws, id sequence, Stats.Submits
	closed atomic.Bool

	accepted, throttled, temporary, rejected, canceled, receipts atomic.Uint64
	lostAnswers                                                  atomic.Uint64

	memory submitMemory // recent accepts by the platform's message id, for Lookup

	// admitMu guards the TPS bucket and the rate window.
	admitMu sync.Mutex
	bucket  tokenBucket
	window  rateWindow

	// mu guards the pending receipts and the fields below. It is never held
	// with admitMu.
	mu      sync.Mutex
	pending receiptHeap
	pushes  uint64 // orders receipts due in the same millisecond
	// wakeAt is the DoneAt (unix ms) the pusher sleeps until: submits of
	// earlier receipts wake it. It is math.MinInt64 while the pusher is busy,
	// math.MaxInt64 while nothing is pending.
	wakeAt int64
	// lastMs is the latest submit time or delivered DoneAt (unix ms). Submit
	// times never go below it, which keeps receipts in DoneAt order when a
	// submit is delayed between reading the clock and enqueueing.
	lastMs int64

	wake      chan struct{} // capacity 1: a submit wakes the pusher
	stop      chan struct{} // closed by Close
	done      chan struct{} // closed when the pusher has returned
	closeOnce sync.Once
}

// config is the validated, derived form of the runtime Options.
type config struct {
	latency, jitter             time.Duration
	tps, burst                  float64
	failure, reject, throttle   float64
	lost                        float64
	down                        bool
	opts                        Options // as configured, for Options
	receiptDelay, receiptJitter time.Duration
	// mix holds the cumulative shares of delivered, undeliverable and
	// expired; the rest is rejected.
	mix [3]float64
}

// New validates opts and returns a running Network; Close stops it.
func New(opts Options) (*Network, error) {
	if _, ok := networkCode(opts.Network); !ok {
		return nil, fmt.Errorf("sim: network %s is not simulated", opts.Network)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	n := &Network{
		network:   opts.Network,
		tag:       rand.Uint64N(tagSpace),
		seed:      seed,
		onReceipt: opts.OnReceipt,
		wakeAt:    math.MaxInt64,
		wake:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	n.start = time.Now()
	n.startNs = n.start.UnixNano()
	n.cfg.Store(cfg)
	n.bucket.reset(cfg)
	go n.push()
	return n, nil
}

// newConfig validates the runtime part of opts.
func newConfig(opts Options) (*config, error) {
	for _, r := range []struct {
		name string
		v    float64
	}{
		{"FailureRate", opts.FailureRate},
		{"RejectRate", opts.RejectRate},
		{"ThrottleRate", opts.ThrottleRate},
		{"LostAnswerRate", opts.LostAnswerRate},
	} {
		if !(r.v >= 0 && r.v <= 1) { // also catches NaN
			return nil, fmt.Errorf("sim: %s %v not in [0, 1]", r.name, r.v)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"Latency", opts.Latency},
		{"Jitter", opts.Jitter},
		{"ReceiptDelay", opts.ReceiptDelay},
		{"ReceiptJitter", opts.ReceiptJitter},
	} {
		if d.v < 0 {
			return nil, fmt.Errorf("sim: negative %s %v", d.name, d.v)
		}
	}
	if opts.ReceiptDelay > maxReceiptDelay || opts.ReceiptJitter > maxReceiptDelay-opts.ReceiptDelay {
		return nil, fmt.Errorf("sim: ReceiptDelay+ReceiptJitter above %v", maxReceiptDelay)
	}
	if !(opts.TPS >= 0 && opts.TPS <= math.MaxFloat64) {
		return nil, fmt.Errorf("sim: TPS %v not a non-negative finite number", opts.TPS)
	}
	weights := [4]float64{opts.Delivered, opts.Undeliverable, opts.Expired, opts.Rejected}
	total := 0.0
	for _, w := range weights {
		if !(w >= 0 && w <= math.MaxFloat64) {
			return nil, fmt.Errorf("sim: outcome weight %v not a non-negative finite number", w)
		}
		total += w
	}
	if math.IsInf(total, 0) {
		return nil, fmt.Errorf("sim: outcome weights overflow")
	}
	cfg := &config{
		latency:       opts.Latency,
		jitter:        opts.Jitter,
		tps:           opts.TPS,
		burst:         max(1, opts.TPS/10),
		failure:       opts.FailureRate,
		reject:        opts.RejectRate,
		throttle:      opts.ThrottleRate,
		lost:          opts.LostAnswerRate,
		down:          opts.Down,
		opts:          opts,
		receiptDelay:  opts.ReceiptDelay,
		receiptJitter: opts.ReceiptJitter,
		mix:           [3]float64{1, 1, 1},
	}
	if total > 0 {
		sum := 0.0
		for i := range cfg.mix {
			sum += weights[i]
			cfg.mix[i] = sum / total
		}
	}
	return cfg, nil
}

// outcome picks the final outcome for a uniform draw u in [0, 1).
func (c *config) outcome(u float64) outcome {
	for i, limit := range c.mix {
		if u < limit {
			return outcome(i)
		}
	}
	return outRejected
}

// The draws each Submit makes, indexed so a fixed seed gives the same draws
// whatever branch a submit takes.
const (
	drawThrottle uint64 = iota + 1
	drawFailure
	drawReject
	drawLatency
	drawReceipt
	drawOutcome
	drawLost
)

// Configure changes the runtime behaviour: rates, latency, TPS, receipt
// delays and outcome mix. Network, OnReceipt and Seed are fixed at New:
// opts.Network must be zero or the network's own, and OnReceipt and Seed are
// ignored. It is safe concurrently with Submit; submits already past a check
// keep the configuration they read, and accepted messages keep their fate.
func (n *Network) Configure(opts Options) error {
	if opts.Network != carriers.NetworkUnknown && opts.Network != n.network {
		return fmt.Errorf("sim: cannot reconfigure %s as %s", n.network, opts.Network)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return err
	}
	n.cfg.Store(cfg)
	return nil
}

// Options returns the runtime options last configured (Network, OnReceipt and Seed as at New).
func (n *Network) Options() Options { return n.cfg.Load().opts }

// Submit hands s to the carrier and returns the provider id it accepted it
// under, or an error saying why not (see the package documentation for the
// order of checks and which answers wait for the latency).
func (n *Network) Submit(ctx context.Context, s Submission) (providerID string, err error) {
	seq := n.seq.Add(1)
	if n.closed.Load() {
		return "", ErrClosed
	}
	if err := ctxErr(ctx); err != nil {
		n.canceled.Add(1)
		return "", err
	}
	cfg := n.cfg.Load()
	if cfg.down {
		return "", ErrDown
	}
	d := newDraws(n.seed, seq)
	if cfg.throttle > 0 && d.float(drawThrottle) < cfg.throttle {
		n.throttled.Add(1)
		return "", ErrThrottled
	}
	fail := validate(s)
	var now int64 // the Network's clock, read only when needed
	switch {
	case fail != nil:
	case cfg.failure > 0 && d.float(drawFailure) < cfg.failure:
		fail = ErrTemporary
	case cfg.reject > 0 && d.float(drawReject) < cfg.reject:
		fail = ErrRejected
	default:
		now = n.clock()
		if !n.admit(cfg, now) {
			n.throttled.Add(1)
			return "", ErrThrottled
		}
	}
	if latency := cfg.latency + d.below(drawLatency, cfg.jitter); latency > 0 {
		if err := n.wait(ctx, latency); err != nil {
			if !errors.Is(err, ErrClosed) {
				n.canceled.Add(1)
			}
			return "", err
		}
		now = n.clock()
	}
	if fail != nil {
		if errors.Is(fail, ErrTemporary) {
			n.temporary.Add(1)
		} else {
			n.rejected.Add(1)
		}
		return "", fail
	}
	delay := cfg.receiptDelay + d.below(drawReceipt, cfg.receiptJitter)
	id, err := n.accept(idFields{
		network:  n.network,
		outcome:  cfg.outcome(d.float(drawOutcome)),
		submitMs: n.unixMs(now),
		tag:      n.tag,
		delayMs:  int64((delay + time.Millisecond - 1) / time.Millisecond),
		seq:      seq,
	})
	if err != nil {
		return "", err
	}
	n.remember(s.MessageID, id)
	if cfg.lost > 0 && d.float(drawLost) < cfg.lost {
		n.lostAnswers.Add(1)
		return "", ErrLostAnswer
	}
	return id, nil
}

// clock returns the Network's monotonic clock, in nanoseconds since start.
func (n *Network) clock() int64 {
	return int64(time.Since(n.start))
}

// unixMs turns a clock reading into unix milliseconds.
func (n *Network) unixMs(clock int64) int64 {
	return (n.startNs + clock) / int64(time.Millisecond)
}

// ctxErr returns ctx.Err() if ctx is done. Unlike ctx.Err(), it does not lock
// a context shared by many submitters while the context is live.
func ctxErr(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
		return nil
	}
}

// admit takes a TPS token for a submit bound for acceptance arriving at now
// (the Network's clock) and counts it in the rate window. It reports false
// when the bucket is empty.
func (n *Network) admit(cfg *config, now int64) bool {
	n.admitMu.Lock()
	defer n.admitMu.Unlock()
	if cfg.tps > 0 && !n.bucket.take(now, cfg) {
		return false
	}
	n.window.add(now)
	return true
}

// wait sleeps for d, or until ctx is done or the network closed. A zero d
// returns at once without a timer.
func (n *Network) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.stop:
		return ErrClosed
	}
}

// accept counts the submit f describes as accepted and enqueues its receipt,
// which must be the last thing Submit does. It may move f.submitMs forward
// to keep receipts in DoneAt order.
func (n *Network) accept(f idFields) (string, error) {
	if n.onReceipt == nil {
		if n.closed.Load() {
			return "", ErrClosed
		}
		n.accepted.Add(1)
		return f.format(), nil
	}
	for {
		// Format outside the lock, then check under it that no later
		// submit time went in meanwhile (rare), which keeps DoneAt order.
		id := f.format()
		n.mu.Lock()
		if n.closed.Load() {
			n.mu.Unlock()
			return "", ErrClosed
		}
		if f.submitMs < n.lastMs {
			f.submitMs = n.lastMs
			n.mu.Unlock()
			continue
		}
		n.lastMs = f.submitMs
		n.accepted.Add(1)
		n.pushes++
		e := pending{doneMs: f.submitMs + f.delayMs, order: n.pushes, submitMs: f.submitMs, id: id, outcome: f.outcome}
		n.pending.push(e)
		wake := e.doneMs < n.wakeAt
		if wake {
			n.wakeAt = e.doneMs
		}
		n.mu.Unlock()
		if wake {
			select {
			case n.wake <- struct{}{}:
			default: // a wake-up is already on its way
			}
		}
		return id, nil
	}
}

// Stats returns the counters so far.
func (n *Network) Stats() Stats {
	n.admitMu.Lock()
	maxRate := n.window.max
	n.admitMu.Unlock()
	return Stats{
		Submits:   n.seq.Load(),
		Accepted:  n.accepted.Load(),
		Throttled: n.throttled.Load(),
		Temporary: n.temporary.Load(),
		Rejected:  n.rejected.Load(),
		Receipts:  n.receipts.Load(),
		MaxRate:   float64(maxRate),
		Canceled:  n.canceled.Load(),
		Lost:      n.lostAnswers.Load(),
	}
}

// Close stops the network: it waits for the receipt goroutine to return,
// drops pending receipts, and makes later calls return ErrClosed. Submits
// waiting out their latency return ErrClosed. It is idempotent; it must not
// be called from OnReceipt.
func (n *Network) Close() {
	n.closeOnce.Do(func() {
		n.mu.Lock()
		n.closed.Store(true) // under mu: no receipt is enqueued after this
		n.mu.Unlock()
		close(n.stop)
	})
	<-n.done
	n.mu.Lock()
	n.pending = nil
	n.mu.Unlock()
}
