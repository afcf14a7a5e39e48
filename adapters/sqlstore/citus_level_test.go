//go:build citus

package sqlstore_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
)

// TestCitusMigrations upgrades Citus databases whose distributed tables the previous releases
// filled, as testLevelMigration (schema version 8) and wordsMigration (version 10) do on
// PostgreSQL, then shows every per-project statement of each migration to be routed to one shard.
func TestCitusMigrations(t *testing.T) {
	type migration func(t *testing.T, engine, dsn string, prepare func(*sql.DB) error, timeArg func(time.Time) any, open func() (*sqlstore.Store, error))
	for _, m := range []struct {
		name  string
		run   migration
		stmts func() []sqlstore.Statement
	}{{"Level", testLevelMigration, sqlstore.LevelMigrationSQL}, {"Words", wordsMigration, sqlstore.WordsMigrationSQL}} {
		t.Run(m.name, func(t *testing.T) {
			url := citus.NewDatabase(t)
			distribute := func(db *sql.DB) error { return sqlstore.DistributeSchema(t.Context(), db) }
			m.run(t, "postgres", url, distribute, func(ts time.Time) any { return ts }, func() (*sqlstore.Store, error) {
				return sqlstore.OpenPostgres(t.Context(), url, sqlstore.DefaultPostgresOptions())
			})
			s, err := sqlstore.OpenPostgres(t.Context(), url, sqlstore.DefaultPostgresOptions())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			db := sqlstore.WriteDB(s)
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
