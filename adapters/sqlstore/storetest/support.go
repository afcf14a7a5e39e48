package storetest

import (
	"path/filepath"
	"testing"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/domain"
)

// OpenSQLite opens a store with the default options on a new SQLite file in tb's temporary
// directory; it is closed when tb ends.
func OpenSQLite(tb testing.TB) *sqlstore.Store {
	tb.Helper()
	s, err := sqlstore.OpenSQLite(tb.Context(), filepath.Join(tb.TempDir(), "store.db"), sqlstore.DefaultSQLiteOptions())
	if err != nil {
		tb.Fatalf("open sqlite: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// OpenPostgres opens a store with the default options on the PostgreSQL database (or Citus
// coordinator) at dsn, such as one pgtest made; it is closed when tb ends.
func OpenPostgres(tb testing.TB, dsn string) *sqlstore.Store {
	tb.Helper()
	s, err := sqlstore.OpenPostgres(tb.Context(), dsn, sqlstore.DefaultPostgresOptions())
	if err != nil {
		tb.Fatalf("open postgres: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// CountEntries reads a project's entries straight from the store; no project counts as none.
func CountEntries(t testing.TB, st domain.Store, projectID string) int {
	t.Helper()
	n := 0
	err := st.ListLogs(t.Context(), domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: projectID}, Limit: 1_000_000}, func(p domain.Page) error {
		for _, err := range p.Entries {
			if err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if domain.KindOf(err) == domain.KindNotFound {
		return 0
	}
	if err != nil {
		t.Fatalf("count logs: %v", err)
	}
	return n
}
