//go:build citus

package sqlstore_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"example.com/obsvc/adapters/sqlstore"
)

// pgTime is how PostgreSQL takes a timestamp.
func pgTime(ts time.Time) any { return ts }

// TestCitusSavedSearchesMigration upgrades a Citus coordinator that the previous release
// migrated and distributed, holding projects and entries, to migration 00013: the new table
// searches becomes a reference table beside projects, and the upgraded store keeps the entries,
// saves searches and deletes them with their project.
func TestCitusSavedSearchesMigration(t *testing.T) {
	url := citus.NewDatabase(t)
	raw, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlstore.MigrateTo(t.Context(), raw, "postgres", searchesPrevious); err != nil {
		t.Fatalf("migrate to version %d: %v", searchesPrevious, err)
	}
	if err := sqlstore.Distribute(t.Context(), raw); err != nil {
		t.Fatalf("distribute the previous release's schema: %v", err)
	}
	a, b := writePreviousRelease(t, raw, func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) }, pgTime)
	s := upgrade(t, raw, func() (*sqlstore.Store, error) {
		return sqlstore.OpenPostgres(t.Context(), url, sqlstore.DefaultPostgresOptions())
	})
	if got := distribution(t, sqlstore.WriteDB(s))["searches"]; got != "reference" {
		t.Fatalf("searches is %q after the upgrade, want reference", got)
	}
	checkSavedSearchesAfterUpgrade(t, s, a, b)
}
