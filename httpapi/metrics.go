package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the HTTP server's own Prometheus metrics.
type Metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewMetrics registers the HTTP metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "telemetry_http_requests_total", Help: "HTTP requests by route and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "telemetry_http_request_duration_seconds", Help: "HTTP request latency by route.",
			// Fine between 5 and 100 ms, where ingest answers: a p99 read
			// from the histogram is interpolated within one bucket.
			Buckets: []float64{.001, .0025, .005, .0075, .01, .015, .02, .025, .03, .04, .05, .06, .075, .1, .15, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

// observe records one request. Labels come from the route table, never
// verbatim from the request: route is the matched route's pattern, and a
// method outside the standard set counts as "other", so that requests with
// made-up methods or paths cannot grow the label sets without end.
func (m *Metrics) observe(method, route string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	if !standardMethods[method] {
		method = "other"
	}
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(method, route).Observe(d.Seconds())
}

var standardMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}
