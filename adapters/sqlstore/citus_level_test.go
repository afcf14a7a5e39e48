//go:build citus

package sqlstore_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"example.com/obsvc/adapters/sqlstore"
)

// TestCitusMigrations upgrades Citus databases whose distributed tables the previous releases
// filled, as testLevelMigration (schema version 8) and wordsMigration (version 10) do on
// PostgreSQL, then shows every per-project statement of each migration to be routed to one
// shard, on a distributed schema of the migration's own version (a later one drops tables its
// statements write, log_counts since 00018).
func TestCitusMigrations(t *testing.T) {
	type migration func(t *testing.T, engine, dsn string, prepare func(*sql.DB) error, timeArg func(time.Time) any, open func() (*sqlstore.Store, error))
	for _, m := range []struct {
		name    string
		run     migration
		stmts   func() []sqlstore.Statement
		version int64 // the migration's
	}{{"Level", testLevelMigration, sqlstore.LevelMigrationSQL, 9}, {"Words", wordsMigration, sqlstore.WordsMigrationSQL, 11}} {
		t.Run(m.name, func(t *testing.T) {
			url := citus.NewDatabase(t)
			distribute := func(db *sql.DB) error { return sqlstore.DistributeSchema(t.Context(), db) }
			m.run(t, "postgres", url, distribute, func(ts time.Time) any { return ts }, func() (*sqlstore.Store, error) {
				return sqlstore.OpenPostgres(t.Context(), url, sqlstore.DefaultPostgresOptions())
			})
			at := citus.NewDatabase(t)
			db, err := sqlx.Open("postgres", at)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := sqlstore.MigrateTo(t.Context(), db.DB, "postgres", m.version); err != nil {
				t.Fatal(err)
			}
			if err := sqlstore.DistributeSchema(t.Context(), db.DB); err != nil {
				t.Fatal(err)
			}
			p := uuid.Must(uuid.NewV7()).String()
			for _, st := range m.stmts() {
				t.Run(st.Name, func(t *testing.T) {
					if n, plan := citusTasks(t, db, st.Query, st.Args(p)); n != 1 {
						t.Errorf("%d tasks, want 1 (a router query)\n%s\nplan: %s", n, st.Query, plan)
					}
				})
			}
		})
	}
}
