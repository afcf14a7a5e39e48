package edge

import (
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twitchtv/twirp"

	"example.com/obsvc/domain"
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
		logsCreated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "obsvc_log_entries_created_total",
			Help: "Log entries stored by POST /logs.",
		}),
		logsDeleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "obsvc_log_entries_deleted_total",
			Help: "Log entries removed by DELETE /logs.",
		}),
		batchEntries: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "obsvc_log_batch_entries",
			Help:    "Entries per stored POST /logs batch.",
			Buckets: []float64{1, 10, 100, 500, 1000, 2500, 5000, 10000},
		}),
	}
	m.expired = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "obsvc_log_entries_expired_total",
		Help: "Log entries deleted by the retention sweep.",
	})
	m.sweepErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "obsvc_retention_sweep_errors_total",
		Help: "Retention sweeps that failed, in whole or for some project (retried at the next interval).",
	})
	m.sweepDuration = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "obsvc_retention_last_sweep_duration_seconds",
		Help: "How long the last retention sweep took.",
	})
	m.sweepTime = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "obsvc_retention_last_sweep_timestamp_seconds",
		Help: "When the last retention sweep ended, in Unix seconds.",
	})
	m.reg.MustRegister(m.expired, m.sweepErrors, m.sweepDuration, m.sweepTime)
	m.otlp = newOTLPMetrics(m.reg)
	m.reg.MustRegister(m.httpRequests, m.httpDuration, m.twirpRequests, m.twirpDuration, m.logsCreated, m.logsDeleted, m.batchEntries,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for name, db := range pools {
		m.reg.MustRegister(collectors.NewDBStatsCollector(db, name))
	}
	return m
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

// otlpMetrics count OTLP exports (POST /v1/logs); their requests by status are in the HTTP
// request counter like every route's.
type otlpMetrics struct {
	exports  prometheus.Counter
	stored   prometheus.Counter
	rejected prometheus.Counter
}

func newOTLPMetrics(reg *prometheus.Registry) otlpMetrics {
	o := otlpMetrics{
		exports: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "obsvc_otlp_exports_total",
			Help: "OTLP log exports (POST /v1/logs) answered 200, replays included.",
		}),
		stored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "obsvc_otlp_log_records_stored_total",
			Help: "OTLP log records stored (a replayed export stores none).",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "obsvc_otlp_log_records_rejected_total",
			Help: "OTLP log records left out of an export and reported in its partial_success.",
		}),
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

// maxRequestIDLen caps a client's X-Request-Id.
const maxRequestIDLen = 128

// ValidRequestID accepts 1..maxRequestIDLen visible ASCII characters: safe to log and echo.
func ValidRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// quietRoute reports routes logged at debug level: probes and scrapes would drown the access log.
func quietRoute(route string) bool {
	switch route {
	case "GET /healthz", "GET /readyz", "GET /metrics":
		return true
	}
	return false
}

// Observe is the outermost middleware: it takes or makes the request id, puts it in the context
// and the response, and after the request writes one access log line and the HTTP metrics,
// labelled by the ServeMux pattern that served it (never the raw path; see NotePattern).
//
// It runs on every request, MakeHat's few-microsecond calls included, so it copies the request
// once (the id in the context) and hands the route back through its response writer rather than
// a second context value and copy.
func Observe(log *slog.Logger, m *Metrics) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			id := r.Header.Get("X-Request-Id")
			if !ValidRequestID(id) {
				id = newRequestID()
			}
			w.Header()["X-Request-Id"] = []string{id}
			r = r.WithContext(domain.WithRequestID(r.Context(), id))
			rec := &responseRecorder{ResponseWriter: w, status: http.StatusOK}
			defer func() {
				// Also on panic (then the connection is dropped): the line and the metrics still count it.
				elapsed := time.Since(start)
				route := rec.pattern
				if route == "" {
					route = "unmatched"
				}
				method := methodLabel(r.Method)
				m.observeHTTP(route, method, rec.status, elapsed)
				level := slog.LevelInfo
				if quietRoute(route) {
					level = slog.LevelDebug
				}
				log.LogAttrs(r.Context(), level, "request",
					slog.String("method", method),
					slog.String("route", route),
					slog.Int("status", rec.status),
					slog.Int64("bytes", rec.bytes),
					slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
				)
			}()
			next.ServeHTTP(rec, r)
		})
	}
}

// methodLabel bounds the method a metric label or log field may show: any token is a valid
// method to net/http, and each invented one would otherwise make new series that live until
// restart. Methods outside RFC 9110's set and PATCH become "other".
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

// NotePattern sits right around the mux and records the pattern it (or a mux nested in it)
// chose for the request in Observe's response writer, found through the writers' Unwrap chain:
// the middleware between them hand on copies of the request (WithContext), and ServeMux writes
// the pattern into the copy it is given.
func NotePattern(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if rec := recorderOf(w); rec != nil {
				rec.pattern = r.Pattern
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// recorderOf finds Observe's writer in w or among the writers w wraps.
func recorderOf(w http.ResponseWriter) *responseRecorder {
	for range 16 { // a bound against a writer that unwraps to itself
		switch v := w.(type) {
		case *responseRecorder:
			return v
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return nil
		}
	}
	return nil
}

// responseRecorder notes the status and body size of a response on its way out.
type responseRecorder struct {
	http.ResponseWriter
	status  int
	bytes   int64
	wrote   bool
	pattern string // the route that served, from NotePattern
}

func (r *responseRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *responseRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *responseRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Pinger is what readiness needs of a store.
type Pinger interface {
	Ping(ctx context.Context) error
}

// ReadyTimeout bounds the store check of /readyz.
const ReadyTimeout = 2 * time.Second

// RegisterHealth serves liveness (the process serves) and readiness (the store answers; migrations
// ran when it opened) on mux.
func RegisterHealth(mux *http.ServeMux, st Pinger) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
		defer cancel()
		if err := st.Ping(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "the store does not answer"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is out; nobody to tell of a failed write
}

// ContextHandler adds the request id a context carries to every log record made with it, so the
// store's and adapters' logs name the request they served.
type ContextHandler struct{ slog.Handler }

func (h ContextHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := domain.RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h ContextHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return ContextHandler{h.Handler.WithAttrs(as)}
}

func (h ContextHandler) WithGroup(name string) slog.Handler {
	return ContextHandler{h.Handler.WithGroup(name)}
}
