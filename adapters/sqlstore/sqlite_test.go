package sqlstore_test

import (
	"path/filepath"
	"testing"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

func openSQLite(t *testing.T) domain.Store {
	t.Helper()
	s, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "test.db"), sqlstore.DefaultSQLiteOptions())
	if err != nil {
		t.Fatalf("OpenSQLite: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestSQLiteStore(t *testing.T) {
	storetest.Run(t, openSQLite)
}
