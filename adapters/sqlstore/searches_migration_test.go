package sqlstore_test

import (
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/domain"
)

// searchesPrevious is the schema version of the release before saved searches.
const searchesPrevious = 11

// TestSavedSearchesMigration upgrades a database that the previous release wrote (projects and
// their entries) to migration 00013 (saved searches): the entries stay, searches can be saved
// for the old projects, and deleting a project deletes its searches, on both engines.
func TestSavedSearchesMigration(t *testing.T) {
	onBothEngines(t, testSavedSearchesMigration)
}

func testSavedSearchesMigration(t *testing.T, engine, dsn string, timeArg func(time.Time) any, open func() (*sqlstore.Store, error)) {
	raw, bind := migratedTo(t, engine, dsn, searchesPrevious)
	a, b := writePreviousRelease(t, raw, bind, timeArg)
	checkSavedSearchesAfterUpgrade(t, upgrade(t, raw, open), a, b)
}

// writePreviousRelease writes two projects with two entries each as the previous release did,
// and returns the projects' ids.
func writePreviousRelease(t *testing.T, raw *sql.DB, bind func(string) string, timeArg func(time.Time) any) (a, b string) {
	t.Helper()
	ctx := t.Context()
	created := time.Now().UTC().Truncate(time.Microsecond)
	a, b = uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
	for _, id := range []string{a, b} {
		if _, err := raw.ExecContext(ctx, bind("INSERT INTO projects (id, name, created_at, updated_at) VALUES (?, 'p', ?, ?)"), id, timeArg(created), timeArg(created)); err != nil {
			t.Fatalf("write an old project: %v", err)
		}
		for i := range 2 {
			if _, err := raw.ExecContext(ctx, bind("INSERT INTO logs (project_id, time, id, level, message) VALUES (?, ?, ?, 'info', 'old')"), id, int64(i), uuid.Must(uuid.NewV7()).String()); err != nil {
				t.Fatalf("write an old entry: %v", err)
			}
		}
	}
	return a, b
}

// checkSavedSearchesAfterUpgrade checks the upgraded store s, on which the previous release
// wrote projects a and b.
func checkSavedSearchesAfterUpgrade(t *testing.T, s *sqlstore.Store, a, b string) {
	t.Helper()
	ctx := t.Context()
	for _, p := range []string{a, b} {
		if n := len(listAll(t, s, domain.LogFilter{ProjectID: p})); n != 2 {
			t.Fatalf("%d entries of %s after the upgrade, want 2", n, p)
		}
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	search := func(p, name string) domain.Search {
		t.Helper()
		sr := domain.Search{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p, Name: name, Query: "level:error", RangeSeconds: 900, CreatedAt: now, UpdatedAt: now}
		if err := s.CreateSearch(ctx, sr, domain.DefaultMaxSearches); err != nil {
			t.Fatalf("save a search of an old project: %v", err)
		}
		return sr
	}
	gone, kept := search(a, "errors"), search(b, "errors")
	search(a, "all")
	list, err := s.ListSearches(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "all" || list[1] != gone {
		t.Fatalf("searches of the old project: %+v", list)
	}
	if err := s.DeleteProject(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSearch(ctx, gone.ID); domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("a search of a deleted project: %v, want not found", err)
	}
	if got, err := s.GetSearch(ctx, kept.ID); err != nil || got != kept {
		t.Fatalf("the other project's search: %+v, %v", got, err)
	}
	if list, err := s.ListSearches(ctx, a); err != nil || !slices.Equal(list, []domain.Search{}) {
		t.Fatalf("searches of the deleted project: %+v, %v", list, err)
	}
}
