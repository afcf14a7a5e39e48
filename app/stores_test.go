package main

import (
	"os"
	"testing"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/pgtest"
	"example.com/obsvc/app/server"
)

// pg is the PostgreSQL server of this test binary (see pgtest.Run).
var pg *pgtest.Server

// TestMain starts the PostgreSQL server, and the Citus cluster too under the citus build tag.
func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &pg, runOptions()...)) }

func openPostgresStore(t *testing.T) server.Store {
	t.Helper()
	s, err := sqlstore.OpenPostgres(t.Context(), pg.NewDatabase(t), sqlstore.DefaultPostgresOptions())
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// e2eStores lists the stores the end-to-end contract runs against: both, always, and a Citus
// coordinator under the citus build tag (make test-citus). Without a PostgreSQL server its half is
// skipped loudly (failed under CI=true) by pgtest.
func e2eStores() []namedStore {
	return append([]namedStore{{"sqlite", openSQLiteStore}, {"postgres", openPostgresStore}}, citusStores()...)
}
