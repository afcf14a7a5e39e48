//go:build citus

package sqlstore_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
)

// TestCitusLevelMigration upgrades a Citus database whose distributed tables the previous release
// (schema version 8) filled, as testLevelMigration does on PostgreSQL, then shows every
// per-project statement of the migration to be routed to one shard.
func TestCitusLevelMigration(t *testing.T) {
	url := citus.NewDatabase(t)
	distribute := func(db *sql.DB) error { return sqlstore.DistributeSchema(t.Context(), db) }
	testLevelMigration(t, "postgres", url, distribute, func(ts time.Time) any { return ts }, func() (*sqlstore.Store, error) {
		return sqlstore.OpenPostgres(t.Context(), url, sqlstore.DefaultPostgresOptions())
	})
	s, err := sqlstore.OpenPostgres(t.Context(), url, sqlstore.DefaultPostgresOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := sqlstore.WriteDB(s)
	p := uuid.Must(uuid.NewV7()).String()
	for _, st := range sqlstore.LevelMigrationSQL() {
		t.Run(st.Name, func(t *testing.T) {
			if n, plan := citusTasks(t, db, st.Query, st.Args(p)); n != 1 {
				t.Errorf("%d tasks, want 1 (a router query)\n%s\nplan: %s", n, st.Query, plan)
			}
		})
	}
}

// TestCitusWordsMigration upgrades a Citus database whose distributed tables the previous release
// (schema version 10) filled, as testWordsMigration does on PostgreSQL, then shows every
// per-project statement of the migration to be routed to one shard.
func TestCitusWordsMigration(t *testing.T) {
	url := citus.NewDatabase(t)
	distribute := func(db *sql.DB) error { return sqlstore.DistributeSchema(t.Context(), db) }
	wordsMigration(t, "postgres", url, distribute, func(ts time.Time) any { return ts }, func() (*sqlstore.Store, error) {
		return sqlstore.OpenPostgres(t.Context(), url, sqlstore.DefaultPostgresOptions())
	})
	s, err := sqlstore.OpenPostgres(t.Context(), url, sqlstore.DefaultPostgresOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := sqlstore.WriteDB(s)
	p := uuid.Must(uuid.NewV7()).String()
	for _, st := range sqlstore.WordsMigrationSQL() {
		t.Run(st.Name, func(t *testing.T) {
			if n, plan := citusTasks(t, db, st.Query, st.Args(p)); n != 1 {
				t.Errorf("%d tasks, want 1 (a router query)\n%s\nplan: %s", n, st.Query, plan)
			}
		})
	}
}
