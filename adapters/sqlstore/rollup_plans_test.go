package sqlstore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

// TestPostgresRollupStatsReadTheirHours: the stats the rollup answers read log_counts_hour by
// its key, the project's hours of the range alone (each with its minutes), in the plan for the
// values and in the generic plan the store's prepared statement comes to: no Seq Scan, and the
// rows read are those of the hours asked about, 5 levels each, with two projects of three days
// in the table.
func TestPostgresRollupStatsReadTheirHours(t *testing.T) {
	s := storetest.OpenPostgres(t, pg.NewDatabase(t))
	ctx := t.Context()
	now := time.Now().UTC()
	const hour = 3_600_000
	const day0 = 100 * 24 * hour
	var p string
	for range 2 {
		p = uuid.Must(uuid.NewV7()).String()
		if err := s.CreateProject(ctx, domain.Project{ID: p, Name: "p", CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		var batch []domain.LogEntry
		for i := range 7000 {
			batch = append(batch, domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p, Time: day0 + int64(i)*37_000,
				Level: []string{"trace", "debug", "info", "warn", "error"}[i%5], Message: "m"})
			if len(batch) == 1000 {
				if _, err := s.CreateLogs(ctx, batch, domain.LogWrite{}); err != nil {
					t.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	conn, err := sqlstore.ReadDB(s).Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name             string
		start, end, step int64
		levels           []string
		hours            float64 // rows of log_counts_hour the statement may read
	}{
		{"a day hourly", day0 + hour, day0 + 25*hour - 1, hour, nil, 24 * 5},
		{"a day in 5 minutes", day0 + hour, day0 + 25*hour - 1, 300_000, nil, 24 * 5},
		{"a day hourly, two levels", day0 + hour, day0 + 25*hour - 1, hour, []string{"warn", "error"}, 24 * 2},
		{"minutes, cut inside hours", day0 + hour + 17*60_000 + 5, day0 + 4*hour + 123_456, 60_000, nil, 4 * 5},
		{"hourly from a whole hour, cut at the end", day0 + hour, day0 + 5*hour + 1_234_567, hour, nil, 5 * 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := domain.StatsQuery{LogFilter: domain.LogFilter{ProjectID: p, Start: &c.start, End: &c.end, Levels: c.levels}, Step: c.step, By: domain.ByLevel, Now: day0 + 10*24*hour}
			query, args := sqlstore.RollupStatsSQL(s, q)
			plan := planOf(t, conn, "EXPLAIN (ANALYZE, FORMAT JSON) "+query, args)
			var read float64
			plan.walk(func(n planNode) {
				if n.NodeType == "Seq Scan" && n.Relation != "projects" { // one row read by its key
					t.Errorf("a Seq Scan on %s: %s", n.Relation, plan)
				}
				if n.Relation == "log_counts_hour" {
					read += n.ActualRows
				}
			})
			if read > c.hours {
				t.Errorf("read %v rows of log_counts_hour, want at most %v: %s", read, c.hours, plan)
			}
			explain(t, conn, query, args, true).walk(func(n planNode) {
				if n.NodeType == "Seq Scan" && n.Relation != "projects" {
					t.Errorf("the generic plan has a Seq Scan on %s", n.Relation)
				}
			})
			// The statement's answer is the entries' own count.
			counts, err := s.LogStats(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			var total, want int64
			for _, b := range counts {
				total += b.N
			}
			for i := range int64(7000) {
				tm := day0 + i*37_000
				if tm >= c.start && tm <= c.end && (c.levels == nil || fmt.Sprint(c.levels) == "[warn error]" && (i%5 == 3 || i%5 == 4)) {
					want++
				}
			}
			if total != want {
				t.Errorf("counted %d entries, want %d", total, want)
			}
		})
	}
}

// TestSQLiteRollupStatsReadTheirHours: on SQLite the stats the rollup answers read
// log_counts_hour (WITHOUT ROWID) by a range of its primary key, never a scan.
func TestSQLiteRollupStatsReadTheirHours(t *testing.T) {
	s := storetest.OpenSQLite(t)
	ctx := t.Context()
	now := time.Now().UTC()
	const hour = 3_600_000
	p := uuid.Must(uuid.NewV7()).String()
	if err := s.CreateProject(ctx, domain.Project{ID: p, Name: "p", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	var batch []domain.LogEntry
	for i := range 3000 {
		batch = append(batch, domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p, Time: int64(i) * 37_000, Level: "info", Message: "m"})
	}
	if _, err := s.CreateLogs(ctx, batch, domain.LogWrite{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlstore.WriteDB(s).ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ start, end, step int64 }{
		{hour, 25*hour - 1, hour},
		{hour, 25*hour - 1, 300_000},
		{hour + 17*60_000 + 5, 4*hour + 123_456, 60_000},
	} {
		q := domain.StatsQuery{LogFilter: domain.LogFilter{ProjectID: p, Start: &c.start, End: &c.end}, Step: c.step, By: domain.ByLevel, Now: 100 * hour}
		query, args := sqlstore.RollupStatsSQL(s, q)
		text := sqlitePlan(t, sqlstore.ReadDB(s), query, args)
		if strings.Contains(text, "SCAN c") || strings.Contains(text, "SCAN log_counts_hour") || strings.Contains(text, "SCAN logs") ||
			strings.Count(text, "SEARCH c USING PRIMARY KEY (project_id=? AND hour>? AND hour<?)") != 2 {
			t.Errorf("stats %+v: the plan does not read the rollup's hours by its key:\n%s", c, text)
		}
	}
}
