package sqlstore_test

import (
	"path/filepath"
	"testing"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

func openSQLite(t *testing.T) domain.Store { return storetest.OpenSQLite(t) }

func TestSQLiteStore(t *testing.T) {
	storetest.Run(t, openSQLite)
}

// TestSQLiteTermsTestedOnEachEntry runs the query language's differential case with no term read
// from its index (IndexedTerms -1): the path of a common word or attribute value, which the
// default options take only beyond 5,000 entries, more than a test writes.
func TestSQLiteTermsTestedOnEachEntry(t *testing.T) {
	storetest.RunQueryLanguage(t, func(t *testing.T) domain.Store {
		opts := sqlstore.DefaultSQLiteOptions()
		opts.IndexedTerms = -1
		s, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "store.db"), opts)
		if err != nil {
			t.Fatalf("open sqlite: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
