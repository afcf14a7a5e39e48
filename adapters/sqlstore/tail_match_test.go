package sqlstore_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

// TestTailFilterAgreesWithGo checks, on both stores, that the live tail's filter in Go
// (domain.LogFilter.Matches, which a tail applies to the unfiltered reads of its project's hub)
// accepts exactly what the store's own filter returns: over a random corpus and random filters,
// ReadTail with the filter returns, in the same order, the entries of the unfiltered ReadTail
// that Matches accepts, and Matches agrees with the contract's reference (time bounds too).
func TestTailFilterAgreesWithGo(t *testing.T) {
	for name, open := range map[string]func(*testing.T) domain.Store{"sqlite": openSQLite, "postgres": openPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			ts, ok := s.(domain.TailStore)
			if !ok {
				t.Fatal("the store does not read in ingest order")
			}
			now := time.Now().UTC()
			p := domain.Project{ID: uuid.Must(uuid.NewV7()).String(), Name: "tail", CreatedAt: now, UpdatedAt: now}
			other := domain.Project{ID: uuid.Must(uuid.NewV7()).String(), Name: "other", CreatedAt: now, UpdatedAt: now}
			for _, pr := range []domain.Project{p, other} {
				if err := s.CreateProject(t.Context(), pr); err != nil {
					t.Fatal(err)
				}
			}
			r := rand.New(rand.NewPCG(16, uint64(now.UnixNano())))
			const span = 3600_000
			at := now.UnixMilli()
			newID := func() string { return uuid.Must(uuid.NewV7()).String() }
			head, err := ts.TailHead(t.Context(), p.ID)
			if err != nil {
				t.Fatal(err)
			}
			for range 4 {
				for _, batch := range [][]domain.LogEntry{storetest.Corpus(r, p.ID, 150, at, span, newID), storetest.Corpus(r, other.ID, 10, at, span, newID)} {
					if _, err := s.CreateLogs(t.Context(), batch, nil, 0, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			// On PostgreSQL a transaction of another test still running holds the tail back
			// (the xmin rule); once all 600 are read, every later read sees them.
			var all []domain.TailEntry
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
				if all = readAll(t, ts, domain.LogFilter{ProjectID: p.ID}, head); len(all) == 600 || time.Now().After(deadline) {
					break
				}
			}
			if len(all) != 600 {
				t.Fatalf("the unfiltered tail read %d entries, want 600", len(all))
			}
			matched := 0
			for range 200 {
				f := storetest.RandomFilter(r, p.ID, at, span)
				if len(f.Levels) > 0 && r.IntN(2) == 0 { // the one-level form too
					f.Level, f.Levels = &f.Levels[0], f.Levels[1:]
				}
				for _, e := range all {
					if got, want := f.Matches(e.LogEntry), storetest.Matches(e.LogEntry, f); got != want {
						t.Fatalf("Matches(%+v) of %+v = %v, the reference says %v", f, e.LogEntry, got, want)
					}
				}
				f.Start, f.End = nil, nil // a tail has no time bounds
				var want []string
				for _, e := range all {
					if f.Matches(e.LogEntry) {
						want = append(want, e.ID)
					}
				}
				matched += len(want)
				var got []string
				for _, e := range readAll(t, ts, f, head) {
					got = append(got, e.ID)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("ReadTail(%+v) returned %d entries, Matches accepts %d of the unfiltered read:\n got %v\nwant %v", f, len(got), len(want), got, want)
				}
			}
			if matched == 0 {
				t.Fatal("no random filter matched anything: the test checks nothing")
			}
		})
	}
}

// readAll reads the tail of f from after to its end, in small pages.
func readAll(t *testing.T, ts domain.TailStore, f domain.LogFilter, after domain.TailPosition) []domain.TailEntry {
	t.Helper()
	var out []domain.TailEntry
	for {
		got, err := ts.ReadTail(t.Context(), domain.TailQuery{LogFilter: f, After: after, Limit: 97})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, got...)
		if len(got) < 97 {
			return out
		}
		after = got[len(got)-1].At
	}
}
