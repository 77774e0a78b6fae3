package webhooks

import "github.com/prometheus/client_golang/prometheus"

// Attempt outcomes, the values of tuma_webhook_attempts_total's outcome label.
const (
	outcomeSucceeded = "succeeded"  // a 2xx within the timeout
	outcomeStatus    = "http_error" // any other status (3xx included: redirects are not followed)
	outcomeTimeout   = "timeout"    // no answer within the timeout
	outcomeNetwork   = "connection" // refused, reset, closed, TLS, DNS
	outcomeRefused   = "refused"    // the address is not allowed (SSRF rules at dial time)
)

// Metrics of webhook delivery. No label names an endpoint or an account.
type Metrics struct {
	attempts   *prometheus.CounterVec
	firstTry   prometheus.Histogram
	delivered  prometheus.Histogram
	pending    prometheus.Gauge
	queued     prometheus.Gauge
	lag        prometheus.Gauge
	disabled   *prometheus.CounterVec
	retentions prometheus.Counter
}

// NewMetrics registers the webhook metrics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	lat := []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 6 * 3600, 24 * 3600, 72 * 3600}
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tuma_webhook_attempts_total",
			Help: "Webhook delivery attempts by outcome: succeeded, http_error, timeout, connection, refused."}, []string{"outcome"}),
		firstTry: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tuma_webhook_event_first_attempt_seconds",
			Help: "Time from an event's change to the first attempt to deliver it.", Buckets: lat}),
		delivered: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tuma_webhook_event_delivered_seconds",
			Help: "Time from an event's change to the attempt that delivered it.", Buckets: lat}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tuma_webhook_deliveries_pending",
			Help: "Webhook deliveries pending: an attempt under way or a retry waiting."}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tuma_webhook_events_queued",
			Help: "Webhook events written and not yet in a delivery (an open circuit or a disabled endpoint keeps them)."}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tuma_webhook_lag_seconds",
			Help: "Age of the oldest webhook work only Tuma holds up: an event of a healthy endpoint not yet in a delivery, or a delivery past due."}),
		disabled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tuma_webhook_endpoints_disabled_total",
			Help: "Webhook endpoints disabled by delivery outcomes: gone (410), failing (no success for the failing limit)."}, []string{"reason"}),
		retentions: prometheus.NewCounter(prometheus.CounterOpts{Name: "tuma_webhook_pruned_total",
			Help: "Webhook deliveries and outbox rows deleted by retention."}),
	}
	for _, o := range []string{outcomeSucceeded, outcomeStatus, outcomeTimeout, outcomeNetwork, outcomeRefused} {
		m.attempts.WithLabelValues(o)
	}
	m.disabled.WithLabelValues("gone")
	m.disabled.WithLabelValues("failing")
	reg.MustRegister(m.attempts, m.firstTry, m.delivered, m.pending, m.queued, m.lag, m.disabled, m.retentions)
	return m
}
