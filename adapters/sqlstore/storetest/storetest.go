// Package storetest is the contract every domain.Store must keep. It speaks only the domain's
// ports, so the same suite runs against every engine; a store passes when Run passes.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"example.com/obsvc/domain"
)

// Open returns a fresh, empty store for one test; the test's cleanup closes it.
type Open func(t *testing.T) domain.Store

// Option changes how Run runs the contract.
type Option func(*options)

type options struct{ without map[string]string }

// Without leaves out the case of the contract called name, for the reason why, which the test
// log shows. A store that does not keep a promise of the contract says so here, in the open.
func Without(name, why string) Option {
	return func(o *options) { o.without[name] = why }
}

// Run runs the whole contract against stores made by open.
func Run(t *testing.T, open Open, opts ...Option) {
	o := options{without: map[string]string{}}
	for _, opt := range opts {
		opt(&o)
	}
	defer func() {
		for name := range o.without {
			t.Errorf("storetest.Without(%q): no case of the contract has that name", name)
		}
	}()
	t.Run("CreateAndGetProject", func(t *testing.T) { t.Parallel(); testCreateAndGetProject(t, open(t)) })
	t.Run("ProjectNotFound", func(t *testing.T) { t.Parallel(); testProjectNotFound(t, open(t)) })
	t.Run("ListLogsOfAnUnknownProject", func(t *testing.T) { t.Parallel(); testListUnknownProject(t, open(t)) })
	t.Run("ListProjectsOldestFirst", func(t *testing.T) { t.Parallel(); testListProjects(t, open(t)) })
	t.Run("UpdateProject", func(t *testing.T) { t.Parallel(); testUpdateProject(t, open(t)) })
	t.Run("DeleteProjectCascadesLogs", func(t *testing.T) { t.Parallel(); testDeleteProjectCascades(t, open(t)) })
	t.Run("InsertAndListRoundTrip", func(t *testing.T) { t.Parallel(); testInsertRoundTrip(t, open(t)) })
	t.Run("InsertLogsIsAllOrNothing", func(t *testing.T) { t.Parallel(); testCreateLogsAllOrNothing(t, open(t)) })
	t.Run("InsertLogsLargeBatch", func(t *testing.T) { t.Parallel(); testCreateLogsLargeBatch(t, open(t)) })
	t.Run("FiltersAreInclusiveAndCombineWithAnd", func(t *testing.T) { t.Parallel(); testFilters(t, open(t)) })
	t.Run("ListLogsOrdersByTimeThenID", func(t *testing.T) { t.Parallel(); testOrdering(t, open(t)) })
	t.Run("ListLogsPagesWithoutGapsOrDuplicates", func(t *testing.T) { t.Parallel(); testPaging(t, open(t)) })
	t.Run("FilteredPagesOrderTiesByID", func(t *testing.T) { t.Parallel(); testFilteredPagingTies(t, open(t)) })
	t.Run("ListLogsPageIsStableUnderInserts", func(t *testing.T) { t.Parallel(); testPagingUnderInserts(t, open(t)) })
	t.Run("ListLogsStopsEarly", func(t *testing.T) { t.Parallel(); testStopEarly(t, open(t)) })
	t.Run("DeleteLogsWithFilters", func(t *testing.T) { t.Parallel(); testDeleteLogs(t, open(t)) })
	t.Run("IdempotencyRecordIsAtomicWithTheBatch", func(t *testing.T) { t.Parallel(); testIdempotency(t, open(t)) })
	t.Run("LiteralMatching", func(t *testing.T) { t.Parallel(); testLiteralMatching(t, open(t)) })
	t.Run("StringsAtTheDomainLimitsAreKeptAndMatched", func(t *testing.T) { t.Parallel(); testStringsAtTheLimits(t, open(t)) })
	t.Run("IdempotentBatchOfManyProjects", func(t *testing.T) { t.Parallel(); testIdempotentManyProjects(t, open(t)) })
	t.Run("UnknownProjectsAreNamedOnceAndCapped", func(t *testing.T) { t.Parallel(); testUnknownProjectsCapped(t, open(t)) })
	t.Run("AttributesAndTraceContextRoundTrip", func(t *testing.T) { t.Parallel(); testAttributesRoundTrip(t, open(t)) })
	t.Run("TraceFilterOnListAndDelete", func(t *testing.T) { t.Parallel(); testTraceFilter(t, open(t)) })
	runRetention(t, open, &o)
	runSearch(t, open)
	runSavedSearches(t, open)
	runAlerts(t, open)
	runContext(t, open)
}

var base = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// newID makes ids as the service does: UUIDv7, increasing within the process.
func newID() string { return uuid.Must(uuid.NewV7()).String() }

func ctx(t *testing.T) context.Context { return t.Context() }

func ptr[T any](v T) *T { return &v }

func mustProject(t *testing.T, s domain.Store, name string, created time.Time) domain.Project {
	t.Helper()
	p := domain.Project{ID: newID(), Name: name, CreatedAt: created, UpdatedAt: created}
	if err := s.CreateProject(ctx(t), p); err != nil {
		t.Fatalf("CreateProject: %v", err)
	}
	return p
}

// entry makes an entry of project p at time ms; ids are UUIDv7 so they increase in creation order.
func entry(p domain.Project, ms int64, level string) domain.LogEntry {
	return domain.LogEntry{ID: newID(), ProjectID: p.ID, Time: ms, Level: level, Message: fmt.Sprintf("at %d", ms)}
}

func mustInsert(t *testing.T, s domain.Store, entries ...domain.LogEntry) {
	t.Helper()
	if _, err := s.CreateLogs(ctx(t), entries, domain.LogWrite{}); err != nil {
		t.Fatalf("CreateLogs: %v", err)
	}
}

// page lists one page and returns its entries and next cursor.
func page(t *testing.T, s domain.Store, q domain.LogQuery) ([]domain.LogEntry, *domain.Cursor) {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 10_000
	}
	var got []domain.LogEntry
	var next *domain.Cursor
	err := s.ListLogs(ctx(t), q, func(p domain.Page) error {
		next = p.Next
		for e, err := range p.Entries {
			if err != nil {
				return err
			}
			got = append(got, e)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ListLogs(%+v): %v", q, err)
	}
	return got, next
}

// ids lists the entries' ids; failure messages print at most a few of them.
func ids(es []domain.LogEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// wantMissing checks that err is a store's answer to a batch naming the projects ids, which do
// not exist: each id once, in the order the batch first names them.
func wantMissing(t *testing.T, err error, ids ...string) {
	t.Helper()
	var missing *domain.MissingProjectsError
	if !errors.As(err, &missing) {
		t.Fatalf("error = %v, want a *domain.MissingProjectsError", err)
	}
	if !slices.Equal(missing.IDs, ids) {
		t.Fatalf("missing projects = %v, want %v", missing.IDs, ids)
	}
}

func wantKind(t *testing.T, err error, want domain.Kind) {
	t.Helper()
	if got := domain.KindOf(err); got != want || err == nil {
		t.Fatalf("error = %v (kind %v), want kind %v", err, got, want)
	}
}

func testCreateAndGetProject(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "checkout ✓", base.Add(123456*time.Microsecond))
	got, err := s.GetProject(ctx(t), p.ID)
	if err != nil {
		t.Fatalf("GetProject: %v", err)
	}
	if !got.CreatedAt.Equal(p.CreatedAt) || !got.UpdatedAt.Equal(p.UpdatedAt) || got.ID != p.ID || got.Name != p.Name {
		t.Fatalf("GetProject = %+v, want %+v", got, p)
	}
	if got.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt location = %v, want UTC", got.CreatedAt.Location())
	}
}

func testProjectNotFound(t *testing.T, s domain.Store) {
	id := newID()
	_, err := s.GetProject(ctx(t), id)
	wantKind(t, err, domain.KindNotFound)
	wantKind(t, s.UpdateProject(ctx(t), domain.Project{ID: id, Name: "x", CreatedAt: base, UpdatedAt: base}), domain.KindNotFound)
	wantKind(t, s.DeleteProject(ctx(t), id), domain.KindNotFound)
}

func testListProjects(t *testing.T, s domain.Store) {
	got, err := s.ListProjects(ctx(t))
	if err != nil || len(got) != 0 {
		t.Fatalf("ListProjects on an empty store = %v, %v; want none", got, err)
	}
	// Created out of order on purpose: the listing follows CreatedAt, not insertion.
	b := mustProject(t, s, "b", base.Add(2*time.Second))
	a := mustProject(t, s, "a", base.Add(time.Second))
	c := mustProject(t, s, "c", base.Add(3*time.Second))
	got, err = s.ListProjects(ctx(t))
	if err != nil {
		t.Fatalf("ListProjects: %v", err)
	}
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	if want := []string{a.Name, b.Name, c.Name}; !slices.Equal(names, want) {
		t.Fatalf("ListProjects names = %v, want %v", names, want)
	}
}

func testUpdateProject(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "before", base)
	p.Name, p.UpdatedAt = "after", base.Add(time.Minute+7*time.Microsecond)
	if err := s.UpdateProject(ctx(t), p); err != nil {
		t.Fatalf("UpdateProject: %v", err)
	}
	got, err := s.GetProject(ctx(t), p.ID)
	if err != nil {
		t.Fatalf("GetProject: %v", err)
	}
	if got.Name != "after" || !got.UpdatedAt.Equal(p.UpdatedAt) || !got.CreatedAt.Equal(base) {
		t.Fatalf("after update = %+v, want name after, updated %v, created %v", got, p.UpdatedAt, base)
	}
}

func testDeleteProjectCascades(t *testing.T, s domain.Store) {
	gone := mustProject(t, s, "gone", base)
	kept := mustProject(t, s, "kept", base)
	mustInsert(t, s, entry(gone, 1, "info"), entry(gone, 2, "info"), entry(kept, 1, "info"))
	if err := s.DeleteProject(ctx(t), gone.ID); err != nil {
		t.Fatalf("DeleteProject: %v", err)
	}
	_, err := s.GetProject(ctx(t), gone.ID)
	wantKind(t, err, domain.KindNotFound)
	err = s.ListLogs(ctx(t), domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: gone.ID}, Limit: 10}, func(domain.Page) error { return nil })
	wantKind(t, err, domain.KindNotFound)
	if got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: kept.ID}}); len(got) != 1 {
		t.Fatalf("logs of the other project = %d, want 1", len(got))
	}
	// A project id freed by a delete can be written again only after it is created again, and
	// then it holds nothing of before: the cascade removed the entries, not just hid them.
	_, err = s.CreateLogs(ctx(t), []domain.LogEntry{entry(gone, 3, "info")}, domain.LogWrite{})
	wantMissing(t, err, gone.ID)
	if err := s.CreateProject(ctx(t), gone); err != nil {
		t.Fatal(err)
	}
	if got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: gone.ID}}); len(got) != 0 {
		t.Fatalf("a re-created project shows %d entries of its previous life, want 0", len(got))
	}
}

func testInsertRoundTrip(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	full := domain.LogEntry{ID: newID(), ProjectID: p.ID, Time: -5, Level: "error", Message: "multi\nline \"quoted\" ünïcode \u2028 \t tab", Subject: ptr("checkout"), UserID: ptr("u-1")}
	bare := domain.LogEntry{ID: newID(), ProjectID: p.ID, Time: 1 << 50, Level: "info", Message: ""}
	empty := domain.LogEntry{ID: newID(), ProjectID: p.ID, Time: 0, Level: "x", Message: "m", Subject: ptr(""), UserID: ptr("")}
	mustInsert(t, s, full, bare, empty)
	got, next := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}})
	if next != nil {
		t.Errorf("next = %+v on a complete page, want nil", next)
	}
	want := []domain.LogEntry{full, empty, bare}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if !equalEntry(got[i], want[i]) {
			t.Errorf("entry %d = %s, want %s", i, show(got[i]), show(want[i]))
		}
	}
}

func equalEntry(a, b domain.LogEntry) bool {
	eq := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.ID == b.ID && a.ProjectID == b.ProjectID && a.Time == b.Time && a.Level == b.Level &&
		a.Message == b.Message && eq(a.Subject, b.Subject) && eq(a.UserID, b.UserID) &&
		(a.Attributes == nil) == (b.Attributes == nil) && string(a.Attributes) == string(b.Attributes) &&
		eq(a.TraceID, b.TraceID) && eq(a.SpanID, b.SpanID)
}

func show(e domain.LogEntry) string {
	s := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return fmt.Sprintf("%q", *p)
	}
	attrs := "<nil>"
	if e.Attributes != nil {
		attrs = string(e.Attributes)
	}
	return fmt.Sprintf("{%s %s t=%d %q %q subject=%s user=%s attributes=%s trace=%s span=%s}", e.ID, e.ProjectID, e.Time, e.Level, e.Message, s(e.Subject), s(e.UserID), attrs, s(e.TraceID), s(e.SpanID))
}

func testCreateLogsAllOrNothing(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	missing := domain.Project{ID: newID()}
	batch := []domain.LogEntry{entry(p, 1, "info"), entry(missing, 2, "info"), entry(p, 3, "info"), entry(missing, 4, "info")}
	_, err := s.CreateLogs(ctx(t), batch, domain.LogWrite{})
	wantMissing(t, err, missing.ID)
	if got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}}); len(got) != 0 {
		t.Fatalf("a failed batch left %d rows, want 0", len(got))
	}

	// A duplicate key inside one batch fails the database mid-batch: nothing of it remains.
	first := entry(p, 10, "info")
	dup := []domain.LogEntry{first, entry(p, 11, "info"), first}
	if _, err := s.CreateLogs(ctx(t), dup, domain.LogWrite{}); err == nil {
		t.Fatal("a batch with a duplicate key was accepted")
	}
	if got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}}); len(got) != 0 {
		t.Fatalf("a batch that failed mid-way left %d rows, want 0", len(got))
	}

	// A cancelled context fails the batch and leaves nothing either.
	c, cancel := context.WithCancel(ctx(t))
	cancel()
	if _, err := s.CreateLogs(c, []domain.LogEntry{entry(p, 20, "info")}, domain.LogWrite{}); err == nil {
		t.Fatal("a batch with a cancelled context was accepted")
	}
	if got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}}); len(got) != 0 {
		t.Fatalf("a cancelled batch left %d rows, want 0", len(got))
	}
}

func testCreateLogsLargeBatch(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	q := mustProject(t, s, "q", base)
	batch := make([]domain.LogEntry, 10_000)
	for i := range batch {
		owner := p
		if i%2 == 1 {
			owner = q
		}
		batch[i] = entry(owner, int64(i), "info")
	}
	mustInsert(t, s, batch...)
	got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: q.ID}})
	if len(got) != 5000 {
		t.Fatalf("got %d entries of q, want 5000", len(got))
	}
}

func testFilters(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	other := mustProject(t, s, "other", base)
	var all []domain.LogEntry
	for i := range 12 {
		e := entry(p, int64(100+i*10), []string{"info", "error", "debug"}[i%3])
		if i%2 == 0 {
			e.UserID = ptr("alice")
		} else if i%4 == 1 {
			e.UserID = ptr("bob")
		}
		all = append(all, e)
	}
	mustInsert(t, s, all...)
	mustInsert(t, s, entry(other, 130, "error"))

	match := func(f domain.LogFilter) []string {
		var out []string
		for _, e := range all {
			if (f.UserID == nil || (e.UserID != nil && *e.UserID == *f.UserID)) &&
				(f.Level == nil || e.Level == *f.Level) &&
				(f.Start == nil || e.Time >= *f.Start) &&
				(f.End == nil || e.Time <= *f.End) {
				out = append(out, e.ID)
			}
		}
		return out
	}
	cases := []struct {
		name string
		f    domain.LogFilter
		want int
	}{
		{"project only", domain.LogFilter{}, 12},
		{"user", domain.LogFilter{UserID: ptr("alice")}, 6},
		{"level", domain.LogFilter{Level: ptr("error")}, 4},
		{"start inclusive", domain.LogFilter{Start: ptr[int64](150)}, 7},
		{"end inclusive", domain.LogFilter{End: ptr[int64](150)}, 6},
		{"start equals end", domain.LogFilter{Start: ptr[int64](150), End: ptr[int64](150)}, 1},
		{"range between entries", domain.LogFilter{Start: ptr[int64](151), End: ptr[int64](159)}, 0},
		{"user and level", domain.LogFilter{UserID: ptr("alice"), Level: ptr("info")}, 2},
		{"all filters", domain.LogFilter{UserID: ptr("alice"), Level: ptr("debug"), Start: ptr[int64](120), End: ptr[int64](200)}, 2},
		{"unknown user", domain.LogFilter{UserID: ptr("carol")}, 0},
		{"level is case-sensitive", domain.LogFilter{Level: ptr("ERROR")}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.f.ProjectID = p.ID
			want := match(c.f)
			if len(want) != c.want {
				t.Fatalf("test data gives %d matches, the case expects %d", len(want), c.want)
			}
			got, _ := page(t, s, domain.LogQuery{LogFilter: c.f})
			if !slices.Equal(ids(got), want) {
				t.Fatalf("got %v, want %v", ids(got), want)
			}
			n, err := countThenKeep(t, s, c.f)
			if err != nil || n != int64(len(want)) {
				t.Fatalf("DeleteLogs in a rolled-back copy = %d, %v; want %d", n, err, len(want))
			}
		})
	}
}

// countThenKeep checks what DeleteLogs would delete by deleting in a throwaway copy of the data:
// it deletes, re-inserts what it deleted, and reports the count.
func countThenKeep(t *testing.T, s domain.Store, f domain.LogFilter) (int64, error) {
	t.Helper()
	before, _ := page(t, s, domain.LogQuery{LogFilter: f})
	n, err := s.DeleteLogs(ctx(t), f)
	if err != nil {
		return n, err
	}
	if left, _ := page(t, s, domain.LogQuery{LogFilter: f}); len(left) != 0 {
		t.Fatalf("after DeleteLogs %d matching entries remain", len(left))
	}
	if len(before) > 0 {
		mustInsert(t, s, before...)
	}
	return n, nil
}

func testOrdering(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	// Same time for a whole batch: the ids (made in order) keep the order sent.
	var batch []domain.LogEntry
	for i := range 5 {
		batch = append(batch, entry(p, 500, fmt.Sprint(i)))
	}
	early, late := entry(p, 100, "early"), entry(p, 900, "late")
	batch = append([]domain.LogEntry{late}, append(batch, early)...)
	mustInsert(t, s, batch...)

	asc, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}})
	want := append([]string{early.ID}, ids(batch[1:6])...)
	want = append(want, late.ID)
	if !slices.Equal(ids(asc), want) {
		t.Fatalf("ascending = %v, want %v", ids(asc), want)
	}
	desc, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}, Desc: true})
	slices.Reverse(want)
	if !slices.Equal(ids(desc), want) {
		t.Fatalf("descending = %v, want %v", ids(desc), want)
	}
}

// walk lists every page of f with the given page size and returns the concatenation.
func walk(t *testing.T, s domain.Store, f domain.LogFilter, desc bool, limit int) ([]domain.LogEntry, int) {
	t.Helper()
	var all []domain.LogEntry
	var after *domain.Cursor
	pages := 0
	for {
		got, next := page(t, s, domain.LogQuery{LogFilter: f, Desc: desc, Limit: limit, After: after})
		pages++
		if len(got) > limit {
			t.Fatalf("page of %d entries with limit %d", len(got), limit)
		}
		if next != nil && len(got) != limit {
			t.Fatalf("a page with a next cursor holds %d entries, want %d", len(got), limit)
		}
		if next != nil && (next.ID != got[len(got)-1].ID || next.Time != got[len(got)-1].Time || next.Desc != desc) {
			t.Fatalf("next cursor %+v is not the page's last entry", next)
		}
		all = append(all, got...)
		if next == nil {
			return all, pages
		}
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
		after = next
	}
}

func testPaging(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	var batch []domain.LogEntry
	for i := range 53 {
		batch = append(batch, entry(p, int64(i/4), "info")) // runs of equal times cross page edges
	}
	mustInsert(t, s, batch...)
	for _, desc := range []bool{false, true} {
		for _, limit := range []int{1, 7, 52, 53, 54} {
			t.Run(fmt.Sprintf("desc=%v/limit=%d", desc, limit), func(t *testing.T) {
				got, pages := walk(t, s, domain.LogFilter{ProjectID: p.ID}, desc, limit)
				want := ids(batch)
				if desc {
					slices.Reverse(want)
				}
				if !slices.Equal(ids(got), want) {
					t.Fatalf("pages concatenated = %v, want %v", ids(got), want)
				}
				if wantPages := (53 + limit - 1) / limit; pages != wantPages && !(53%limit == 0 && pages == wantPages) {
					t.Fatalf("%d pages, want %d", pages, wantPages)
				}
			})
		}
	}
	// Filters hold across pages.
	got, _ := walk(t, s, domain.LogFilter{ProjectID: p.ID, Start: ptr[int64](3), End: ptr[int64](8)}, false, 5)
	if len(got) != 24 {
		t.Fatalf("filtered walk = %d entries, want 24", len(got))
	}
}

// testFilteredPagingTies: a listing filtered by a field is in (time, id) order across pages
// when many entries share a time and were written in an order other than their ids' (an index
// of a field filter may end in time alone, SQLite's migration 00019: the rowid it holds then
// follows the order written, not the ids).
func testFilteredPagingTies(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	trace := "0123456789abcdef0123456789abcdef"
	var matching, all []domain.LogEntry
	for i := range 60 {
		e := entry(p, int64(i/6), "warn") // runs of six equal times
		e.UserID, e.Subject, e.TraceID = ptr("u"), ptr("s"), ptr(trace)
		matching = append(matching, e)
		other := entry(p, int64(i/6), "info") // between them in every index, matching no filter
		other.UserID, other.Subject = ptr("v"), ptr("t")
		all = append(all, e, other)
	}
	rng := rand.New(rand.NewPCG(7, 19))
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	mustInsert(t, s, all[:55]...)
	mustInsert(t, s, all[55:]...)
	want := ids(matching) // made in order within each time: sorted by (time, id)
	filters := map[string]domain.LogFilter{
		"level":     {ProjectID: p.ID, Level: ptr("warn")},
		"user":      {ProjectID: p.ID, UserID: ptr("u")},
		"subject":   {ProjectID: p.ID, Subject: ptr("s")},
		"trace":     {ProjectID: p.ID, TraceID: ptr(trace)},
		"user+time": {ProjectID: p.ID, UserID: ptr("u"), Start: ptr[int64](2), End: ptr[int64](7)},
	}
	for name, f := range filters {
		for _, desc := range []bool{false, true} {
			for _, limit := range []int{1, 4, 7, 60} {
				t.Run(fmt.Sprintf("%s/desc=%v/limit=%d", name, desc, limit), func(t *testing.T) {
					got, _ := walk(t, s, f, desc, limit)
					w := slices.Clone(want)
					if f.Start != nil {
						w = w[*f.Start*6 : (*f.End+1)*6]
					}
					if desc {
						slices.Reverse(w)
					}
					if !slices.Equal(ids(got), w) {
						t.Fatalf("pages concatenated = %v, want %v", ids(got), w)
					}
				})
			}
		}
	}
}

func testPagingUnderInserts(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	var batch []domain.LogEntry
	for i := range 20 {
		batch = append(batch, entry(p, int64(100+i), "info"))
	}
	mustInsert(t, s, batch...)
	first, next := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}, Limit: 10})
	if next == nil {
		t.Fatal("no next cursor after a partial page")
	}
	// Entries before the cursor must not shift the next page; entries after it must appear.
	mustInsert(t, s, entry(p, 50, "before"), entry(p, 1000, "after"))
	rest, _ := walk(t, s, domain.LogFilter{ProjectID: p.ID}, false, 10)
	rest = slices.DeleteFunc(rest, func(e domain.LogEntry) bool { return e.Time <= next.Time })
	want := append(ids(batch[10:]), "")
	got := append(ids(rest), "")
	if len(got) != len(want)+1 || !slices.Equal(got[:len(want)-1], want[:len(want)-1]) || rest[len(rest)-1].Level != "after" {
		t.Fatalf("after the cursor: %v, want %v then the late entry", ids(rest), ids(batch[10:]))
	}
	if len(first) != 10 {
		t.Fatalf("first page = %d entries, want 10", len(first))
	}
	second, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}, Limit: 10, After: next})
	if !slices.Equal(ids(second), ids(batch[10:])) {
		t.Fatalf("second page = %v, want %v", ids(second), ids(batch[10:]))
	}
}

func testStopEarly(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	for i := range 5 {
		mustInsert(t, s, entry(p, int64(i), "info"))
	}
	// A consumer that stops ranging early must release the store's resources: do it many times
	// more than any pool holds connections, then use the store again.
	for range 50 {
		err := s.ListLogs(ctx(t), domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}, Limit: 5}, func(pg domain.Page) error {
			for range pg.Entries {
				break
			}
			return nil
		})
		if err != nil {
			t.Fatalf("ListLogs: %v", err)
		}
	}
	sentinel := fmt.Errorf("consumer failed")
	err := s.ListLogs(ctx(t), domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}, Limit: 5}, func(domain.Page) error { return sentinel })
	if !errors.Is(err, sentinel) {
		t.Fatalf("ListLogs returned %v, want the consumer's error", err)
	}
	if got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}}); len(got) != 5 {
		t.Fatalf("after early stops: %d entries, want 5", len(got))
	}
}

func testDeleteLogs(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	other := mustProject(t, s, "other", base)
	mustInsert(t, s, entry(p, 1, "info"), entry(p, 2, "error"), entry(p, 3, "error"), entry(other, 2, "error"))
	n, err := s.DeleteLogs(ctx(t), domain.LogFilter{ProjectID: p.ID, Level: ptr("error"), Start: ptr[int64](3)})
	if err != nil || n != 1 {
		t.Fatalf("DeleteLogs = %d, %v; want 1", n, err)
	}
	n, err = s.DeleteLogs(ctx(t), domain.LogFilter{ProjectID: p.ID})
	if err != nil || n != 2 {
		t.Fatalf("DeleteLogs(project) = %d, %v; want 2", n, err)
	}
	n, err = s.DeleteLogs(ctx(t), domain.LogFilter{ProjectID: p.ID})
	if err != nil || n != 0 {
		t.Fatalf("DeleteLogs on nothing = %d, %v; want 0", n, err)
	}
	if got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: other.ID}}); len(got) != 1 {
		t.Fatalf("other project's logs = %d, want 1 (deletes stay inside their project)", len(got))
	}
}

func testLiteralMatching(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "'; DROP TABLE projects; --", base)
	nasty := []string{"%", "_", "a%", "a_c", "abc", "'", `"`, `\`, "' OR '1'='1", "../../etc/passwd", "..\\..\\win.ini", "%00", "line\nbreak"}
	var batch []domain.LogEntry
	for i, v := range nasty {
		e := entry(p, int64(i), v)
		e.UserID, e.Subject, e.Message = ptr(v), ptr(v), v
		batch = append(batch, e)
	}
	mustInsert(t, s, batch...)
	for i, v := range nasty {
		got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID, UserID: ptr(v)}})
		if len(got) != 1 || got[0].ID != batch[i].ID || got[0].Message != v {
			t.Errorf("user_id %q matched %d entries, want exactly its own", v, len(got))
		}
		got, _ = page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID, Level: ptr(v)}})
		if len(got) != 1 || got[0].ID != batch[i].ID {
			t.Errorf("level %q matched %d entries, want exactly its own", v, len(got))
		}
	}
	if got, err := s.GetProject(ctx(t), p.ID); err != nil || got.Name != p.Name {
		t.Fatalf("project with a hostile name = %+v, %v", got, err)
	}
}

func testIdempotency(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	now := time.Now().UTC().Truncate(time.Microsecond)
	rec := &domain.IdempotencyRecord{Scope: "k|" + p.ID, Key: "retry-1", Fingerprint: "f1", Created: 2, CreatedAt: now}
	const window = time.Hour
	create := func(es []domain.LogEntry, rec *domain.IdempotencyRecord) (*domain.IdempotencyRecord, error) {
		w, err := s.CreateLogs(ctx(t), es, domain.LogWrite{Record: rec, Window: window})
		return w.Prior, err
	}

	prior, err := create([]domain.LogEntry{entry(p, 1, "info"), entry(p, 2, "info")}, rec)
	if err != nil || prior != nil {
		t.Fatalf("first write = %+v, %v", prior, err)
	}
	// The retry finds the record and stores nothing.
	prior, err = create([]domain.LogEntry{entry(p, 1, "info"), entry(p, 2, "info")}, rec)
	if err != nil || prior == nil || prior.Fingerprint != "f1" || prior.Created != 2 {
		t.Fatalf("retry = %+v, %v; want the first record", prior, err)
	}
	if got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}}); len(got) != 2 {
		t.Fatalf("%d entries after a retry, want 2", len(got))
	}
	// Another scope is another key space.
	other := *rec
	other.Scope = "other|" + p.ID
	if prior, err := create([]domain.LogEntry{entry(p, 3, "info")}, &other); err != nil || prior != nil {
		t.Fatalf("same key in another scope = %+v, %v", prior, err)
	}
	// A failed batch leaves no record: its retry is a first write.
	failing := &domain.IdempotencyRecord{Scope: rec.Scope, Key: "retry-2", Fingerprint: "f2", Created: 1, CreatedAt: now}
	ghost := domain.Project{ID: newID()}
	_, err = create([]domain.LogEntry{entry(ghost, 1, "info")}, failing)
	wantMissing(t, err, ghost.ID)
	if prior, err := create([]domain.LogEntry{entry(p, 4, "info")}, failing); err != nil || prior != nil {
		t.Fatalf("retry of a failed batch = %+v, %v; want a first write", prior, err)
	}
	// Past the window the key is free again, and sweeping forgets old records.
	later := *rec
	later.CreatedAt = now.Add(2 * window)
	later.Fingerprint = "f3"
	if prior, err := create([]domain.LogEntry{entry(p, 5, "info")}, &later); err != nil || prior != nil {
		t.Fatalf("key reused after the window = %+v, %v", prior, err)
	}
	n, err := s.SweepIdempotency(ctx(t), now.Add(time.Minute))
	if err != nil || n != 2 { // retry-1 of "other" and retry-2 are older than a minute past now
		t.Fatalf("sweep = %d, %v; want 2", n, err)
	}
	if prior, err := create([]domain.LogEntry{entry(p, 6, "info")}, &later); err != nil || prior == nil || prior.Fingerprint != "f3" {
		t.Fatalf("the swept-around record = %+v, %v; want it kept", prior, err)
	}
}

func testListUnknownProject(t *testing.T, s domain.Store) {
	called := false
	err := s.ListLogs(ctx(t), domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: newID()}, Limit: 10}, func(domain.Page) error { called = true; return nil })
	wantKind(t, err, domain.KindNotFound)
	if called {
		t.Error("the page callback ran for a project that does not exist")
	}
	// An existing project with nothing matching is an empty page, not an error.
	p := mustProject(t, s, "empty", base)
	if got, next := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}}); len(got) != 0 || next != nil {
		t.Fatalf("empty project = %d entries, next %v", len(got), next)
	}
}

// service is the domain's service over s, for the cases that show a rule of the domain and the
// store's keeping of it together.
func service(s domain.Store) *domain.Service {
	return domain.NewService(s, domain.Options{NewID: newID})
}

// asAdmin acts for an admin API key, as a transport would after authenticating one.
func asAdmin(t *testing.T) context.Context {
	return domain.WithPrincipal(ctx(t), domain.Principal{Admin: true, KeyID: "0123456789abcdef"})
}

// wide returns a string of random four-byte characters (U+10000 and above, which compress
// badly, as an index entry of real data would) of at most maxChars characters and maxBytes
// bytes, filled up to maxBytes with ASCII when the characters run out first or bytes remain.
func wide(rng *rand.Rand, maxBytes, maxChars int) string {
	var b strings.Builder
	for n := 0; n < maxChars && b.Len()+4 <= maxBytes; n++ {
		b.WriteRune(rune(0x10000 + rng.IntN(0x10FFFF-0x10000+1)))
	}
	for b.Len() < maxBytes && utf8.RuneCountInString(b.String()) < maxChars {
		b.WriteByte(byte('a' + rng.IntN(26)))
	}
	return b.String()
}

// testStringsAtTheLimits stores the longest strings the domain accepts, in the characters that
// take the most bytes, and matches entries by them: every value that passes the domain's rules
// fits the store, indexes included (a PostgreSQL B-tree entry holds about 2,700 bytes).
func testStringsAtTheLimits(t *testing.T, s domain.Store) {
	l := domain.DefaultLimits()
	svc, c := service(s), asAdmin(t)
	rng := rand.New(rand.NewPCG(10, 2))
	name := wide(rng, 4*l.MaxNameChars, l.MaxNameChars)
	p, err := svc.CreateProject(c, domain.ProjectInput{Name: name})
	if err != nil {
		t.Fatalf("CreateProject(a name of %d characters, %d bytes): %v", utf8.RuneCountInString(name), len(name), err)
	}
	level := wide(rng, 4*l.MaxLevelChars, l.MaxLevelChars)
	user, subject := wide(rng, l.MaxUserIDBytes, l.MaxUserIDBytes), wide(rng, l.MaxSubjectBytes, l.MaxSubjectBytes)
	asciiUser := strings.Repeat("u", l.MaxUserIDBytes)
	message := wide(rng, l.MaxMessageBytes, l.MaxMessageBytes)
	in := []domain.LogInput{
		{ProjectID: p.ID, Message: &message, Level: &level, Subject: &subject, UserID: &user, Time: ptr[int64](1)},
		{ProjectID: p.ID, Message: ptr("ascii"), Level: &level, Subject: &asciiUser, UserID: &asciiUser, Time: ptr[int64](2)},
		{ProjectID: p.ID, Message: ptr("other"), Level: &level, UserID: ptr(user[:len(user)-4]), Time: ptr[int64](3)},
	}
	if _, err := svc.CreateLogs(c, in, ""); err != nil {
		t.Fatalf("CreateLogs(strings at the limits): %v", err)
	}
	list := func(f domain.LogFilter) []domain.LogEntry {
		t.Helper()
		f.ProjectID = p.ID
		var got []domain.LogEntry
		err := svc.ListLogs(c, domain.LogQuery{LogFilter: f}, func(pg domain.Page) error {
			for e, err := range pg.Entries {
				if err != nil {
					return err
				}
				got = append(got, e)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("ListLogs(%d-byte user_id): %v", len(*f.UserID), err)
		}
		return got
	}
	for i, u := range []string{user, asciiUser} {
		got := list(domain.LogFilter{UserID: &u, Level: &level})
		if len(got) != 1 || got[0].Time != int64(i+1) || *got[0].UserID != u || *got[0].Subject != *in[i].Subject || got[0].Level != level || got[0].Message != *in[i].Message {
			t.Fatalf("filter by the %d-byte user_id %d: got %d entries, want entry %d exactly as sent", len(u), i, len(got), i+1)
		}
	}
	if got, err := svc.GetProject(c, p.ID); err != nil || got.Name != name {
		t.Fatalf("project with the longest name = %v; want it as sent", err)
	}
	n, err := svc.DeleteLogs(c, domain.LogFilter{ProjectID: p.ID, UserID: &user})
	if err != nil || n != 1 {
		t.Fatalf("DeleteLogs(the %d-byte user_id) = %d, %v; want 1", len(user), n, err)
	}
}

// testUnknownProjectsCapped sends a full batch in which every other entry names one of three
// projects that do not exist: the store names the three once each, and the answer names at most
// Limits.MaxFieldErrors entries and counts the rest.
func testUnknownProjectsCapped(t *testing.T, s domain.Store) {
	l := domain.DefaultLimits()
	p := mustProject(t, s, "p", base)
	ghosts := []domain.Project{{ID: newID()}, {ID: newID()}, {ID: newID()}}
	entries := make([]domain.LogEntry, l.MaxBatchEntries)
	in := make([]domain.LogInput, l.MaxBatchEntries)
	for i := range entries {
		owner := p
		if i%2 == 1 {
			owner = ghosts[(i/2)%3]
		}
		entries[i] = entry(owner, int64(i), "info")
		in[i] = domain.LogInput{ProjectID: owner.ID, Message: ptr("m")}
	}
	_, err := s.CreateLogs(ctx(t), entries, domain.LogWrite{})
	wantMissing(t, err, ghosts[0].ID, ghosts[1].ID, ghosts[2].ID)

	_, err = service(s).CreateLogs(asAdmin(t), in, "")
	wantKind(t, err, domain.KindUnknownProject)
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatalf("error %v is not a *domain.Error", err)
	}
	if len(de.Fields) != l.MaxFieldErrors || !slices.Equal(de.Fields[0].Path, []string{"1", "project_id"}) {
		t.Fatalf("%d fields, first %v; want %d, the first /1/project_id", len(de.Fields), de.Fields[0], l.MaxFieldErrors)
	}
	if want := fmt.Sprintf("(%d more problems not listed)", l.MaxBatchEntries/2-l.MaxFieldErrors); !strings.Contains(de.Msg, want) {
		t.Errorf("message %q does not say %q", de.Msg, want)
	}
	if got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}}); len(got) != 0 {
		t.Fatalf("a batch naming unknown projects left %d rows, want 0", len(got))
	}
}

// testIdempotentManyProjects writes one idempotent admin batch naming 300 projects: what the
// store keeps of its scope must not grow with the projects (an index entry has a size limit).
func testIdempotentManyProjects(t *testing.T, s domain.Store) {
	svc, c := service(s), asAdmin(t)
	var in []domain.LogInput
	for i := range 300 {
		p := mustProject(t, s, fmt.Sprint("p", i), base)
		in = append(in, domain.LogInput{ProjectID: p.ID, Message: ptr("m")})
	}
	got, err := svc.CreateLogs(c, in, "many-projects")
	if err != nil || got.N != 300 || got.Replayed {
		t.Fatalf("first write = %+v, %v; want 300 stored", got, err)
	}
	got, err = svc.CreateLogs(c, in, "many-projects")
	if err != nil || got.N != 300 || !got.Replayed {
		t.Fatalf("retry = %+v, %v; want a replay of 300", got, err)
	}
	if got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: in[299].ProjectID}}); len(got) != 1 {
		t.Fatalf("a project of the batch holds %d entries after a retry, want 1", len(got))
	}
}
