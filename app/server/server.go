// Package server is the one constructor of the service: from a configuration and a store it
// builds the domain core, the routes (REST, Twirp, OTLP, the docs and the explorer) behind the
// middleware chain, one line per layer, and the background jobs (the idempotency and retention
// sweeps) and side ports (METRICS_ADDR, PPROF_ADDR) that Start runs and its stop joins. The
// command (app) and every test and benchmark build the service here. What each layer does lives
// in the adapters.
package server

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/twitchtv/twirp"

	"example.com/obsvc/adapters/docs"
	"example.com/obsvc/adapters/edge"
	"example.com/obsvc/adapters/esbulk"
	"example.com/obsvc/adapters/httpapi"
	"example.com/obsvc/adapters/otlpapi"
	"example.com/obsvc/adapters/readshare"
	"example.com/obsvc/adapters/tailhub"
	"example.com/obsvc/adapters/twirpapi"
	"example.com/obsvc/adapters/ui"
	"example.com/obsvc/api/rest"
	"example.com/obsvc/domain"
)

// Server is the whole service built from a configuration and a store: the domain core with its
// limits, the API keys, the metrics and the HTTP handler that serves every route.
type Server struct {
	Core    *domain.Service
	Keys    *domain.Keys
	Metrics *edge.Metrics
	Handler http.Handler
	log     *slog.Logger
	// StopTails ends every open live tail; run calls it when the drain starts.
	StopTails func()
	// closeTails ends the live tail's readers and waits for them: the stop of Start calls it,
	// after the drain, before the owner closes the store.
	closeTails func()
	// SweepPace paces the retention sweep for the store (see Config.RetentionPace).
	SweepPace domain.SweepPace
	cfg       Config
	// holder names this instance as the evaluator of the alert rules it leases.
	holder string
	now    func() time.Time
}

// Deps are the parts of the service a test may replace; zero fields take the real ones.
type Deps struct {
	Now  func() time.Time
	Rand domain.Random
}

// New is the one constructor of the service: run and every test build it here.
func New(cfg Config, st Store, log *slog.Logger, d Deps) (*Server, error) {
	keys, err := cfg.loadKeys()
	if err != nil {
		return nil, err
	}
	limits := cfg.Limits()
	limits.MaxReadsPerKey = cfg.ReadShare(st.Pools(), runtime.GOMAXPROCS(0))
	names := httpapi.Names()
	names.Project = otlpapi.ProjectHeader
	notifier, err := cfg.notifier(log)
	if err != nil {
		return nil, err
	}
	opts := domain.Options{Limits: limits, NewID: NewID, Now: d.Now, Rand: d.Rand, TailStartTimeout: cfg.RequestTimeout,
		ReadShares: readshare.New(limits.MaxReadsPerKey, limits.ReadShareWait), Names: names, Notifier: notifier}
	closeTails := func() {}
	if ts, ok := st.(tailhub.Store); ok {
		hub := tailhub.New(ts, cfg.tailOptions())
		opts.Tailer, closeTails = hub, hub.Close
	}
	core := domain.NewService(st, opts)
	// Closed when the server starts to shut down: open tails end at once, so they never hold
	// the drain, and their clients resume on another instance.
	stopTails := make(chan struct{})
	m := edge.NewMetrics(st.Pools())
	rest, err := httpapi.NewHandler(core, httpapi.Options{
		MaxBodyBytes:  cfg.MaxBodyBytes,
		StallTimeout:  cfg.StallTO,
		Logger:        log,
		OnLogsCreated: m.LogsCreated,
		OnLogsDeleted: m.LogsDeleted,
		TailHeartbeat: cfg.TailHeartbeat,
		StopTails:     stopTails,
		// A download lasts as long as its client takes it: REQUEST_TIMEOUT bounds each of its
		// reads instead (see isLong).
		ExportPageSize:    cfg.ExportPageSize,
		ExportPageTimeout: cfg.RequestTimeout,
		TailStarted:       edge.EndAdmission, // a tail holds its in-flight share while it starts only
	})
	if err != nil {
		return nil, err
	}
	refuse := refuser(log)
	mux := http.NewServeMux()
	mux.Handle(twirpapi.PathPrefix, twirpapi.NewHandler(core, twirpapi.Options{MaxBodyBytes: cfg.TwirpMaxBody, Logger: log, Hooks: []*twirp.ServerHooks{m.TwirpHooks()}}))
	edge.RegisterHealth(mux, st)
	if cfg.MetricsAddr == "" {
		mux.Handle("GET /metrics", edge.AdminOnly(refuse, m.Handler())) // totals across projects
	}
	if err := registerDocs(mux); err != nil {
		return nil, err
	}
	// The OTLP route is hand-written (protobuf and gzip bodies, see the package) and mounted here,
	// not behind the REST validator: its query string is checked against openapi.yaml all the
	// same, and refused in OTLP's own format.
	params, err := httpapi.NewParamCheck()
	if err != nil {
		return nil, err
	}
	otlpRefuse := func(w http.ResponseWriter, r *http.Request, err error) { otlpapi.WriteError(w, r, err, log) }
	mux.Handle("POST "+otlpapi.Path, params.Middleware(otlpRefuse)(otlpapi.NewHandler(core, otlpapi.Options{
		MaxBodyBytes: cfg.OTLPMaxBody, MaxDecodes: cfg.OTLPMaxDecodes, MaxDecodesPerClient: cfg.OTLPMaxDecPer, ClientID: edge.ClientID,
		Logger: log, OnExport: m.OTLPExported,
	})))
	// The Elasticsearch bulk API and the discovery calls of the shippers that speak it are
	// hand-written too (NDJSON action/document pairs answered item by item, see the package).
	// openapi.yaml declares the query parameters of Elasticsearch's own API that they accept
	// (refresh, pipeline, timeout, ...; without effect): any other is refused, as Elasticsearch
	// refuses it, in its error shape.
	esRefuse := func(w http.ResponseWriter, r *http.Request, err error) { esbulk.WriteError(w, r, err, log) }
	esbulk.NewHandler(core, esbulk.Options{MaxBodyBytes: cfg.ESMaxBody, MaxDecodes: cfg.ESMaxDecodes, Logger: log, OnBulk: m.BulkAnswered}).
		Register(mux, params.Middleware(esRefuse))
	mux.Handle("/", rest)

	handler := edge.Chain(mux,
		edge.Observe(log, m), // request id, access log, metrics: outermost, so refusals count too
		edge.SecureHeaders,   // no-store, nosniff, no framing, on every answer
		edge.LoopbackHostsOnly(!keys.Enabled() && !cfg.AllowOpen, refuse),   // an open service answers loopback names only (DNS rebinding)
		edge.Shed(cfg.MaxInFlight, refuse),                                  // 503 past MAX_IN_FLIGHT, before any work; a tail gives its slot back once started
		edge.Deadline(cfg.RequestTimeout, either(isTwirp, isLong)),          // REQUEST_TIMEOUT on every store call; a tail or a download bounds its reads itself
		edge.AuthenticateShippers(keys, refuse, esbulk.IsRoute),             // the principal, or 401; Basic and ApiKey too on the bulk API
		edge.ShedPerClient(cfg.MaxInFlightPer, refuse),                      // 429 past MAX_IN_FLIGHT_PER_CLIENT: no one client holds every slot
		edge.WriteLimit(cfg.WriteRate, cfg.WriteBurst, isRESTWrite, refuse), // WRITE_RATE per key, 429
		edge.NotePattern, // tells Observe the route that served
	)
	handler, err = withExplorer(handler, keys, cfg, log, m, refuse)
	if err != nil {
		return nil, err
	}
	var once sync.Once
	return &Server{Core: core, Keys: keys, Metrics: m, Handler: handler, log: log,
		StopTails: func() { once.Do(func() { close(stopTails) }) }, closeTails: closeTails, SweepPace: cfg.RetentionPace(st), cfg: cfg,
		holder: NewID(), now: orNow(d.Now)}, nil
}

// orNow is now, or the wall clock when nil.
func orNow(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

// TailPath is the live tail's route: a stream held open for as long as the client reads.
const TailPath = "/logs/tail"

// isTail selects live tails, which MAX_TAILS bounds once they are open (MAX_IN_FLIGHT while they
// start) and which REQUEST_TIMEOUT does not end: it bounds each of their reads instead.
func isTail(r *http.Request) bool { return r.Method == http.MethodGet && r.URL.Path == TailPath }

// ExportPath is the download route: a stream without a row cap, which REQUEST_TIMEOUT does not
// end; it bounds each page the download reads instead, and STALL_TIMEOUT a client that stops
// taking it.
const ExportPath = "/logs/export"

// isLong selects the requests that last as long as their client reads them: live tails and
// downloads.
func isLong(r *http.Request) bool {
	return isTail(r) || (r.Method == http.MethodGet && r.URL.Path == ExportPath)
}

func either(a, b func(*http.Request) bool) func(*http.Request) bool {
	return func(r *http.Request) bool { return a(r) || b(r) }
}

// twirpPrefix is where every Twirp route lives; the Haberdasher is mounted below it.
const twirpPrefix = "/twirp/"

func isTwirp(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, twirpPrefix) }

// isRESTWrite selects the requests WRITE_RATE limits: REST writes. MakeHat stores nothing.
func isRESTWrite(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodDelete:
		return !isTwirp(r)
	}
	return false
}

// refuser answers a request the edge refuses in the protocol of the route it asked for, through
// that transport's one error mapping.
func refuser(log *slog.Logger) edge.Refuse {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		if isTwirp(r) {
			twirpapi.WriteError(w, r, err, log)
			return
		}
		if r.URL.Path == otlpapi.Path {
			otlpapi.WriteError(w, r, err, log) // google.rpc.Status, as OTLP exporters expect
			return
		}
		if esbulk.IsRoute(r) {
			esbulk.WriteError(w, r, err, log) // Elasticsearch's error shape, as shippers expect
			return
		}
		httpapi.WriteError(w, r, err, log)
	}
}

// registerDocs serves the contract and its reference.
func registerDocs(mux *http.ServeMux) error {
	h, err := docs.NewHandler(rest.SpecYAML())
	if err != nil {
		return err
	}
	h.Register(mux)
	return nil
}

// withExplorer serves the log explorer (/ui, and / redirecting to it when a browser asks) beside api, which serves
// everything else. The page and its assets hold no data and must load before anyone has typed a
// key (a browser cannot send one when it opens a page), so they pass no authentication, shedding
// or rate limit; the API calls the page makes go through api's whole chain with the user's key.
// They still get the access log, metrics, security headers and the loopback-only rule.
func withExplorer(api http.Handler, keys *domain.Keys, cfg Config, log *slog.Logger, m *edge.Metrics, refuse edge.Refuse) (http.Handler, error) {
	pages, err := ui.NewHandler()
	if err != nil {
		return nil, err
	}
	page := edge.Chain(pages, edge.Observe(log, m), edge.SecureHeaders, edge.LoopbackHostsOnly(!keys.Enabled() && !cfg.AllowOpen, refuse), edge.NotePattern)
	root := http.NewServeMux()
	for _, p := range ui.Patterns {
		root.Handle(p, page)
	}
	root.Handle("/", api)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isTwirp(r) { // no page lives there: spare Twirp's small calls a second route match
			api.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == "/" && !wantsPage(r) { // an Elasticsearch client's GET or HEAD /
			api.ServeHTTP(w, r)
			return
		}
		root.ServeHTTP(w, r)
	}), nil
}

// wantsPage says whether a request for / comes from a browser, which is sent to the explorer,
// rather than from an Elasticsearch client or shipper, which is answered the version: a browser
// asks for text/html, and the clients ask for JSON or for nothing in particular.
func wantsPage(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// Start starts the background jobs, the idempotency and retention sweeps, and the side ports
// the configuration names (METRICS_ADDR, PPROF_ADDR). They run until ctx ends or stop is
// called; stop ends them all and waits for every one of their goroutines, so the owner may close
// the store after it. Start fails, with nothing left running, when a side port cannot listen.
func (s *Server) Start(ctx context.Context) (stop func(), err error) {
	bgCtx, cancel := context.WithCancel(ctx)
	var jobs sync.WaitGroup
	var closers []func()
	stop = func() {
		for _, c := range slices.Backward(closers) {
			c()
		}
		cancel()
		jobs.Wait()
		s.closeTails()
	}
	jobs.Go(func() { s.sweepIdempotency(bgCtx) })
	jobs.Go(func() { s.sweepRetention(bgCtx, s.cfg.RetentionEvery) })
	jobs.Go(func() { s.evaluateAlerts(bgCtx) })
	jobs.Go(func() { s.deliverAlerts(bgCtx) })
	for _, p := range []sidePort{
		{"metrics", "METRICS_ADDR", s.cfg.MetricsAddr, metricsMux(s.Metrics)},
		{"pprof", "PPROF_ADDR", s.cfg.PprofAddr, pprofMux()},
	} {
		if p.addr == "" {
			continue
		}
		closeSide, err := p.serve(s.log, &jobs)
		if err != nil {
			stop()
			return nil, err
		}
		closers = append(closers, closeSide)
	}
	return stop, nil
}

// idempotencySweepInterval is how often forgotten idempotency keys are deleted.
const idempotencySweepInterval = 10 * time.Minute

// sweepIdempotency deletes idempotency keys past their window, and alert notifications
// delivered more than a day ago, until ctx ends; a failed sweep is logged and tried again at the
// next interval.
func (s *Server) sweepIdempotency(ctx context.Context) {
	every(ctx, idempotencySweepInterval, func() {
		if n, err := s.Core.SweepIdempotency(ctx); err != nil {
			s.log.Warn("sweep idempotency keys", "err", err)
		} else if n > 0 {
			s.log.Debug("swept idempotency keys", "deleted", n)
		}
		if n, err := s.Core.SweepOutbox(ctx); err != nil {
			s.log.Warn("sweep delivered alert notifications", "err", err)
		} else if n > 0 {
			s.log.Debug("swept delivered alert notifications", "deleted", n)
		}
	})
}

// every calls fn every interval until ctx ends. A call that outlasts the interval is followed by
// the next one at once (the ticker drops the ticks it missed).
func every(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// evaluateAlerts evaluates the alert rules that are due, those whose lease this instance
// takes, every ALERT_EVAL_INTERVAL until ctx ends. A failure is logged and counted; the rule is
// due again at once.
func (s *Server) evaluateAlerts(ctx context.Context) {
	every(ctx, s.cfg.AlertEvalEvery, func() {
		rep, err := s.Core.EvaluateDue(ctx, s.holder, s.now())
		if ctx.Err() != nil {
			return // stopped by shutdown: not a failure
		}
		s.Metrics.AlertsEvaluated(rep.Evaluated, rep.Failed, rep.Durations)
		if err != nil {
			s.log.Warn("alert evaluation", "err", err)
		}
		for _, err := range rep.Errs {
			s.log.Warn("alert evaluation", "err", err)
		}
	})
}

// deliverAlerts sends undelivered notifications every ALERT_DELIVER_INTERVAL until ctx ends.
func (s *Server) deliverAlerts(ctx context.Context) {
	every(ctx, s.cfg.AlertDeliverEvery, func() {
		rep, err := s.Core.DeliverOutbox(ctx)
		if ctx.Err() != nil {
			return
		}
		s.Metrics.AlertsDelivered(rep.Sent, rep.Failed, rep.Pending)
		if err != nil {
			s.log.Warn("alert delivery", "err", err)
		}
		for _, err := range rep.Errs {
			s.log.Info("alert delivery", "err", err)
		}
	})
}

// SingleWriterSweepBatch caps RETENTION_BATCH on a store with one writer (SQLite): a batch
// holds every ingest transaction back while it runs, so it is kept to tens of milliseconds
// and an ingest request waits at most that long for it.
const SingleWriterSweepBatch = 1000

// sweepLagIntervals is how many RETENTION_INTERVALs back an expired entry counts as backlog,
// which the sweep paces; what expired since is steady expiry, swept without rest.
const sweepLagIntervals = 3

// RetentionPace is how the retention sweep works on st. While ingest through this instance
// competes with it, the sweep rests between its transactions so that it spends at most
// RETENTION_DUTY of its time in them; with no ingest it sweeps at full speed. Measured on
// both stores (BenchmarkIngestDuringSweep), an unrested sweep cost ingest a third of its rate
// on PostgreSQL too, whose deletes share the CPU and WAL with the inserts even though they do
// not lock them. A store with one writer (SQLite) also sweeps in batches of at most
// SingleWriterSweepBatch, since each batch holds every ingest transaction back while it runs.
func (c Config) RetentionPace(st Store) domain.SweepPace {
	batch := c.RetentionBatch
	if one, ok := st.(interface{ SingleWriter() bool }); ok && one.SingleWriter() {
		batch = min(batch, SingleWriterSweepBatch)
	}
	return domain.SweepPace{Batch: batch, Duty: c.RetentionDuty, Lag: sweepLagIntervals * c.RetentionEvery}
}

// sweepRetention deletes entries past their project's retention every interval until ctx ends,
// paced by s.SweepPace. A failed sweep is logged, counted and tried again at the next
// interval; it never stops the server. Another instance sweeping the same database is no error.
// A sweep that outlasts the interval is followed by the next one at once (see every).
func (s *Server) sweepRetention(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func() {
		start := time.Now()
		res, err := s.Core.SweepRetention(ctx, s.SweepPace, func(n int64) {
			s.Metrics.RetentionDeleted(n)
			s.log.Debug("retention batch deleted", "deleted", n)
		})
		if ctx.Err() != nil {
			return // stopped mid-sweep by shutdown: not a failure
		}
		s.Metrics.RetentionSwept(time.Since(start), time.Now(), err != nil)
		switch {
		case err != nil:
			s.log.Warn("retention sweep", "err", err, "deleted", res.Deleted)
		case res.Deleted > 0:
			s.log.Info("retention sweep", "deleted", res.Deleted, "duration_ms", time.Since(start).Milliseconds())
		case res.Busy:
			s.log.Debug("retention sweep left to another instance")
		}
	})
}

// sidePort is a server on an address of its own beside the service's (METRICS_ADDR,
// PPROF_ADDR): name is for the log, setting for errors.
type sidePort struct {
	name, setting, addr string
	handler             http.Handler
}

// serve listens on the port's address and serves its handler, the server goroutine joining jobs;
// the returned func stops it.
func (p sidePort) serve(log *slog.Logger, jobs *sync.WaitGroup) (func(), error) {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s %s: %w", p.setting, p.addr, err)
	}
	srv := &http.Server{Handler: p.handler, ReadHeaderTimeout: 10 * time.Second}
	jobs.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(p.name+" server", "err", err)
		}
	})
	log.Info(p.name+" listening", "addr", ln.Addr().String())
	return func() { _ = srv.Close() }, nil
}

// metricsMux serves /metrics.
func metricsMux(m *edge.Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	return mux
}

// pprofMux serves Go's runtime profiles (net/http/pprof), on PPROF_ADDR, which validate has held
// to loopback: they show the service's internals and cost CPU while taken.
func pprofMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// NewID makes the service's ids: UUIDv7 (RFC 9562), time-ordered and, within this process,
// strictly increasing, so entries of one batch list in the order they were sent.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// Store is what the service needs of a storage adapter.
type Store interface {
	domain.Store
	Ping(ctx context.Context) error
	Pools() map[string]*sql.DB
	Close() error
}
