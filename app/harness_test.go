package main

import (
	"log/slog"
	"net/http/httptest"
	"testing"

	"example.com/obsvc/app/server"
	"example.com/obsvc/domain"
)

// serve builds the service over st with the one constructor, newService, and serves it on a
// loopback port until the test ends. A nil log discards.
func serve(tb testing.TB, cfg server.Config, st server.Store, log *slog.Logger) (*server.Server, *httptest.Server) {
	tb.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	svc, err := server.New(cfg, st, log, server.Deps{})
	if err != nil {
		tb.Fatalf("newService: %v", err)
	}
	srv := httptest.NewServer(svc.Handler)
	tb.Cleanup(srv.Close)
	return svc, srv
}

// seedProjects creates projects "a" and "b" in st through the service's core, as an admin.
func seedProjects(t *testing.T, st server.Store) (a, b domain.Project) {
	t.Helper()
	svc, err := server.New(server.DefaultConfig(), st, slog.New(slog.DiscardHandler), server.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := domain.WithPrincipal(t.Context(), domain.Principal{Admin: true})
	if a, err = svc.Core.CreateProject(ctx, domain.ProjectInput{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if b, err = svc.Core.CreateProject(ctx, domain.ProjectInput{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	return a, b
}
