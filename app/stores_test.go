package main

import (
	"os"
	"testing"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/pgtest"
)

// pg is the PostgreSQL server of this test binary (see pgtest.Run).
var pg *pgtest.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &pg)) }

func openPostgresStore(t *testing.T) store {
	t.Helper()
	s, err := sqlstore.OpenPostgres(t.Context(), pg.NewDatabase(t), sqlstore.DefaultPostgresOptions())
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// e2eStores lists the stores the end-to-end contract runs against: both, always. Without a
// PostgreSQL server its half is skipped loudly (failed under CI=true) by pgtest.
func e2eStores() []namedStore {
	return []namedStore{{"sqlite", openSQLiteStore}, {"postgres", openPostgresStore}}
}
