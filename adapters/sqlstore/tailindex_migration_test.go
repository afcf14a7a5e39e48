package sqlstore_test

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/domain"
)

// TestTailIndexMigration takes a database holding three projects' batches, some batches mixing
// projects, and a project's history written before ingest order was kept (no tail position),
// down to the schema before migration 00017 and up again, on both engines: logs_tail is the
// previous index after the down step and the new one after the up step, and each time a tail
// of each project, read forward from its start in small pages and replayed backwards, gives
// exactly its batches' entries in ingest order, never the history.
func TestTailIndexMigration(t *testing.T) {
	skipUnderRace(t)
	onBothEngines(t, testTailIndexMigration)
}

func testTailIndexMigration(t *testing.T, engine, dsn string, _ func(time.Time) any, open func() (*sqlstore.Store, error)) {
	ctx := t.Context()
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	projects := newProjects(t, s, 3)
	want := map[string][]string{} // each project's ids in ingest order
	for b := range 60 {
		batch := make([]domain.LogEntry, 40)
		for i := range batch {
			p := projects[(b+i/20)%3] // two projects a batch, a block of 20 each
			id := uuid.Must(uuid.NewV7()).String()
			batch[i] = domain.LogEntry{ID: id, ProjectID: p, Time: int64(b*40 + i), Level: "info", Message: fmt.Sprint("m", i)}
			want[p] = append(want[p], id)
		}
		if _, err := s.CreateLogs(ctx, batch, domain.LogWrite{}); err != nil {
			t.Fatal(err)
		}
	}
	// History: entries written before 00007 carry no tail position, and no tail gives them.
	history := "INSERT INTO logs (project_id, time, id, level, message, tail_tx, tail_pos) VALUES ($1, 5, $2, 'info', 'old', NULL, NULL)"
	if engine == "sqlite" {
		history = strings.NewReplacer("$1", "?", "$2", "?").Replace(history)
	}
	for range 30 {
		if _, err := sqlstore.WriteDB(s).ExecContext(ctx, history, projects[0], uuid.Must(uuid.NewV7()).String()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := sql.Open(engine, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	indexDef := func(t *testing.T) string {
		t.Helper()
		var def string
		q := "SELECT sql FROM sqlite_schema WHERE name = 'logs_tail'"
		if engine == "postgres" {
			q = "SELECT pg_get_indexdef(CAST('logs_tail' AS regclass))"
		}
		if err := db.QueryRowContext(ctx, q).Scan(&def); err != nil {
			t.Fatal(err)
		}
		return def
	}
	// readAll reads each project's tail from its start, 7 entries a page, with read, and
	// checks that it gives exactly the project's batches' entries in ingest order.
	readAll := func(t *testing.T, read func(domain.TailQuery) []domain.TailEntry) {
		t.Helper()
		for _, p := range projects {
			var got []string
			q := domain.TailQuery{LogFilter: domain.LogFilter{ProjectID: p}, Limit: 7}
			for {
				page := read(q)
				if len(page) == 0 {
					break
				}
				for _, e := range page {
					got = append(got, e.ID)
				}
				q.After = page[len(page)-1].At
			}
			if !slices.Equal(got, want[p]) {
				t.Errorf("project %s: the tail read %d entries, want its %d in ingest order", p, len(got), len(want[p]))
			}
		}
	}

	if err := sqlstore.MigrateDownTo(ctx, db, engine, 16); err != nil {
		t.Fatalf("down: %v", err)
	}
	// Down: the previous index, and the statements (the same in both releases) read through it.
	t.Run("down", func(t *testing.T) {
		if def := indexDef(t); !strings.Contains(def, "(project_id, tail_tx, tail_pos)") {
			t.Fatalf("after the down step logs_tail is %s, want the previous index", def)
		}
		readAll(t, func(q domain.TailQuery) []domain.TailEntry {
			query, args := sqlstore.ReadTailSQL(s, q) // s is closed: only its statements are used
			rows, err := db.QueryContext(ctx, "SELECT id, tail_seq, tail_pos FROM ("+query+") t ORDER BY tail_seq, tail_pos", args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var page []domain.TailEntry
			for rows.Next() {
				var e domain.TailEntry
				var seq int64
				if err := rows.Scan(&e.ID, &seq, &e.At.Pos); err != nil {
					t.Fatal(err)
				}
				e.At.Tx = uint64(seq)
				page = append(page, e)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			return page
		})
	})
	t.Run("up", func(t *testing.T) {
		s := openUpgraded(t, open)
		newDef := "(tail_tx) WHERE (tail_tx IS NOT NULL)"
		if engine == "sqlite" {
			newDef = "(tail_tx, tail_pos) WHERE tail_tx IS NOT NULL"
		}
		if def := indexDef(t); !strings.Contains(def, newDef) {
			t.Fatalf("after the up step logs_tail is %s, want %s", def, newDef)
		}
		var last uint64 // the newest batch any tail read
		readAll(t, func(q domain.TailQuery) []domain.TailEntry {
			page, err := s.ReadTail(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > 0 {
				last = max(last, page[len(page)-1].At.Tx)
			}
			return page
		})
		for _, p := range projects {
			replayed, err := s.ReplayTail(ctx, domain.LogFilter{ProjectID: p}, domain.TailPosition{Tx: last, Pos: 1<<31 - 1}, 1000)
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]string, len(replayed))
			for i, e := range replayed {
				ids[i] = e.ID
			}
			if !slices.Equal(ids, want[p]) {
				t.Errorf("project %s: the replay gave %d entries, want its %d in ingest order", p, len(ids), len(want[p]))
			}
		}
	})
}
