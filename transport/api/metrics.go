package api

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tuma-sms/tuma/transport/admission"
)

// httpMetrics are labelled by route template (never the raw path), a fixed set of methods and
// the status code, so no client can create series at will.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	panics   prometheus.Counter
	shed     prometheus.Counter // refused by admission (503 overloaded)
}

// newHTTPMetrics registers the front door's series; bound reads a class's admission bound.
func newHTTPMetrics(reg prometheus.Registerer, bound func(admission.Class) int64) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tuma", Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests by route template, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "tuma", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "HTTP request latency by route template and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .02, .04, .06, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "tuma", Subsystem: "http", Name: "requests_in_flight",
			Help: "HTTP requests being served now.",
		}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tuma", Subsystem: "http", Name: "panics_total",
			Help: "Handler panics recovered into 500 responses.",
		}),
		shed: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tuma", Subsystem: "http", Name: "shed_total",
			Help: "API requests refused at once with 503 overloaded because TUMA_MAX_IN_FLIGHT were being served.",
		}),
	}
	cs := []prometheus.Collector{m.requests, m.duration, m.inFlight, m.panics, m.shed}
	for _, c := range []admission.Class{admission.Read, admission.Write} {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "tuma", Subsystem: "http", Name: "admission_limit", ConstLabels: prometheus.Labels{"class": c.String()},
			Help: "API requests of a class (read: GET and HEAD; write: the rest) the node takes at once now (adapts between a floor and TUMA_MAX_IN_FLIGHT, which also bounds both together; 0: no bound).",
		}, func() float64 { return float64(bound(c)) }))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// methodLabel maps a request method to a bounded label: the standard methods, else "other".
func methodLabel(m []byte) string {
	switch string(m) {
	case "GET":
		return "GET"
	case "POST":
		return "POST"
	case "PUT":
		return "PUT"
	case "PATCH":
		return "PATCH"
	case "DELETE":
		return "DELETE"
	case "HEAD":
		return "HEAD"
	case "OPTIONS":
		return "OPTIONS"
	}
	return "other"
}

func (m *httpMetrics) observe(route, method string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route, method).Observe(d.Seconds())
}

// routeMetrics are one route's series, looked up once: finding a labelled child hashes its
// labels under a lock, a noticeable share of a cached-key request.
type routeMetrics struct {
	m             *httpMetrics
	route, method string
	duration      prometheus.Observer
	codes         [600]atomic.Pointer[prometheus.Counter] // by status code, filled as they occur
}

func (m *httpMetrics) forRoute(route, method string) *routeMetrics {
	return &routeMetrics{m: m, route: route, method: method, duration: m.duration.WithLabelValues(route, method)}
}

func (r *routeMetrics) observe(status int, d time.Duration) {
	r.duration.Observe(d.Seconds())
	if status < 0 || status >= len(r.codes) {
		r.m.requests.WithLabelValues(r.route, r.method, strconv.Itoa(status)).Inc()
		return
	}
	c := r.codes[status].Load()
	if c == nil {
		cc := r.m.requests.WithLabelValues(r.route, r.method, strconv.Itoa(status))
		c = &cc
		r.codes[status].Store(c)
	}
	(*c).Inc()
}
