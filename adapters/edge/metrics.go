package edge

import (
	"context"
	"database/sql"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twitchtv/twirp"
)

// Metrics are the service's Prometheus metrics, on a registry of their own (no global state).
type Metrics struct {
	reg           *prometheus.Registry
	httpRequests  *prometheus.CounterVec
	httpDuration  *prometheus.HistogramVec
	twirpRequests *prometheus.CounterVec
	twirpDuration *prometheus.HistogramVec
	logsCreated   prometheus.Counter
	logsDeleted   prometheus.Counter
	batchEntries  prometheus.Histogram
	// The retention sweep's.
	expired       prometheus.Counter
	sweepErrors   prometheus.Counter
	sweepDuration prometheus.Gauge
	sweepTime     prometheus.Gauge
	otlp          otlpMetrics
	alerts        alertMetrics
	bulk          otlpMetrics // the same three counts, of Elasticsearch bulk requests
	// The series of each HTTP route, method and status, and of each Twirp method and code, as
	// looked up once: WithLabelValues hashes its labels and takes a lock on every call.
	httpSeries  sync.Map // httpKey → series
	twirpSeries sync.Map // twirpKey → series
}

// series is the request counter and the latency histogram of one set of labels.
type series struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

type httpKey struct {
	route, method string
	status        int
}

type twirpKey struct{ method, code string }

// observeHTTP counts one HTTP request and its latency.
func (m *Metrics) observeHTTP(route, method string, status int, took time.Duration) {
	k := httpKey{route, method, status}
	s, ok := m.httpSeries.Load(k)
	if !ok {
		s, _ = m.httpSeries.LoadOrStore(k, series{
			count:    m.httpRequests.WithLabelValues(route, method, strconv.Itoa(status)),
			duration: m.httpDuration.WithLabelValues(route, method),
		})
	}
	s.(series).count.Inc()
	s.(series).duration.Observe(took.Seconds())
}

// observeTwirp counts one Twirp call and its latency (when known).
func (m *Metrics) observeTwirp(method, code string, took time.Duration, timed bool) {
	k := twirpKey{method, code}
	s, ok := m.twirpSeries.Load(k)
	if !ok {
		s, _ = m.twirpSeries.LoadOrStore(k, series{
			count:    m.twirpRequests.WithLabelValues(method, code),
			duration: m.twirpDuration.WithLabelValues(method),
		})
	}
	s.(series).count.Inc()
	if timed {
		s.(series).duration.Observe(took.Seconds())
	}
}

// NewMetrics registers the service's metrics, the Go and process collectors and one connection
// pool collector per named pool.
func NewMetrics(pools map[string]*sql.DB) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "obsvc_http_requests_total",
			Help: "HTTP requests by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "obsvc_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern and method, until the handler returned.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method"}),
		twirpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "obsvc_twirp_requests_total",
			Help: "Twirp calls by method and Twirp error code (ok when none).",
		}, []string{"method", "code"}),
		twirpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "obsvc_twirp_request_duration_seconds",
			Help:    "Twirp call latency by method.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method"}),
		logsCreated: counter("obsvc_log_entries_created_total",
			"Log entries stored by POST /logs."),
		logsDeleted: counter("obsvc_log_entries_deleted_total",
			"Log entries removed by DELETE /logs."),
		batchEntries: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "obsvc_log_batch_entries",
			Help:    "Entries per stored POST /logs batch.",
			Buckets: []float64{1, 10, 100, 500, 1000, 2500, 5000, 10000},
		}),
	}
	m.expired = counter("obsvc_log_entries_expired_total",
		"Log entries deleted by the retention sweep.")
	m.sweepErrors = counter("obsvc_retention_sweep_errors_total",
		"Retention sweeps that failed, in whole or for some project (retried at the next interval).")
	m.sweepDuration = gauge("obsvc_retention_last_sweep_duration_seconds",
		"How long the last retention sweep took.")
	m.sweepTime = gauge("obsvc_retention_last_sweep_timestamp_seconds",
		"When the last retention sweep ended, in Unix seconds.")
	m.reg.MustRegister(m.expired, m.sweepErrors, m.sweepDuration, m.sweepTime)
	m.otlp = newOTLPMetrics(m.reg)
	m.alerts = newAlertMetrics(m.reg)
	m.bulk = otlpMetrics{
		exports: counter("obsvc_es_bulk_requests_total",
			"Elasticsearch bulk requests (POST /_bulk) answered 200, replays included."),
		stored: counter("obsvc_es_bulk_items_stored_total",
			"Bulk items stored (a replayed request stores none)."),
		rejected: counter("obsvc_es_bulk_items_refused_total",
			"Bulk items answered with a failure status of their own (4xx, 5xx)."),
	}
	m.reg.MustRegister(m.bulk.exports, m.bulk.stored, m.bulk.rejected)
	m.reg.MustRegister(m.httpRequests, m.httpDuration, m.twirpRequests, m.twirpDuration, m.logsCreated, m.logsDeleted, m.batchEntries,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for name, db := range pools {
		m.reg.MustRegister(collectors.NewDBStatsCollector(db, name))
	}
	return m
}

// counter is a counter with no labels.
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// gauge is a gauge with no labels.
func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// LogsCreated counts a stored batch of n entries.
func (m *Metrics) LogsCreated(n int) {
	m.logsCreated.Add(float64(n))
	m.batchEntries.Observe(float64(n))
}

// LogsDeleted counts n deleted entries.
func (m *Metrics) LogsDeleted(n int64) { m.logsDeleted.Add(float64(n)) }

// alertMetrics count alert rules' evaluations and their notifications.
type alertMetrics struct {
	evaluations *prometheus.CounterVec
	duration    prometheus.Histogram
	sent        prometheus.Counter
	failed      prometheus.Counter
	pending     prometheus.Gauge
}

func newAlertMetrics(reg *prometheus.Registry) alertMetrics {
	a := alertMetrics{
		evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "obsvc_alert_evaluations_total",
			Help: "Alert rule evaluations by this instance, by result: ok (stored) or failed (tried again when next due)."}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "obsvc_alert_evaluation_duration_seconds",
			Help: "How long one alert rule's evaluation took: its count, its sample entries and its write, with its share of what it shares with its project's other rules due at once (one read of the rules, one write of the statuses that did not change).", Buckets: prometheus.ExponentialBuckets(0.001, 4, 8)}),
		sent: counter("obsvc_alert_notifications_sent_total",
			"Alert notifications delivered by this instance (the receiver answered 2xx)."),
		failed: counter("obsvc_alert_notifications_failed_total",
			"Alert notification deliveries by this instance that failed (retried with backoff)."),
		pending: gauge("obsvc_alert_outbox_pending",
			"Undelivered alert notifications in the outbox at this instance's last look (at most 1,000 are read)."),
	}
	reg.MustRegister(a.evaluations, a.duration, a.sent, a.failed, a.pending)
	return a
}

// AlertsEvaluated records one round of evaluations: how many were stored and failed, and each
// one's duration.
func (m *Metrics) AlertsEvaluated(ok, failed int, durations []time.Duration) {
	m.alerts.evaluations.WithLabelValues("ok").Add(float64(ok))
	m.alerts.evaluations.WithLabelValues("failed").Add(float64(failed))
	for _, d := range durations {
		m.alerts.duration.Observe(d.Seconds())
	}
}

// AlertsDelivered records one round of the outbox: deliveries sent and failed, and how many
// notifications were pending before it.
func (m *Metrics) AlertsDelivered(sent, failed, pending int) {
	m.alerts.sent.Add(float64(sent))
	m.alerts.failed.Add(float64(failed))
	m.alerts.pending.Set(float64(pending))
}

// otlpMetrics count OTLP exports (POST /v1/logs); their requests by status are in the HTTP
// request counter like every route's.
type otlpMetrics struct {
	exports  prometheus.Counter
	stored   prometheus.Counter
	rejected prometheus.Counter
}

func newOTLPMetrics(reg *prometheus.Registry) otlpMetrics {
	o := otlpMetrics{
		exports: counter("obsvc_otlp_exports_total",
			"OTLP log exports (POST /v1/logs) answered 200, replays included."),
		stored: counter("obsvc_otlp_log_records_stored_total",
			"OTLP log records stored (a replayed export stores none)."),
		rejected: counter("obsvc_otlp_log_records_rejected_total",
			"OTLP log records left out of an export and reported in its partial_success."),
	}
	reg.MustRegister(o.exports, o.stored, o.rejected)
	return o
}

// OTLPExported counts one answered OTLP export: the records it stored and those it rejected.
func (m *Metrics) OTLPExported(stored, rejected int) {
	m.otlp.exports.Inc()
	m.otlp.stored.Add(float64(stored))
	m.otlp.rejected.Add(float64(rejected))
}

// BulkAnswered counts one answered Elasticsearch bulk request: the items it stored and those
// it refused.
func (m *Metrics) BulkAnswered(stored, refused int) {
	m.bulk.exports.Inc()
	m.bulk.stored.Add(float64(stored))
	m.bulk.rejected.Add(float64(refused))
}

// RetentionDeleted counts the entries one committed retention transaction deleted; it is called
// as the sweep goes, so the counter moves during a long sweep and keeps what was committed
// before a crash.
func (m *Metrics) RetentionDeleted(n int64) { m.expired.Add(float64(n)) }

// RetentionSwept records the end of one retention sweep: how long it took, when it ended and
// whether it failed (in whole or for some project).
func (m *Metrics) RetentionSwept(took time.Duration, ended time.Time, failed bool) {
	m.sweepDuration.Set(took.Seconds())
	m.sweepTime.Set(float64(ended.UnixNano()) / 1e9)
	if failed {
		m.sweepErrors.Inc()
	}
}

type twirpStartKey struct{}
type twirpCodeKey struct{}

// TwirpHooks count Twirp calls by method and error code, and time them.
func (m *Metrics) TwirpHooks() *twirp.ServerHooks {
	return &twirp.ServerHooks{
		RequestReceived: func(ctx context.Context) (context.Context, error) {
			return context.WithValue(ctx, twirpStartKey{}, time.Now()), nil
		},
		Error: func(ctx context.Context, err twirp.Error) context.Context {
			return context.WithValue(ctx, twirpCodeKey{}, string(err.Code()))
		},
		ResponseSent: func(ctx context.Context) {
			method, ok := twirp.MethodName(ctx)
			if !ok {
				method = "unknown"
			}
			code, ok := ctx.Value(twirpCodeKey{}).(string)
			if !ok {
				code = "ok"
			}
			start, timed := ctx.Value(twirpStartKey{}).(time.Time)
			m.observeTwirp(method, code, time.Since(start), timed)
		},
	}
}
