// Command obsvc serves the observability REST API and the Twirp Haberdasher on one port.
//
//	go run ./app            # SQLite under ./data, port 8080
//	go run ./app -h         # every setting, its environment variable and default
//
// This package is the process and nothing else: configuration (config.go) and the lifecycle (run:
// open the store, build the service with server.New, start its background work, serve, drain).
// The one constructor, with the routes and the middleware chain, is app/server.
package main

import (
	"context"
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

	"example.com/obsvc/adapters/edge"
	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/app/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "obsvc:", err)
		os.Exit(1)
	}
}

// run parses the configuration, opens the store, builds the service and serves until ctx ends,
// then drains in-flight requests (up to the shutdown timeout) and closes the store.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	// The log is buffered (see edge.LogBuffer); this deferred flush runs last, after every
	// other deferred step of run that may still log.
	log, closeLog := edge.NewBufferedLogger(stdout, cfg.Level())
	defer func() {
		if err := closeLog(); err != nil {
			fmt.Fprintf(stderr, "obsvc: writing the log: %v\n", err)
		}
	}()
	cfg.logEffective(log)
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
	svc, err := server.New(cfg.Config, st, log, server.Deps{})
	if err != nil {
		return err
	}
	switch {
	case !svc.Keys.Enabled() && cfg.AllowOpen:
		log.Warn("no API keys configured and ALLOW_OPEN_NETWORK=true: the service is open to anyone who can reach it")
	case !svc.Keys.Enabled():
		log.Warn("no API keys configured: serving on loopback and to loopback host names only; anyone on this machine can use it")
	}

	// Background work (the sweeps, the side ports) ends with ctx, or when run returns early, and
	// is waited for before the store closes (deferred after its Close, so run first).
	stopBackground, err := svc.Start(ctx)
	if err != nil {
		return err
	}
	defer stopBackground()

	addr, err := cfg.listenAddr(svc.Keys.Enabled())
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           svc.Handler,
		ReadHeaderTimeout: cfg.ReadHeaderTO,
		ReadTimeout:       cfg.ReadTO,
		WriteTimeout:      cfg.WriteTO,
		IdleTimeout:       cfg.IdleTO,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(svc.StopTails)
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
	err = srv.Shutdown(drainCtx)
	<-serveErr // Serve returned (ErrServerClosed) once Shutdown closed the listener
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	log.Info("stopped")
	return nil
}

// openStore opens the store DATABASE_URL names.
func openStore(ctx context.Context, dbURL string) (server.Store, error) {
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
