package actors

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tuma-sms/tuma/carriers"
)

// metrics are the engine's Prometheus series. Labels stay bounded: network, outcome, kind.
type metrics struct {
	accepted      *prometheus.CounterVec   // network
	submitted     *prometheus.CounterVec   // network
	attempts      *prometheus.CounterVec   // network
	delivered     *prometheus.CounterVec   // network
	failed        *prometheus.CounterVec   // network, stage (submit, receipt)
	throttled     *prometheus.CounterVec   // network
	retries       *prometheus.CounterVec   // network
	submitLatency *prometheus.HistogramVec // network
	endToEnd      *prometheus.HistogramVec // network, outcome
	acceptLatency prometheus.Histogram
	breakerState  *prometheus.GaugeVec // network: 0 closed, 1 half-open, 2 open
	windowInUse   *prometheus.GaugeVec // network
	windowSize    *prometheus.GaugeVec // network
	linkQueue     *prometheus.GaugeVec // network
	restarts      *prometheus.CounterVec
	tenants       prometheus.Gauge
	jobsActive    prometheus.Gauge
	jobsWaiting   prometheus.Gauge
	receiptsQueue prometheus.Gauge
	debited       prometheus.Counter
	refunded      prometheus.Counter
	credited      prometheus.Counter
	batchSize     *prometheus.HistogramVec // op
	batchLatency  *prometheus.HistogramVec // op
	batchErrors   *prometheus.CounterVec   // op
	unmatched     prometheus.Counter

	resumed         prometheus.Counter // open messages resumed jobs read
	optedOut        prometheus.Counter // campaign messages skipped: their contact opted out
	foldedEntries   prometheus.Counter
	jobsCompleted   prometheus.Counter
	recovering      prometheus.Gauge
	recoverySeconds prometheus.Gauge

	duplicates, resentAfterCrash, lostAnswers, reused, sweepAsked, sweepExpired *prometheus.CounterVec // network
	recoveredVec                                                                *prometheus.CounterVec // network, outcome
	backlog                                                                     *prometheus.GaugeVec   // network

	net [carriers.NetworkSlots]netMetrics // per carriers.Network: the hot path's series, looked up once
}

// netMetrics are one network's series that move per message.
type netMetrics struct {
	accepted, submitted, attempts, delivered, failedSubmit, failedReceipt, throttled, retries prometheus.Counter
	duplicates, resentAfterCrash, lostAnswers, reused, sweepAsked, sweepExpired               prometheus.Counter
	recovered                                                                                 struct{ found, absent prometheus.Counter }
	submitLatency, deliveredE2E, failedE2E                                                    prometheus.Observer
	windowInUse, linkQueue, backlog                                                           prometheus.Gauge
}

// failed is the counter of messages failing at stage (submit or receipt).
func (n *netMetrics) failed(stage string) prometheus.Counter {
	if stage == "submit" {
		return n.failedSubmit
	}
	return n.failedReceipt
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	lat := []float64{.0005, .001, .0025, .005, .01, .02, .04, .06, .1, .25, .5, 1, 2.5, 5, 10}
	byNet := []string{"network"}
	m := &metrics{
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "messages", Name: "accepted_total",
			Help: "Messages accepted (durably queued) by network."}, byNet),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "link", Name: "submit_attempts_total",
			Help: "Submits a link started (its egress, as its rate cap paces it), whatever the network answered."}, byNet),
		submitted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "messages", Name: "submitted_total",
			Help: "Messages the network accepted (status sent), by network."}, byNet),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "messages", Name: "delivered_total",
			Help: "Messages delivered, by network."}, byNet),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "messages", Name: "failed_total",
			Help: "Messages failed, by network and stage (submit: never accepted; receipt: the network reported failure)."},
			[]string{"network", "stage"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "link", Name: "throttled_total",
			Help: "Submits the network answered with a throttle (retried later, not failed)."}, byNet),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "link", Name: "retries_total",
			Help: "Submits retried after a temporary failure."}, byNet),
		submitLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "tuma", Subsystem: "link", Name: "submit_duration_seconds",
			Help: "Time a network takes to answer a submit.", Buckets: lat}, byNet),
		endToEnd: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "tuma", Subsystem: "messages", Name: "end_to_end_seconds",
			Help:    "Time from acceptance to a final state (delivered or failed).",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}}, []string{"network", "outcome"}),
		acceptLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "tuma", Subsystem: "engine", Name: "accept_duration_seconds",
			Help: "Time from a send reaching its tenant to the durable commit of its job and debit.", Buckets: lat}),
		breakerState: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tuma", Subsystem: "link", Name: "breaker_state",
			Help: "Circuit breaker state per network: 0 closed, 1 half-open, 2 open."}, byNet),
		windowInUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tuma", Subsystem: "link", Name: "window_in_use",
			Help: "Submits in flight per network."}, byNet),
		windowSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tuma", Subsystem: "link", Name: "window_size",
			Help: "Most submits a link keeps in flight."}, byNet),
		linkQueue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tuma", Subsystem: "link", Name: "queue_depth",
			Help: "Messages waiting in a link for a token, a window slot or the breaker."}, byNet),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "actor", Name: "restarts_total",
			Help: "Actors restarted by their supervisor after a panic, by kind."}, []string{"kind"}),
		tenants: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tuma", Subsystem: "engine", Name: "tenants_active",
			Help: "Tenant actors alive."}),
		jobsActive: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tuma", Subsystem: "engine", Name: "jobs_active",
			Help: "Jobs dispatching now."}),
		jobsWaiting: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tuma", Subsystem: "engine", Name: "jobs_waiting",
			Help: "Jobs waiting for a dispatch slot of their tenant."}),
		receiptsQueue: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tuma", Subsystem: "receipts", Name: "queue_depth",
			Help: "Status transitions waiting to be written."}),
		debited: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "wallet", Name: "debited_cents_total",
			Help: "Cents debited for accepted sends."}),
		refunded: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "wallet", Name: "refunded_cents_total",
			Help: "Cents refunded for failed messages."}),
		credited: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "wallet", Name: "credited_cents_total",
			Help: "Cents credited (top-ups, operator credits)."}),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "tuma", Subsystem: "db", Name: "batch_size",
			Help: "Items per database batch, by operation.", Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}},
			[]string{"op"}),
		batchLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "tuma", Subsystem: "db", Name: "batch_duration_seconds",
			Help: "Time a database batch takes, by operation.", Buckets: lat}, []string{"op"}),
		batchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "db", Name: "batch_errors_total",
			Help: "Database batches that failed (and were retried), by operation."}, []string{"op"}),
		unmatched: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "receipts", Name: "unmatched_total",
			Help: "Receipts dropped because no sent message matched them after retries."}),
		resumed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "engine", Name: "messages_resumed_total",
			Help: "Unfinished messages (queued or awaiting a receipt) read back by jobs resumed after a restart."}),
		optedOut: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "campaigns", Name: "opted_out_skipped_total",
			Help: "Campaign messages not sent (and refunded) because their contact opted out after the campaign was created."}),
		foldedEntries: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "engine", Name: "progress_folded_total",
			Help: "Progress log entries folded into job counters."}),
		jobsCompleted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "engine", Name: "jobs_completed_total",
			Help: "Jobs whose every message reached a final state."}),
		recovering: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tuma", Subsystem: "engine", Name: "recovery_in_progress",
			Help: "1 while recovery is still waking the tenants of unfinished jobs, else 0."}),
		recoverySeconds: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tuma", Subsystem: "engine", Name: "recovery_duration_seconds",
			Help: "How long the last recovery took to wake every tenant with unfinished jobs (they resume them while serving)."}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "link", Name: "duplicate_requests_total",
			Help: "Submit requests dropped because the link already had (or had just submitted) the message."}, byNet),
		resentAfterCrash: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "link", Name: "resent_after_crash_total",
			Help: "Messages submitted again after a crash without the network being able to say whether it had them (possible duplicates, bounded by the windows in flight at the crash)."}, byNet),
		recoveredVec: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "link", Name: "unsettled_checked_total",
			Help: "Messages that may have reached the network before a crash, asked about before any resend, by outcome (found: not sent again; absent: sent)."},
			[]string{"network", "outcome"}),
		lostAnswers: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "link", Name: "lost_answers_total",
			Help: "Submits whose answer never came (a timeout); the network is asked whether it took them."}, byNet),
		reused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "receipts", Name: "provider_id_reused_total",
			Help: "Carrier message ids given to a second message of ours (both kept)."}, byNet),
		sweepAsked: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "sweeper", Name: "asked_total",
			Help: "Sent messages without a receipt after the receipt timeout that the sweep asked their network about."}, byNet),
		sweepExpired: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tuma", Subsystem: "sweeper", Name: "expired_total",
			Help: "Sent messages failed (and refunded) because no receipt came before the receipt deadline."}, byNet),
		backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "tuma", Subsystem: "engine", Name: "backlog_messages",
			Help: "Messages of unfinished jobs not yet delivered or failed, by network (read every few seconds)."}, byNet),
	}
	for _, c := range []prometheus.Collector{m.accepted, m.submitted, m.attempts, m.delivered, m.failed, m.throttled, m.retries,
		m.submitLatency, m.endToEnd, m.acceptLatency, m.breakerState, m.windowInUse, m.windowSize, m.linkQueue, m.restarts,
		m.tenants, m.jobsActive, m.jobsWaiting, m.receiptsQueue, m.debited, m.refunded, m.credited, m.batchSize,
		m.batchLatency, m.batchErrors, m.unmatched, m.resumed, m.optedOut, m.foldedEntries, m.jobsCompleted, m.recovering, m.recoverySeconds,
		m.duplicates, m.resentAfterCrash, m.recoveredVec, m.lostAnswers, m.reused, m.sweepAsked, m.sweepExpired, m.backlog} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Every series exists from the start, so dashboards and alerts see zeros, not nothing.
	for _, kind := range actorKinds {
		m.restarts.WithLabelValues(kind)
	}
	for _, op := range []string{"accept", "expand", "receipts", "progress", "mark"} {
		m.batchErrors.WithLabelValues(op)
	}
	for _, n := range carriers.Networks() {
		l := n.String()
		m.accepted.WithLabelValues(l)
		m.breakerState.WithLabelValues(l)
		m.net[n] = netMetrics{
			accepted:   m.accepted.WithLabelValues(l),
			duplicates: m.duplicates.WithLabelValues(l), resentAfterCrash: m.resentAfterCrash.WithLabelValues(l),
			lostAnswers: m.lostAnswers.WithLabelValues(l), reused: m.reused.WithLabelValues(l),
			sweepAsked: m.sweepAsked.WithLabelValues(l), sweepExpired: m.sweepExpired.WithLabelValues(l),
			recovered: struct{ found, absent prometheus.Counter }{m.recoveredVec.WithLabelValues(l, "found"), m.recoveredVec.WithLabelValues(l, "absent")},
			backlog:   m.backlog.WithLabelValues(l),
			submitted: m.submitted.WithLabelValues(l), attempts: m.attempts.WithLabelValues(l), delivered: m.delivered.WithLabelValues(l),
			failedSubmit: m.failed.WithLabelValues(l, "submit"), failedReceipt: m.failed.WithLabelValues(l, "receipt"),
			throttled: m.throttled.WithLabelValues(l), retries: m.retries.WithLabelValues(l),
			submitLatency: m.submitLatency.WithLabelValues(l),
			deliveredE2E:  m.endToEnd.WithLabelValues(l, "delivered"), failedE2E: m.endToEnd.WithLabelValues(l, "failed"),
			windowInUse: m.windowInUse.WithLabelValues(l), linkQueue: m.linkQueue.WithLabelValues(l),
		}
	}
	return m, nil
}
