package smppserver

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tuma-sms/tuma/carriers/smpp"
)

// metrics are the server's series: by bind type, command and status, never by account (the
// label sets stay bounded whatever the tenants do).
type metrics struct {
	binds      *prometheus.GaugeVec     // type
	bindTries  *prometheus.CounterVec   // status
	submits    *prometheus.CounterVec   // command, status
	submitTime *prometheus.HistogramVec // command
	deliveries *prometheus.CounterVec   // kind, outcome
	lag        prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		binds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tuma_smpp_server_binds",
			Help: "Tenants' binds to the SMPP server on this node, by type (transmitter, receiver, transceiver)."}, []string{"type"}),
		bindTries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tuma_smpp_server_bind_attempts_total",
			Help: "Bind requests to the SMPP server, by the command_status answered (ESME_ROK: bound)."}, []string{"status"}),
		submits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tuma_smpp_server_submits_total",
			Help: "submit_sm, data_sm and submit_multi answered by the SMPP server, by command and command_status."}, []string{"command", "status"}),
		submitTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tuma_smpp_server_submit_duration_seconds",
			Help:    "From reading a submit to writing its resp (the send durable and charged when ESME_ROK), by command.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"command"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tuma_smpp_server_deliveries_total",
			Help: "deliver_sm the SMPP server sent tenants, by kind (receipt, inbound) and outcome (ok; refused: another status; unanswered: none in time or the bind went away; each refused or unanswered one goes again)."},
			[]string{"kind", "outcome"}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tuma_smpp_server_delivery_lag_seconds",
			Help: "Age of the oldest receipt or inbound message this node last took to deliver to a bound receiver (0 when none was due): growing, they are not being taken."}),
	}
	if reg != nil {
		reg.MustRegister(m.binds, m.bindTries, m.submits, m.submitTime, m.deliveries, m.lag)
	}
	for _, t := range []smpp.CommandID{smpp.BindTransmitter, smpp.BindReceiver, smpp.BindTransceiver} {
		m.binds.WithLabelValues(bindType(t))
	}
	for _, k := range []string{"receipt", "inbound"} {
		for _, o := range []string{"ok", "refused", "unanswered"} {
			m.deliveries.WithLabelValues(k, o)
		}
	}
	for _, c := range []smpp.CommandID{smpp.SubmitSM, smpp.DataSM, smpp.SubmitMulti} {
		m.submitTime.WithLabelValues(commandName(c))
		m.submits.WithLabelValues(commandName(c), smpp.StatusOK.String())
	}
	return m
}

// bindType names a bind by its command: transmitter, receiver or transceiver.
func bindType(id smpp.CommandID) string {
	switch id {
	case smpp.BindReceiver:
		return "receiver"
	case smpp.BindTransceiver:
		return "transceiver"
	}
	return "transmitter"
}

func commandName(id smpp.CommandID) string {
	switch id {
	case smpp.DataSM:
		return "data_sm"
	case smpp.SubmitMulti:
		return "submit_multi"
	}
	return "submit_sm"
}

// submitted counts a submit's answer and how long it took.
func (m *metrics) submitted(id smpp.CommandID, st smpp.Status, since time.Time) {
	c := commandName(id)
	m.submits.WithLabelValues(c, st.String()).Inc()
	m.submitTime.WithLabelValues(c).Observe(time.Since(since).Seconds())
}
