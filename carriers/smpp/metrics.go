package smpp

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the binds' series, labelled by bind name (a few per network).
type Metrics struct {
	state       *prometheus.GaugeVec     // bind: 0 down, 1 binding, 2 bound
	window      *prometheus.GaugeVec     // bind: submits awaiting their resp
	latency     *prometheus.HistogramVec // bind: submit_sm to its resp
	throttles   *prometheus.CounterVec   // bind
	reconnects  *prometheus.CounterVec   // bind
	timeouts    *prometheus.CounterVec   // bind: resps that never came
	writes      *prometheus.CounterVec   // bind: write syscalls
	writtenPDUs *prometheus.CounterVec   // bind: PDUs written (over writes: the coalescing)
	mo          *prometheus.CounterVec   // bind: mobile-originated messages handed on
}

// NewMetrics registers the bind series on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tuma_smpp_bind_state",
			Help: "SMPP bind state: 0 down, 1 binding, 2 bound."}, []string{"bind"}),
		window: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tuma_smpp_window_in_use",
			Help: "submit_sm awaiting their resp on the bind."}, []string{"bind"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tuma_smpp_submit_seconds",
			Help:    "submit_sm to submit_sm_resp.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"bind"}),
		throttles: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tuma_smpp_throttled_total",
			Help: "submit_sm answered ESME_RTHROTTLED or ESME_RMSGQFUL."}, []string{"bind"}),
		reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tuma_smpp_reconnects_total",
			Help: "Binds lost or refused and tried again."}, []string{"bind"}),
		timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tuma_smpp_response_timeouts_total",
			Help: "Requests whose resp did not come within the response timeout."}, []string{"bind"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tuma_smpp_writes_total",
			Help: "Write syscalls on the bind's socket."}, []string{"bind"}),
		writtenPDUs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tuma_smpp_pdus_written_total",
			Help: "PDUs written on the bind (several per write when coalesced)."}, []string{"bind"}),
		mo: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tuma_smpp_mo_messages_total",
			Help: "Mobile-originated messages (whole, parts joined) handed on from the bind."}, []string{"bind"}),
	}
	reg.MustRegister(m.state, m.window, m.latency, m.throttles, m.reconnects, m.timeouts, m.writes, m.writtenPDUs, m.mo)
	return m
}

// bindMetrics are one bind's series, looked up once.
type bindMetrics struct {
	state, window                                    prometheus.Gauge
	latency                                          prometheus.Observer
	throttles, reconnects, timeouts, writes, written prometheus.Counter
	mo                                               prometheus.Counter
}

func (m *Metrics) bind(name string) bindMetrics {
	if m == nil {
		m = NewMetrics(prometheus.NewRegistry())
	}
	return bindMetrics{state: m.state.WithLabelValues(name), window: m.window.WithLabelValues(name),
		latency: m.latency.WithLabelValues(name), throttles: m.throttles.WithLabelValues(name),
		reconnects: m.reconnects.WithLabelValues(name), timeouts: m.timeouts.WithLabelValues(name),
		writes: m.writes.WithLabelValues(name), written: m.writtenPDUs.WithLabelValues(name),
		mo: m.mo.WithLabelValues(name)}
}
