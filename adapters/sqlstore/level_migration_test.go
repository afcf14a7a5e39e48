package sqlstore_test

import (
	"database/sql"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/domain"
)

// TestLevelMigrationMakesLevelsCanonical upgrades a database that the previous release (schema
// version 8) filled with entries whose levels are as clients sent them to migration 00009, on
// both engines: every entry reads back with its canonical level and, where the spelling differed
// beyond case, the spelling in severity_text (a severity_text the entry held already is kept);
// more than one batch of rows with attributes is rewritten; the rollups merge the counts of the
// spellings of one level, so stats answer one series per level from either rollup and from the
// entries, and a log_level filter in any spelling finds them all.
func TestLevelMigrationMakesLevelsCanonical(t *testing.T) {
	skipUnderRace(t)
	t.Run("SQLite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "test.db")
		testLevelMigration(t, "sqlite", "file:"+path, nil, func(ts time.Time) any { return ts.UnixMicro() }, func() (*sqlstore.Store, error) {
			return sqlstore.OpenSQLite(t.Context(), path, sqlstore.DefaultSQLiteOptions())
		})
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		if testing.Short() {
			t.Skip("PostgreSQL: not in -short")
		}
		url := pg.NewDatabase(t)
		testLevelMigration(t, "postgres", url, nil, func(ts time.Time) any { return ts }, func() (*sqlstore.Store, error) {
			return sqlstore.OpenPostgres(t.Context(), url, sqlstore.DefaultPostgresOptions())
		})
	})
}

// oldEntry is an entry as the previous release stored it, and what it must read back as.
type oldEntry struct {
	level, attrs         string // attrs "" for NULL
	wantLevel, wantAttrs string
}

// oldEntries is the table of stored levels the migration is tested with.
var oldEntries = []oldEntry{
	{"error", "", "error", ""},
	{"ERROR", "", "error", ""},
	{"Error", `{"a":1.50}`, "error", `{"a":1.50}`},
	{"err", "", "error", `{"severity_text":"err"}`},
	{"WARNING", "", "warn", `{"severity_text":"WARNING"}`},
	{"WARNING", `{"z":[1,2],"a":"x"}`, "warn", `{"a":"x","severity_text":"WARNING","z":[1,2]}`},
	{"warning", `{"severity_text":"Warning"}`, "warn", `{"severity_text":"Warning"}`}, // as OTLP stored it
	{"warn", "", "warn", ""},
	{"critical", "", "fatal", `{"severity_text":"critical"}`},
	{"CRIT", `{"b":true}`, "fatal", `{"b":true,"severity_text":"CRIT"}`},
	{"emerg", "", "fatal", `{"severity_text":"emerg"}`},
	{"dpanic", "", "fatal", `{"severity_text":"dpanic"}`},
	{"notice", "", "info", `{"severity_text":"notice"}`},
	{"INFO", "", "info", ""},
	{"info", "", "info", ""},
	{"Audit", "", "audit", ""},
	{"audit", "", "audit", ""},
	{"SEVERE", "", "error", `{"severity_text":"SEVERE"}`},
}

// manyWarnings is how many more WARNING entries with attributes the table holds: more than one
// batch of the migration's row-by-row rewrite.
const manyWarnings = 2100

// testLevelMigration runs the upgrade on a database at dsn; prepare, when not nil, runs on the
// schema of version 8 before the old entries are written (Citus distributes it).
func testLevelMigration(t *testing.T, engine, dsn string, prepare func(*sql.DB) error, timeArg func(time.Time) any, open func() (*sqlstore.Store, error)) {
	ctx := t.Context()
	raw, bind := migratedTo(t, engine, dsn, 8)
	defer raw.Close()
	if prepare != nil {
		if err := prepare(raw); err != nil {
			t.Fatalf("prepare the schema of version 8: %v", err)
		}
	}
	created := time.Now().UTC().Truncate(time.Microsecond)
	projects := []string{uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()}
	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	insert := bind("INSERT INTO logs (project_id, time, id, level, message, attributes) VALUES (?, ?, ?, ?, 'm', ?)")
	want := map[string]oldEntry{} // by id
	for _, p := range projects {
		if _, err := tx.ExecContext(ctx, bind("INSERT INTO projects (id, name, created_at, updated_at) VALUES (?, 'p', ?, ?)"), p, timeArg(created), timeArg(created)); err != nil {
			t.Fatal(err)
		}
		for i, e := range oldEntries {
			id := uuid.Must(uuid.NewV7()).String()
			var attrs any
			if e.attrs != "" {
				attrs = e.attrs
			}
			// Two minutes, so the spellings of a level share minutes and hours of the rollups.
			if _, err := tx.ExecContext(ctx, insert, p, int64(i%2)*60_000+int64(i), id, e.level, attrs); err != nil {
				t.Fatalf("write an old entry: %v", err)
			}
			want[id] = e
		}
	}
	for i := range manyWarnings {
		attrs := fmt.Sprintf(`{"i":%d}`, i)
		id := uuid.Must(uuid.NewV7()).String()
		if _, err := tx.ExecContext(ctx, insert, projects[0], int64(i)*1000, id, "WARNING", attrs); err != nil {
			t.Fatalf("write an old entry: %v", err)
		}
		want[id] = oldEntry{"WARNING", attrs, "warn", fmt.Sprintf(`{"i":%d,"severity_text":"WARNING"}`, i)}
	}
	// The rollups as the previous release kept them: one row per spelling.
	for _, q := range []string{
		"INSERT INTO log_counts (project_id, minute, level, n) SELECT project_id, time - time % 60000, level, count(*) FROM logs GROUP BY project_id, time - time % 60000, level",
		"INSERT INTO log_counts_hour (project_id, hour, level, n) SELECT project_id, time - time % 3600000, level, count(*) FROM logs GROUP BY project_id, time - time % 3600000, level",
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			t.Fatalf("count the old entries: %v", err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	s := openUpgraded(t, open)

	perLevel := map[string]map[string]int64{} // project → canonical level → entries
	for _, p := range projects {
		perLevel[p] = map[string]int64{}
		got := listAll(t, s, domain.LogFilter{ProjectID: p})
		for _, e := range got {
			w, ok := want[e.ID]
			if !ok {
				t.Fatalf("unknown entry %s", e.ID)
			}
			if e.Level != w.wantLevel || string(e.Attributes) != w.wantAttrs {
				t.Errorf("stored as %q %s: reads back as %q %s, want %q %s", w.level, w.attrs, e.Level, e.Attributes, w.wantLevel, w.wantAttrs)
			}
			perLevel[p][e.Level]++
		}
	}
	if n := perLevel[projects[0]]["warn"]; n != manyWarnings+4 {
		t.Errorf("%d warn entries, want %d", n, manyWarnings+4)
	}
	// Stats from the minute rollup, the hour rollup and the entries (a step no rollup answers).
	for _, p := range projects {
		for _, step := range []int64{60_000, 3_600_000, 7_000} {
			counts, err := s.LogStats(ctx, domain.StatsQuery{LogFilter: domain.LogFilter{ProjectID: p, Start: ptr[int64](0), End: ptr[int64](3*3_600_000 - 1)}, Step: step, By: domain.ByLevel, Now: 3 * 3_600_000})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, c := range counts {
				got[*c.Value] += c.N
			}
			if !maps.Equal(got, perLevel[p]) {
				t.Errorf("stats in steps of %d = %v, want %v", step, got, perLevel[p])
			}
		}
	}
	// The rollup (log_counts_hour, which holds the per-minute counts since 00018) merged the
	// spellings.
	rows, err := raw.QueryContext(ctx, "SELECT DISTINCT level FROM log_counts_hour ORDER BY level")
	if err != nil {
		t.Fatal(err)
	}
	var levels []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		levels = append(levels, l)
	}
	rows.Close()
	if want := []string{"audit", "error", "fatal", "info", "warn"}; !slices.Equal(levels, want) {
		t.Errorf("levels of log_counts_hour = %q, want %q", levels, want)
	}
	// A filter in any spelling compares canonically (the service canonicalises it; the store
	// compares stored levels).
	svc := domain.NewService(s, domain.Options{NewID: func() string { return uuid.Must(uuid.NewV7()).String() }})
	admin := domain.WithPrincipal(ctx, domain.Principal{Admin: true})
	var found int64
	err = svc.ListLogs(admin, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: projects[1], Level: ptr("CRITICAL")}}, func(pg domain.Page) error {
		for _, err := range pg.Entries {
			if err != nil {
				return err
			}
			found++
		}
		return nil
	})
	if err != nil || found != perLevel[projects[1]]["fatal"] || found != 4 {
		t.Errorf("log_level=CRITICAL found %d (%v), want the 4 fatal entries", found, err)
	}
	// The rollup goes on counting after the upgrade: a delete by a spelling takes the entries of
	// its level from it.
	n, err := svc.DeleteLogs(admin, domain.LogFilter{ProjectID: projects[1], Level: ptr("Warning")})
	if err != nil || n != 4 {
		t.Fatalf("delete log_level=Warning = %d, %v; want 4", n, err)
	}
	var left int64
	if err := raw.QueryRowContext(ctx, bind("SELECT coalesce(sum(n), 0) FROM log_counts_hour WHERE project_id = ? AND level = 'warn'"), projects[1]).Scan(&left); err != nil || left != 0 {
		t.Errorf("warn counts left after the delete: %d, %v", left, err)
	}
}
