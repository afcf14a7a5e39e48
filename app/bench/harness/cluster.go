package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	_ "github.com/lib/pq"

	"example.com/obsvc/adapters/sqlstore/pgtest"
)

// startCluster starts the PostgreSQL server of a run, as the tests do (pgtest): initdb and pg_ctl
// into a temporary directory, on a free loopback port, with PostgreSQL's durable defaults (fsync
// and synchronous_commit on). The run closes it before it ends.
func startCluster() (*pgtest.Server, error) {
	pg, err := pgtest.StartCluster("max_connections=100")
	if err != nil {
		return nil, fmt.Errorf("start PostgreSQL (apt-get install postgresql when it has no server binaries): %w", err)
	}
	return pg, nil
}

// execAdmin runs statements on the postgres database of pg, bounded in time.
func execAdmin(ctx context.Context, pg *pgtest.Server, stmts ...string) error {
	db, err := sql.Open("postgres", pg.URL())
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// serverVersion is the version of pg, e.g. "15.14".
func serverVersion(ctx context.Context, pg *pgtest.Server) string {
	db, err := sql.Open("postgres", pg.URL())
	if err != nil {
		return "?"
	}
	defer db.Close()
	var v string
	if err := db.QueryRowContext(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "?"
	}
	return v
}
