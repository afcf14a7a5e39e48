// Command obsvc serves the observability REST API and the Twirp Haberdasher on one port.
//
//	go run ./app            # SQLite under ./data, port 8080
//	go run ./app -h         # every setting, its environment variable and default
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/docs"
	"example.com/obsvc/adapters/httpapi"
	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/twirpapi"
	"example.com/obsvc/api/rest"
	"example.com/obsvc/domain"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "obsvc:", err)
		os.Exit(1)
	}
}

// run parses the configuration, opens the store and serves until ctx ends, then drains in-flight
// requests (up to the shutdown timeout) and closes the store.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	log := newLogger(stdout, cfg.LogLevel)
	cfg.logEffective(log)
	keys, err := cfg.loadKeys()
	if err != nil {
		return err
	}
	if !keys.Enabled() {
		log.Warn("no API keys configured: the service is open to anyone who can reach it")
	}
	if getenv("GOMEMLIMIT") == "" && cfg.MemoryLimit > 0 {
		// A soft limit keeps bursts of large batches (16 x 10,000 entries) within about 150 MiB
		// of RSS: without it the heap may double before each collection.
		debug.SetMemoryLimit(cfg.MemoryLimit)
	}

	st, err := openStore(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Error("close store", "err", err)
		}
	}()

	svc := domain.NewService(st, domain.Options{Limits: cfg.limits(), NewID: newID})
	go sweepIdempotency(ctx, svc, log)
	m := newMetrics(st.Pools())
	handler, err := newHandler(svc, st, cfg, keys, log, m)
	if err != nil {
		return err
	}
	if cfg.MetricsAddr != "" {
		stopMetrics, err := serveMetrics(cfg.MetricsAddr, m, log)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: cfg.ReadHeaderTO,
		ReadTimeout:       cfg.ReadTO,
		WriteTimeout:      cfg.WriteTO,
		IdleTimeout:       cfg.IdleTO,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("listening", "addr", ln.Addr().String(), "store", storeKind(cfg.DatabaseURL))

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}

	log.Info("shutting down", "drain_timeout", cfg.ShutdownTimeout.String())
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(drainCtx); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	log.Info("stopped")
	return nil
}

// sweepInterval is how often forgotten idempotency keys are deleted.
const sweepInterval = 10 * time.Minute

// sweepIdempotency deletes idempotency keys past their window until ctx ends.
func sweepIdempotency(ctx context.Context, svc *domain.Service, log *slog.Logger) {
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := svc.SweepIdempotency(ctx); err != nil {
				log.Warn("sweep idempotency keys", "err", err)
			} else if n > 0 {
				log.Debug("swept idempotency keys", "deleted", n)
			}
		}
	}
}

// newHandler wires the REST API, the Twirp service, health checks and (unless it has an address
// of its own) /metrics on one mux, behind the request-id, access-log and metrics middleware.
// Tests call it too.
func newHandler(svc *domain.Service, st store, cfg config, keys *domain.Keys, log *slog.Logger, m *metrics) (http.Handler, error) {
	restHandler, err := httpapi.NewHandler(svc, httpapi.Options{
		MaxBodyBytes:  cfg.MaxBodyBytes,
		Logger:        log,
		OnLogsCreated: m.logsCreated,
		OnLogsDeleted: m.logsRemoved,
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(twirpapi.PathPrefix, twirpapi.NewHandler(svc, log, m.twirpHooks()))
	healthHandlers(mux, st)
	if cfg.MetricsAddr == "" {
		mux.Handle("GET /metrics", m.handler())
	}
	docsHandler, err := docs.NewHandler(rest.SpecYAML())
	if err != nil {
		return nil, err
	}
	docsHandler.Register(mux)
	mux.Handle("/", restHandler)
	refuse := refuser{log: log}
	limiter := newWriteLimiter(cfg.WriteRate, cfg.WriteBurst, refuse)
	return observe(shed(cfg.MaxInFlight, refuse, deadline(cfg.RequestTimeout, authenticate(keys, refuse, limiter.middleware(notePattern(mux))))), log, m), nil
}

// serveMetrics serves /metrics on an address of its own; the returned func stops it.
func serveMetrics(addr string, m *metrics, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on METRICS_ADDR %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	}()
	log.Info("metrics listening", "addr", ln.Addr().String())
	return func() { _ = srv.Close() }, nil
}

// newID makes the service's ids: UUIDv7 (RFC 9562), time-ordered and, within this process,
// strictly increasing, so entries of one batch list in the order they were sent.
func newID() string { return uuid.Must(uuid.NewV7()).String() }

// store is what the service needs of a storage adapter.
type store interface {
	domain.Store
	Ping(ctx context.Context) error
	Pools() map[string]*sql.DB
	Close() error
}

// openStore opens the store DATABASE_URL names.
func openStore(ctx context.Context, dbURL string) (store, error) {
	switch {
	case dbURL == "":
		return sqlstore.OpenSQLite(ctx, defaultSQLitePath, sqlstore.DefaultSQLiteOptions())
	case strings.HasPrefix(dbURL, "sqlite:"):
		path := strings.TrimPrefix(dbURL, "sqlite:")
		if path == "" {
			return nil, fmt.Errorf("invalid DATABASE_URL: sqlite: needs a path, e.g. sqlite:data/obsvc.db")
		}
		return sqlstore.OpenSQLite(ctx, path, sqlstore.DefaultSQLiteOptions())
	case strings.HasPrefix(dbURL, "postgres://"), strings.HasPrefix(dbURL, "postgresql://"):
		return sqlstore.OpenPostgres(ctx, dbURL, sqlstore.DefaultPostgresOptions())
	default:
		return nil, fmt.Errorf("invalid DATABASE_URL: want empty, sqlite:PATH, postgres:// or postgresql://")
	}
}

func storeKind(dbURL string) string {
	switch {
	case dbURL == "":
		return "sqlite:" + defaultSQLitePath
	case strings.HasPrefix(dbURL, "sqlite:"):
		return dbURL
	default:
		return "postgres"
	}
}

// newLogger logs JSON when out is not a terminal (a log pipeline reads it), text otherwise.
func newLogger(out io.Writer, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if f, ok := out.(*os.File); ok && isTerminal(f) {
		return slog.New(contextHandler{slog.NewTextHandler(out, opts)})
	}
	return slog.New(contextHandler{slog.NewJSONHandler(out, opts)})
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
