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
	fencedWrites  *prometheus.CounterVec // write: debit, mark
	members       prometheus.Gauge
	lapses        prometheus.Counter
	takeovers     prometheus.Counter
	handoffs      *prometheus.CounterVec // why: moved, fenced
	leaseHeld     *prometheus.GaugeVec   // lease
	crossNode     *prometheus.CounterVec // kind: request, tell, received

	resumed         prometheus.Counter // open messages resumed jobs read
	optedOut        prometheus.Counter // campaign messages skipped: their contact opted out
	foldedEntries   prometheus.Counter
	jobsCompleted   prometheus.Counter
	recovering      prometheus.Gauge
	recoverySeconds prometheus.Gauge
	orphans         prometheus.Counter

	duplicates, resentAfterCrash, lostAnswers, reused, sweepAsked, sweepExpired *prometheus.CounterVec // network
	recoveredVec                                                                *prometheus.CounterVec // network, outcome
	backlog                                                                     *prometheus.GaugeVec   // network

	net [carriers.NetworkSlots]netMetrics // per carriers.Network: the hot path's series, looked up once
}

// netMetrics are one network's series that move per message.
type netMetrics struct {
	accepted, submitted, attempts, delivered, failedSubmit, failedReceipt, throttled, retries prometheus.Counter
	duplicates, resentAfterCrash, lostAnswers, reused, sweepAsked, sweepExpired               prometheus.Counter
	recovered                                                                                 struct{ found, absent, notYet, recorded prometheus.Counter }
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
	e2e := []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
	sizes := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}
	s := &series{reg: reg}
	m := &metrics{
		accepted: s.counterVec("messages", "accepted_total",
			"Messages accepted (durably queued) by network.", "network"),
		attempts: s.counterVec("link", "submit_attempts_total",
			"Submits a link started (its egress, as its rate cap paces it), whatever the network answered.", "network"),
		submitted: s.counterVec("messages", "submitted_total",
			"Messages the network accepted (status sent), by network.", "network"),
		delivered: s.counterVec("messages", "delivered_total",
			"Messages delivered, by network.", "network"),
		failed: s.counterVec("messages", "failed_total",
			"Messages failed, by network and stage (submit: never accepted; receipt: the network reported failure).", "network", "stage"),
		throttled: s.counterVec("link", "throttled_total",
			"Submits the network answered with a throttle (retried later, not failed).", "network"),
		retries: s.counterVec("link", "retries_total",
			"Submits retried after a temporary failure.", "network"),
		submitLatency: s.histogramVec("link", "submit_duration_seconds",
			"Time a network takes to answer a submit.", lat, "network"),
		endToEnd: s.histogramVec("messages", "end_to_end_seconds",
			"Time from acceptance to a final state (delivered or failed).", e2e, "network", "outcome"),
		acceptLatency: s.histogram("engine", "accept_duration_seconds",
			"Time from a send reaching its tenant to the durable commit of its job and debit.", lat),
		breakerState: s.gaugeVec("link", "breaker_state",
			"Circuit breaker state per network: 0 closed, 1 half-open, 2 open.", "network"),
		windowInUse: s.gaugeVec("link", "window_in_use",
			"Submits in flight per network.", "network"),
		windowSize: s.gaugeVec("link", "window_size",
			"Most submits a link keeps in flight.", "network"),
		linkQueue: s.gaugeVec("link", "queue_depth",
			"Messages waiting in a link for a token, a window slot or the breaker.", "network"),
		restarts: s.counterVec("actor", "restarts_total",
			"Actors restarted by their supervisor after a panic, by kind.", "kind"),
		tenants: s.gauge("engine", "tenants_active",
			"Tenant actors alive."),
		jobsActive: s.gauge("engine", "jobs_active",
			"Jobs dispatching now."),
		jobsWaiting: s.gauge("engine", "jobs_waiting",
			"Jobs waiting for a dispatch slot of their tenant."),
		receiptsQueue: s.gauge("receipts", "queue_depth",
			"Status transitions waiting to be written."),
		debited: s.counter("wallet", "debited_cents_total",
			"Cents debited for accepted sends."),
		refunded: s.counter("wallet", "refunded_cents_total",
			"Cents refunded for failed messages."),
		credited: s.counter("wallet", "credited_cents_total",
			"Cents credited (top-ups, operator credits)."),
		batchSize: s.histogramVec("db", "batch_size",
			"Items per database batch, by operation.", sizes, "op"),
		batchLatency: s.histogramVec("db", "batch_duration_seconds",
			"Time a database batch takes, by operation.", lat, "op"),
		batchErrors: s.counterVec("db", "batch_errors_total",
			"Database batches that failed (and were retried), by operation.", "op"),
		fencedWrites: s.counterVec("cluster", "fenced_writes_total",
			"Writes refused because a newer incarnation of the account's tenant holds its fence: debits (sends refused), submits not marked (not sent), and marked submits a node paused past its limit did not make, by write.", "write"),
		members: s.gauge("cluster", "members",
			"Nodes in the cluster as this node sees them (1 for a single node)."),
		takeovers: s.counter("cluster", "takeovers_total",
			"Accounts this node's tenants took over from another node's (the fence was that node's): their marked submits are asked about before any resend."),
		handoffs: s.counterVec("cluster", "handoffs_total",
			"Tenants this node stopped because their account went to another node, by why: moved (the membership changed) or fenced (another incarnation took its fence).", "why"),
		leaseHeld: s.gaugeVec("cluster", "lease_held",
			"1 while this node holds the named worker lease (work one node at a time does: sweeper, reconciler), else 0.", "lease"),
		lapses: s.counter("cluster", "lapses_total",
			"Times this node found it had been paused past TUMA_CLUSTER_PAUSE_LIMIT (it then stops submitting and restarts to rejoin)."),
		crossNode: s.counterVec("cluster", "messages_total",
			"Commands for accounts another node owns, by kind: requests and tells this node sent there, commands it received from other nodes.", "kind"),
		unmatched: s.counter("receipts", "unmatched_total",
			"Receipts dropped because no sent message matched them after retries."),
		resumed: s.counter("engine", "messages_resumed_total",
			"Unfinished messages (queued or awaiting a receipt) read back by jobs resumed after a restart."),
		optedOut: s.counter("campaigns", "opted_out_skipped_total",
			"Campaign messages not sent (and refunded) because their contact opted out after the campaign was created."),
		foldedEntries: s.counter("engine", "progress_folded_total",
			"Progress log entries folded into job counters."),
		jobsCompleted: s.counter("engine", "jobs_completed_total",
			"Jobs whose every message reached a final state."),
		recovering: s.gauge("engine", "recovery_in_progress",
			"1 while recovery is still waking the tenants of unfinished jobs, else 0."),
		recoverySeconds: s.gauge("engine", "recovery_duration_seconds",
			"How long the last recovery took to wake every tenant with unfinished jobs (they resume them while serving)."),
		orphans: s.counter("engine", "orphaned_accounts_woken_total",
			"Accounts of this node the orphan sweep found with unfinished jobs and no tenant, and woke (TUMA_ORPHAN_SWEEP); anything but 0 is a handoff that lost its jobs for a while."),
		duplicates: s.counterVec("link", "duplicate_requests_total",
			"Submit requests dropped because the link already had (or had just submitted) the message.", "network"),
		resentAfterCrash: s.counterVec("link", "resent_after_crash_total",
			"Messages submitted again after a crash without the network being able to say whether it had them (possible duplicates, bounded by the windows in flight at the crash).", "network"),
		recoveredVec: s.counterVec("link", "unsettled_checked_total",
			"Messages that may have reached the network before a crash or a takeover, asked about before any resend, by outcome (found: not sent again; absent: sent; not_yet: absent while another node's submit may still arrive, asked again after TUMA_TAKEOVER_SETTLE; recorded: a network that cannot be asked, and the other node recorded the outcome meanwhile, not sent again).", "network", "outcome"),
		lostAnswers: s.counterVec("link", "lost_answers_total",
			"Submits whose answer never came (a timeout); the network is asked whether it took them.", "network"),
		reused: s.counterVec("receipts", "provider_id_reused_total",
			"Carrier message ids given to a second message of ours (both kept).", "network"),
		sweepAsked: s.counterVec("sweeper", "asked_total",
			"Sent messages without a receipt after the receipt timeout that the sweep asked their network about.", "network"),
		sweepExpired: s.counterVec("sweeper", "expired_total",
			"Sent messages failed (and refunded) because no receipt came before the receipt deadline.", "network"),
		backlog: s.gaugeVec("engine", "backlog_messages",
			"Messages of unfinished jobs not yet delivered or failed, by network (read every few seconds).", "network"),
	}
	if s.err != nil {
		return nil, s.err
	}
	// Every series exists from the start, so dashboards and alerts see zeros, not nothing.
	for _, kind := range actorKinds {
		m.restarts.WithLabelValues(kind)
	}
	for _, op := range []string{"accept", "expand", "receipts", "progress", "mark"} {
		m.batchErrors.WithLabelValues(op)
	}
	for _, w := range []string{"moved", "fenced"} {
		m.handoffs.WithLabelValues(w)
	}
	m.leaseHeld.WithLabelValues("sweeper") // 0 until it is held
	for _, w := range []string{"debit", "mark", "submit"} {
		m.fencedWrites.WithLabelValues(w)
	}
	for _, k := range []string{"request", "tell", "received"} {
		m.crossNode.WithLabelValues(k)
	}
	m.members.Set(1)
	for _, n := range carriers.Networks() {
		l := n.String()
		m.accepted.WithLabelValues(l)
		m.breakerState.WithLabelValues(l)
		m.net[n] = netMetrics{
			accepted:   m.accepted.WithLabelValues(l),
			duplicates: m.duplicates.WithLabelValues(l), resentAfterCrash: m.resentAfterCrash.WithLabelValues(l),
			lostAnswers: m.lostAnswers.WithLabelValues(l), reused: m.reused.WithLabelValues(l),
			sweepAsked: m.sweepAsked.WithLabelValues(l), sweepExpired: m.sweepExpired.WithLabelValues(l),
			recovered: struct{ found, absent, notYet, recorded prometheus.Counter }{m.recoveredVec.WithLabelValues(l, "found"),
				m.recoveredVec.WithLabelValues(l, "absent"), m.recoveredVec.WithLabelValues(l, "not_yet"),
				m.recoveredVec.WithLabelValues(l, "recorded")},
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

// series makes the engine's series in the tuma namespace and registers each as it is made. It
// keeps the first error, after which it registers nothing more.
type series struct {
	reg prometheus.Registerer
	err error
}

func register[C prometheus.Collector](s *series, c C) C {
	if s.err == nil {
		s.err = s.reg.Register(c)
	}
	return c
}

func opts(sub, name, help string) prometheus.Opts {
	return prometheus.Opts{Namespace: "tuma", Subsystem: sub, Name: name, Help: help}
}

func (s *series) counter(sub, name, help string) prometheus.Counter {
	return register(s, prometheus.NewCounter(prometheus.CounterOpts(opts(sub, name, help))))
}

func (s *series) counterVec(sub, name, help string, labels ...string) *prometheus.CounterVec {
	return register(s, prometheus.NewCounterVec(prometheus.CounterOpts(opts(sub, name, help)), labels))
}

func (s *series) gauge(sub, name, help string) prometheus.Gauge {
	return register(s, prometheus.NewGauge(prometheus.GaugeOpts(opts(sub, name, help))))
}

func (s *series) gaugeVec(sub, name, help string, labels ...string) *prometheus.GaugeVec {
	return register(s, prometheus.NewGaugeVec(prometheus.GaugeOpts(opts(sub, name, help)), labels))
}

func (s *series) histogram(sub, name, help string, buckets []float64) prometheus.Histogram {
	return register(s, prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "tuma", Subsystem: sub, Name: name, Help: help, Buckets: buckets}))
}

func (s *series) histogramVec(sub, name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return register(s, prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "tuma", Subsystem: sub, Name: name, Help: help, Buckets: buckets}, labels))
}
