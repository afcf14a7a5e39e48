package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"example.com/obsvc/domain"
)

// runSavedSearches is the contract of domain.SearchStore.
func runSavedSearches(t *testing.T, open Open) {
	t.Run("SavedSearchesRoundTrip", func(t *testing.T) { t.Parallel(); testSavedSearchesRoundTrip(t, open(t)) })
	t.Run("SavedSearchNamesAreUniquePerProject", func(t *testing.T) { t.Parallel(); testSavedSearchNames(t, open(t)) })
	t.Run("SavedSearchesAreBoundedPerProject", func(t *testing.T) { t.Parallel(); testSavedSearchBound(t, open(t)) })
	t.Run("SavedSearchesGoWithTheirProject", func(t *testing.T) { t.Parallel(); testSavedSearchesCascade(t, open(t)) })
}

func newSearch(p domain.Project, name string, at time.Time) domain.Search {
	return domain.Search{ID: newID(), ProjectID: p.ID, Name: name, Query: "level:error AND checkout", RangeSeconds: 3600, CreatedAt: at, UpdatedAt: at}
}

func mustSearch(t *testing.T, s domain.Store, sr domain.Search) domain.Search {
	t.Helper()
	if err := s.CreateSearch(ctx(t), sr, domain.DefaultMaxSearches); err != nil {
		t.Fatalf("CreateSearch(%q): %v", sr.Name, err)
	}
	return sr
}

func searchNames(ss []domain.Search) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return out
}

func testSavedSearchesRoundTrip(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	other := mustProject(t, s, "other", base)
	at := base.Add(654321 * time.Microsecond)
	b := mustSearch(t, s, newSearch(p, "b ✓ errors", at))
	a := mustSearch(t, s, newSearch(p, "a", at))
	upper := mustSearch(t, s, newSearch(p, "Z", at))
	mustSearch(t, s, newSearch(other, "a", at))
	empty := newSearch(p, "everything", at)
	empty.Query, empty.RangeSeconds = "", domain.MaxSearchRangeSeconds
	mustSearch(t, s, empty)

	got, err := s.GetSearch(ctx(t), b.ID)
	if err != nil {
		t.Fatalf("GetSearch: %v", err)
	}
	if got != b {
		t.Fatalf("GetSearch = %+v, want %+v", got, b)
	}
	list, err := s.ListSearches(ctx(t), p.ID)
	if err != nil {
		t.Fatalf("ListSearches: %v", err)
	}
	// By name, bytewise: upper case before lower case.
	if want := []string{upper.Name, a.Name, b.Name, empty.Name}; !slices.Equal(searchNames(list), want) {
		t.Fatalf("ListSearches = %q, want %q", searchNames(list), want)
	}
	if list[3] != empty {
		t.Fatalf("listed %+v, want %+v", list[3], empty)
	}
	if list, err := s.ListSearches(ctx(t), newID()); err != nil || len(list) != 0 {
		t.Fatalf("ListSearches of no project = %v, %v; want none", list, err)
	}

	a.Name, a.Query, a.RangeSeconds, a.UpdatedAt = "a2", "-level:debug", 60, at.Add(time.Second)
	if err := s.UpdateSearch(ctx(t), a); err != nil {
		t.Fatalf("UpdateSearch: %v", err)
	}
	if got, err := s.GetSearch(ctx(t), a.ID); err != nil || got != a {
		t.Fatalf("after UpdateSearch: %+v, %v; want %+v", got, err, a)
	}
	// Another project's id does not reach the search.
	wrong := a
	wrong.ProjectID, wrong.Name = other.ID, "x"
	wantKind(t, s.UpdateSearch(ctx(t), wrong), domain.KindNotFound)
	wantKind(t, s.DeleteSearch(ctx(t), other.ID, a.ID), domain.KindNotFound)
	gone := newSearch(p, "gone", at)
	wantKind(t, s.UpdateSearch(ctx(t), gone), domain.KindNotFound)

	if err := s.DeleteSearch(ctx(t), p.ID, a.ID); err != nil {
		t.Fatalf("DeleteSearch: %v", err)
	}
	_, err = s.GetSearch(ctx(t), a.ID)
	wantKind(t, err, domain.KindNotFound)
	wantKind(t, s.DeleteSearch(ctx(t), p.ID, a.ID), domain.KindNotFound)

	err = s.CreateSearch(ctx(t), newSearch(domain.Project{ID: newID()}, "orphan", at), domain.DefaultMaxSearches)
	wantKind(t, err, domain.KindUnknownProject)
}

func testSavedSearchNames(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	other := mustProject(t, s, "other", base)
	first := mustSearch(t, s, newSearch(p, "errors", base))
	second := mustSearch(t, s, newSearch(p, "warnings", base))
	mustSearch(t, s, newSearch(other, "errors", base))
	if err := s.CreateSearch(ctx(t), newSearch(p, "errors", base), domain.DefaultMaxSearches); !errors.Is(err, domain.ErrSearchNameTaken) {
		t.Fatalf("a second search named as the first: %v, want ErrSearchNameTaken", err)
	}
	// Names are compared exactly: another case is another name.
	mustSearch(t, s, newSearch(p, "Errors", base))
	second.Name = first.Name
	if err := s.UpdateSearch(ctx(t), second); !errors.Is(err, domain.ErrSearchNameTaken) {
		t.Fatalf("a rename to a taken name: %v, want ErrSearchNameTaken", err)
	}
	// Keeping its own name is no conflict.
	first.RangeSeconds = 10
	if err := s.UpdateSearch(ctx(t), first); err != nil {
		t.Fatalf("UpdateSearch keeping the name: %v", err)
	}
	list, err := s.ListSearches(ctx(t), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Errors", "errors", "warnings"}; !slices.Equal(searchNames(list), want) {
		t.Fatalf("after the conflicts: %q, want %q", searchNames(list), want)
	}
}

func testSavedSearchBound(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	other := mustProject(t, s, "other", base)
	const limit = 3
	// Concurrent creates never take the project past the bound.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = s.CreateSearch(ctx(t), newSearch(p, fmt.Sprintf("s%d", i), base), limit) })
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, domain.ErrTooManySearches):
			t.Fatalf("CreateSearch past the bound: %v, want ErrTooManySearches", err)
		}
	}
	list, err := s.ListSearches(ctx(t), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if created != limit || len(list) != limit {
		t.Fatalf("%d creates succeeded and %d searches listed, want %d", created, len(list), limit)
	}
	// The bound is per project.
	if err := s.CreateSearch(ctx(t), newSearch(other, "s", base), limit); err != nil {
		t.Fatalf("another project's search: %v", err)
	}
	// A deleted search frees its place.
	if err := s.DeleteSearch(ctx(t), p.ID, list[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSearch(ctx(t), newSearch(p, "again", base), limit); err != nil {
		t.Fatalf("a search after a delete: %v", err)
	}
}

func testSavedSearchesCascade(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	kept := mustProject(t, s, "kept", base)
	sr := mustSearch(t, s, newSearch(p, "errors", base))
	other := mustSearch(t, s, newSearch(kept, "errors", base))
	if err := s.DeleteProject(ctx(t), p.ID); err != nil {
		t.Fatalf("DeleteProject: %v", err)
	}
	_, err := s.GetSearch(ctx(t), sr.ID)
	wantKind(t, err, domain.KindNotFound)
	if list, err := s.ListSearches(ctx(t), p.ID); err != nil || len(list) != 0 {
		t.Fatalf("searches of a deleted project: %v, %v", list, err)
	}
	if got, err := s.GetSearch(ctx(t), other.ID); err != nil || got != other {
		t.Fatalf("another project's search after the delete: %+v, %v", got, err)
	}
}
