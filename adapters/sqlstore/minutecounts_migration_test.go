package sqlstore_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/domain"
)

// TestMinuteCountsMigration upgrades a database that the previous release (schema version 17)
// filled, entries and both rollups, to migration 00018 (the per-minute counts held in the
// hourly rows), then takes it down and up again, on both engines. Three projects hold entries
// over five hours, negative times among them, at three levels. After each upgrade the stats the
// rollup answers (steps of a minute, five minutes and an hour, ranges cut inside minutes and
// hours) equal the counts of the entries; the down step gives back exactly the per-minute rows
// the previous release kept.
func TestMinuteCountsMigration(t *testing.T) {
	skipUnderRace(t)
	onBothEngines(t, testMinuteCountsMigration)
}

func testMinuteCountsMigration(t *testing.T, engine, dsn string, timeArg func(time.Time) any, open func() (*sqlstore.Store, error)) {
	ctx := t.Context()
	raw, bind := migratedTo(t, engine, dsn, 17)
	created := time.Now().UTC().Truncate(time.Microsecond)
	const first = -2 * 3_600_000 // two hours before the epoch
	type entry struct {
		time  int64
		level string
	}
	entries := map[string][]entry{}
	var projects []string
	for pi := range 3 {
		p := uuid.Must(uuid.NewV7()).String()
		projects = append(projects, p)
		if _, err := raw.ExecContext(ctx, bind("INSERT INTO projects (id, name, created_at, updated_at) VALUES (?, 'p', ?, ?)"), p, timeArg(created), timeArg(created)); err != nil {
			t.Fatal(err)
		}
		tx, err := raw.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 1500 {
			// Uneven: a minute holds from none to several entries of a level.
			e := entry{first + int64(i)*7_919_113%(5*3_600_000) + int64(pi*7_000), []string{"info", "error", "warn"}[(i/7+pi)%3]}
			entries[p] = append(entries[p], e)
			if _, err := tx.ExecContext(ctx, bind("INSERT INTO logs (project_id, time, id, level, message) VALUES (?, ?, ?, ?, 'm')"),
				p, e.time, uuid.Must(uuid.NewV7()).String(), e.level); err != nil {
				t.Fatalf("write an old entry: %v", err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	// The rollups as the previous release kept them.
	for _, q := range []string{
		"INSERT INTO log_counts (project_id, minute, level, n) SELECT project_id, time - ((time % 60000) + 60000) % 60000, level, count(*) FROM logs GROUP BY project_id, time - ((time % 60000) + 60000) % 60000, level",
		"INSERT INTO log_counts_hour (project_id, hour, level, n) SELECT project_id, time - ((time % 3600000) + 3600000) % 3600000, level, count(*) FROM logs GROUP BY project_id, time - ((time % 3600000) + 3600000) % 3600000, level",
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	minuteRows := func(t *testing.T) []string {
		t.Helper()
		rows, err := raw.QueryContext(ctx, "SELECT project_id, minute, level, n FROM log_counts ORDER BY project_id, minute, level")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var p, l string
			var m, n int64
			if err := rows.Scan(&p, &m, &l, &n); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprint(p, m, l, n))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := minuteRows(t)
	if len(before) < 1000 {
		t.Fatalf("only %d per-minute rows", len(before))
	}

	// ask checks the rollup's stats against the entries' counts.
	ask := func(t *testing.T, s *sqlstore.Store) {
		t.Helper()
		for _, c := range []struct{ start, end, step int64 }{
			{first, first + 5*3_600_000 - 1, 60_000},
			{first, first + 5*3_600_000 - 1, 3_600_000},
			{first + 17*60_000, first + 4*3_600_000 + 123_456, 300_000},
			{first + 3_600_000, first + 3*3_600_000 + 59_999, 3_600_000},
			{first + 3_600_000 + 60_000, first + 2*3_600_000 - 30_001, 60_000},
		} {
			for _, p := range projects {
				want := map[string]int64{}
				for _, e := range entries[p] {
					if e.time >= c.start && e.time <= c.end {
						want[fmt.Sprint((e.time-c.start)/c.step, e.level)]++
					}
				}
				counts, err := s.LogStats(ctx, domain.StatsQuery{LogFilter: domain.LogFilter{ProjectID: p, Start: &c.start, End: &c.end}, Step: c.step, By: domain.ByLevel, Now: 10 * 3_600_000})
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]int64{}
				for _, b := range counts {
					got[fmt.Sprint(b.Bucket, *b.Value)] += b.N
				}
				if !maps.Equal(got, want) {
					t.Errorf("stats %+v of a project: %d buckets and levels, want the entries' %d", c, len(got), len(want))
				}
			}
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	t.Run("up", func(t *testing.T) { ask(t, openUpgraded(t, open)) })
	t.Run("down", func(t *testing.T) {
		raw, _ = migratedTo(t, engine, dsn, 18) // already there: opens the database
		if err := sqlstore.MigrateDownTo(ctx, raw, engine, 17); err != nil {
			t.Fatalf("down: %v", err)
		}
		if after := minuteRows(t); !slices.Equal(after, before) {
			t.Errorf("down gave %d per-minute rows, want the previous release's %d", len(after), len(before))
		}
		if err := raw.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("up again", func(t *testing.T) { ask(t, openUpgraded(t, open)) })
}
