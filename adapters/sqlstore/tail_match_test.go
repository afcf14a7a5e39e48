package sqlstore_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
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
			ts, ok := s.(tailReader)
			if !ok {
				t.Fatal("the store does not read in ingest order")
			}
			now := time.Now().UTC()
			p, other := tailProjects(t, s, "tail", now)
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
					if _, err := s.CreateLogs(t.Context(), batch, domain.LogWrite{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			all := readAll(t, ts, domain.LogFilter{ProjectID: p.ID}, head)
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

// tailProjects creates, at now, a project named name and one named "other".
func tailProjects(t *testing.T, s domain.Store, name string, now time.Time) (p, other domain.Project) {
	t.Helper()
	p = domain.Project{ID: uuid.Must(uuid.NewV7()).String(), Name: name, CreatedAt: now, UpdatedAt: now}
	other = domain.Project{ID: uuid.Must(uuid.NewV7()).String(), Name: "other", CreatedAt: now, UpdatedAt: now}
	for _, pr := range []domain.Project{p, other} {
		if err := s.CreateProject(t.Context(), pr); err != nil {
			t.Fatal(err)
		}
	}
	return p, other
}

// readAll reads the tail of f from after to its end, in small pages.
// tailReader is what the tail hub reads of a store (tailhub.Store).
type tailReader interface {
	domain.TailStore
	TailHorizon(ctx context.Context, projectID string) (domain.TailPosition, error)
	ReadTail(ctx context.Context, q domain.TailQuery) ([]domain.TailEntry, error)
}

func readAll(t *testing.T, ts tailReader, f domain.LogFilter, after domain.TailPosition) []domain.TailEntry {
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

// TestTailPlacedBatches checks, on both stores, what a project's hub relies on to hand on the
// batches written through its instance from memory: CreateLogs returns the place every entry of
// a batch is read at, (its project's batch number, index in the batch), and the entry reads
// back equal to what was written; a read bounded by a horizon stops before it, and a read that
// skips batches returns every other one, in order. The numbers are the project's own: 1, 2, 3
// however many batches other projects write between, a batch of two projects takes the next
// number of each.
func TestTailPlacedBatches(t *testing.T) {
	for name, open := range map[string]func(*testing.T) domain.Store{"sqlite": openSQLite, "postgres": openPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			ts := s.(tailReader)
			now := time.Now().UTC()
			p, other := tailProjects(t, s, "placed", now)
			head, err := ts.TailHead(t.Context(), p.ID)
			if err != nil {
				t.Fatal(err)
			}
			entry := func(i int) domain.LogEntry {
				e := domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p.ID, Time: now.UnixMilli() - int64(i), Level: "warn", Message: "Straße ΣΊΣΥΦΟΣ 100% a_b " + strconv.Itoa(i)}
				if i%2 == 0 {
					e.Subject, e.UserID = ptr("checkout"), ptr("u"+strconv.Itoa(i))
					e.Attributes = json.RawMessage(`{"a":[1,2.50,true,null],"k":"v é \"q\"","n":{"m":-0}}`)
					e.TraceID, e.SpanID = ptr("4bf92f3577b34da6a3ce929d0e0e4736"), ptr("00f067aa0ba902b7")
				}
				return e
			}
			var batches [3][]domain.LogEntry
			var txs [3]uint64
			for b := range batches {
				for i := range 4 {
					batches[b] = append(batches[b], entry(b*4+i))
				}
				w, err := s.CreateLogs(t.Context(), batches[b], domain.LogWrite{})
				if err != nil {
					t.Fatal(err)
				}
				if w.Batches[p.ID] != uint64(b+1) || len(w.Batches) != 1 {
					t.Fatalf("batch %d placed at %v; want %s: %d", b, w.Batches, p.ID, b+1)
				}
				txs[b] = w.Batches[p.ID]
				for range b + 1 { // other projects' writes take none of p's numbers
					if _, err := s.CreateLogs(t.Context(), []domain.LogEntry{{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: other.ID, Time: 1, Level: "info", Message: "m"}}, domain.LogWrite{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			horizon, err := ts.TailHorizon(t.Context(), p.ID)
			if err != nil {
				t.Fatal(err)
			}
			if horizon.Tx != txs[2] {
				t.Fatalf("horizon %+v after batch %d", horizon, txs[2])
			}
			read := func(q domain.TailQuery) []domain.TailEntry {
				t.Helper()
				q.ProjectID, q.After, q.Limit = p.ID, head, 100
				got, err := ts.ReadTail(t.Context(), q)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			want := func(bs ...int) []domain.TailEntry {
				var out []domain.TailEntry
				for _, b := range bs {
					for i, e := range batches[b] {
						out = append(out, domain.TailEntry{LogEntry: e, At: domain.TailPosition{Tx: txs[b], Pos: int64(i)}})
					}
				}
				return out
			}
			check := func(what string, got, want []domain.TailEntry) {
				t.Helper()
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
				}
			}
			check("everything before the horizon", read(domain.TailQuery{Before: horizon}), want(0, 1, 2))
			check("the same, without a bound", read(domain.TailQuery{}), want(0, 1, 2))
			check("batches 0 and 2 skipped", read(domain.TailQuery{Before: horizon, Skip: []uint64{txs[0], txs[2]}}), want(1))
			// Skipping a batch past the bound must not widen the read.
			check("bounded in the middle of batch 1", read(domain.TailQuery{Before: domain.TailPosition{Tx: txs[1], Pos: 2}, Skip: []uint64{txs[0], txs[2]}}), want(1)[:2])
			check("skipping a batch between and one past the horizon", read(domain.TailQuery{Before: horizon, Skip: []uint64{txs[1], horizon.Tx + 10}}), want(0, 2))
			check("filtered and skipping", read(domain.TailQuery{LogFilter: domain.LogFilter{UserID: ptr("u10")}, Before: horizon, Skip: []uint64{txs[0]}}), want(2)[2:3])
			got, err := ts.ReplayTail(t.Context(), domain.LogFilter{ProjectID: p.ID}, domain.TailPosition{Tx: txs[1], Pos: 1}, 3)
			if err != nil {
				t.Fatal(err)
			}
			check("replayed up to the middle of batch 1", got, append(want(0)[3:], want(1)[:2]...))

			// A batch of both projects takes the next number of each; each project reads its own.
			both := []domain.LogEntry{entry(12), {ID: uuid.Must(uuid.NewV7()).String(), ProjectID: other.ID, Time: 1, Level: "info", Message: "o"}, entry(13)}
			w, err := s.CreateLogs(t.Context(), both, domain.LogWrite{})
			if err != nil {
				t.Fatal(err)
			}
			if w.Batches[p.ID] != 4 || w.Batches[other.ID] != 7 {
				t.Fatalf("a batch of both projects placed at %v; want 4 for %s, 7 for %s", w.Batches, p.ID, other.ID)
			}
			mixed := []domain.TailEntry{{LogEntry: both[0], At: domain.TailPosition{Tx: 4, Pos: 0}}, {LogEntry: both[2], At: domain.TailPosition{Tx: 4, Pos: 2}}}
			check("the batch of both projects", read(domain.TailQuery{LogFilter: domain.LogFilter{}, After: domain.TailPosition{}}), append(want(0, 1, 2), mixed...))
		})
	}
}
