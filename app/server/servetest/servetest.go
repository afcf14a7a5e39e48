// Package servetest serves the service for the tests and benchmarks under app/: the one
// constructor, server.New, over a store, on a loopback port. Only tests import it (make
// arch-check holds it to that), so that nothing but app itself builds the service into a binary.
package servetest

import (
	"log/slog"
	"net/http/httptest"
	"testing"

	"example.com/obsvc/app/server"
)

// Serve builds the service over st with server.New and serves it on a loopback port until tb
// ends. A nil log discards.
func Serve(tb testing.TB, cfg server.Config, st server.Store, log *slog.Logger) (*server.Server, *httptest.Server) {
	tb.Helper()
	return ServeWith(tb, cfg, st, log, server.Deps{})
}

// ServeWith is Serve with the parts a test replaces (a clock).
func ServeWith(tb testing.TB, cfg server.Config, st server.Store, log *slog.Logger, d server.Deps) (*server.Server, *httptest.Server) {
	tb.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	svc, err := server.New(cfg, st, log, d)
	if err != nil {
		tb.Fatalf("server.New: %v", err)
	}
	srv := httptest.NewServer(svc.Handler)
	tb.Cleanup(srv.Close)
	return svc, srv
}
