package sqlstore_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/domain"
)

// TestFieldIndexesMigration takes a database holding two projects' entries, many of one time
// written out of id order, down to the schema before migration 00019 and up again, on both
// engines: the field filters' indexes are the previous ones after the down step and the new
// ones after the up step, and each time every field filter lists exactly its entries in
// (time, id) order, both ways, in one page and (after the up step) in pages of 7.
func TestFieldIndexesMigration(t *testing.T) {
	skipUnderRace(t)
	onBothEngines(t, testFieldIndexesMigration)
}

func testFieldIndexesMigration(t *testing.T, engine, dsn string, _ func(time.Time) any, open func() (*sqlstore.Store, error)) {
	ctx := t.Context()
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	projects := newProjects(t, s, 2)
	trace := func(i int) *string { return ptr(fmt.Sprintf("%032x", i%3)) }
	var all []domain.LogEntry
	for i := range 2_000 {
		all = append(all, domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: projects[i%2], Time: int64(i / 10), // runs of ten equal times
			Level: []string{"info", "warn", "error"}[i%3], Message: "m", UserID: ptr(fmt.Sprint("u", i%5)), Subject: ptr(fmt.Sprint("s", i%7)), TraceID: trace(i)})
	}
	want := slices.Clone(all) // in (time, id) order: ids made in order
	rand.New(rand.NewPCG(3, 5)).Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	for b := 0; b < len(all); b += 250 {
		if _, err := s.CreateLogs(ctx, all[b:b+250], domain.LogWrite{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	p := projects[1]
	filters := map[string]domain.LogFilter{
		"logs_user":    {ProjectID: p, UserID: ptr("u3")},
		"logs_level":   {ProjectID: p, Level: ptr("warn")},
		"logs_subject": {ProjectID: p, Subject: ptr("s4"), Start: ptr[int64](20), End: ptr[int64](150)},
		"logs_trace":   {ProjectID: p, TraceID: trace(1)},
	}
	matches := func(f domain.LogFilter, desc bool) []string {
		var out []string
		for _, e := range want {
			if e.ProjectID == f.ProjectID && (f.UserID == nil || *e.UserID == *f.UserID) && (f.Level == nil || e.Level == *f.Level) &&
				(f.Subject == nil || *e.Subject == *f.Subject) && (f.TraceID == nil || *e.TraceID == *f.TraceID) &&
				(f.Start == nil || e.Time >= *f.Start) && (f.End == nil || e.Time <= *f.End) {
				out = append(out, e.ID)
			}
		}
		if desc {
			slices.Reverse(out)
		}
		return out
	}

	db, err := sql.Open(engine, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The indexes' definitions as each engine prints them, with "time" unquoted.
	checkIndexes := func(t *testing.T, want map[string]string) {
		t.Helper()
		for name, w := range want {
			var def string
			q := "SELECT sql FROM sqlite_schema WHERE name = $1"
			if engine == "postgres" {
				q = "SELECT pg_get_indexdef(CAST($1 AS regclass))"
			}
			if err := db.QueryRowContext(ctx, q, name).Scan(&def); err != nil {
				t.Fatal(err)
			}
			def = strings.ReplaceAll(strings.ReplaceAll(def, `"time"`, "time"), "USING btree ", "")
			if !strings.HasSuffix(def, w) {
				t.Errorf("%s is %s, want it to end in %s", name, def, w)
			}
		}
	}
	before := map[string]string{
		"logs_user":    "(project_id, user_id, time, id)",
		"logs_level":   "(project_id, level, time, id)",
		"logs_subject": "(project_id, subject, time, id)",
		"logs_trace":   "(project_id, trace_id, time, id) WHERE trace_id IS NOT NULL",
	}
	after := map[string]string{
		"logs_user":    "(project_id, user_id, time) WHERE user_id IS NOT NULL",
		"logs_level":   "(project_id, level, time)",
		"logs_subject": "(project_id, subject, time) WHERE subject IS NOT NULL",
		"logs_trace":   "(project_id, trace_id, time) WHERE trace_id IS NOT NULL",
	}
	if engine == "postgres" {
		for name, def := range before {
			before[name] = strings.Replace(def, "WHERE trace_id IS NOT NULL", "WHERE (trace_id IS NOT NULL)", 1)
		}
		after = map[string]string{
			"logs_user":    "(project_id, user_id, time) WHERE (user_id IS NOT NULL)",
			"logs_level":   before["logs_level"], // kept (see the migration)
			"logs_subject": "(project_id, subject, time) WHERE (subject IS NOT NULL)",
			"logs_trace":   "(project_id, trace_id, time) WHERE (trace_id IS NOT NULL)",
		}
	}

	if err := sqlstore.MigrateDownTo(ctx, db, engine, 18); err != nil {
		t.Fatalf("down: %v", err)
	}
	t.Run("down", func(t *testing.T) {
		checkIndexes(t, before)
		for name, f := range filters {
			for _, desc := range []bool{false, true} {
				// The statement the store sends, on the previous schema, in one page.
				query, args := sqlstore.ListSQL(s, domain.LogQuery{LogFilter: f, Desc: desc, Limit: 10_000, Now: 1_000})
				var got []string
				rows, err := db.QueryContext(ctx, "SELECT id FROM ("+query+") page", args...)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var id string
					if err := rows.Scan(&id); err != nil {
						t.Fatal(err)
					}
					got = append(got, id)
				}
				if err := rows.Close(); err != nil {
					t.Fatal(err)
				}
				if w := matches(f, desc); !slices.Equal(got, w) {
					t.Errorf("%s desc=%v: %d entries, want %d in (time, id) order", name, desc, len(got), len(w))
				}
			}
		}
	})
	t.Run("up", func(t *testing.T) {
		s := openUpgraded(t, open)
		checkIndexes(t, after)
		for name, f := range filters {
			for _, desc := range []bool{false, true} {
				for _, limit := range []int{7, 10_000} {
					var got []string
					q := domain.LogQuery{LogFilter: f, Desc: desc, Limit: limit, Now: 1_000}
					for {
						var next *domain.Cursor
						err := s.ListLogs(ctx, q, func(pg domain.Page) error {
							for e, err := range pg.Entries {
								if err != nil {
									return err
								}
								got = append(got, e.ID)
							}
							next = pg.Next
							return nil
						})
						if err != nil {
							t.Fatal(err)
						}
						if next == nil {
							break
						}
						q.After = next
					}
					if w := matches(f, desc); !slices.Equal(got, w) {
						t.Errorf("%s desc=%v limit=%d: %d entries, want %d in (time, id) order", name, desc, limit, len(got), len(w))
					}
				}
			}
		}
	})
}
