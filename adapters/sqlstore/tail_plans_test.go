package sqlstore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

// tailPlanQueries writes 400 batches of 50 entries to s, four in five of project p and the rest
// of another, and gives the tail reads whose plans the tests below check: from the middle of the
// project (a tail's own, filtered or not, and a hub's, bounded and skipping).
func tailPlanQueries(t *testing.T, s *sqlstore.Store) map[string]domain.TailQuery {
	ctx := t.Context()
	now := time.Now().UTC()
	p, other := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
	for _, id := range []string{p, other} {
		if err := s.CreateProject(ctx, domain.Project{ID: id, Name: "p", CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	for b := range 400 {
		batch := make([]domain.LogEntry, 50)
		for i := range batch {
			project := p
			if i%5 == 0 {
				project = other
			}
			batch[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: project, Time: int64(b*50 + i), Level: "info", Message: "m", UserID: ptr(fmt.Sprint("u", i%10))}
		}
		if _, err := s.CreateLogs(ctx, batch, domain.LogWrite{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sqlstore.WriteDB(s).ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	mid := domain.TailPosition{Tx: 200, Pos: 3}
	return map[string]domain.TailQuery{
		"from the middle":             {LogFilter: domain.LogFilter{ProjectID: p}, After: mid, Limit: 500},
		"from the middle, one user":   {LogFilter: domain.LogFilter{ProjectID: p, UserID: ptr("u3")}, After: mid, Limit: 500},
		"the hub's, bounded, skipped": {LogFilter: domain.LogFilter{ProjectID: p}, After: mid, Before: domain.TailPosition{Tx: 390, Pos: 1<<31 - 1}, Skip: []uint64{201, 205}, Limit: 500},
	}
}

// checkTailPlan fails t unless the plan, one text, holds every want and no bad.
func checkTailPlan(t *testing.T, plan string, bad, want []string) {
	t.Helper()
	for _, bad := range bad {
		if strings.Contains(plan, bad) {
			t.Errorf("the plan has %q:\n%s", bad, plan)
		}
	}
	for _, want := range want {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan does not have %q:\n%s", want, plan)
		}
	}
}

// TestPostgresTailReadsUseIndexes: an unfiltered tail read from the middle of a project of 400
// batches (a hub's, bounded and skipping, or a tail's own) walks the project's batches from the
// position through tail_batches' key and each batch's rows through logs_tail, sorts the rows of
// one batch at a time, and stops at the limit: no scan of a whole table, no hash of every
// batch, no sort of every row. A filtered read may instead take the filter's index and join (at
// this size, 1,600 rows of one user, the planner hashes the batches); it never scans logs whole.
func TestPostgresTailReadsUseIndexes(t *testing.T) {
	s := storetest.OpenPostgres(t, pg.NewDatabase(t))
	db := sqlstore.ReadDB(s)
	for name, q := range tailPlanQueries(t, s) {
		bad, want := []string{"Seq Scan", "Hash Join", "Bitmap Heap Scan on logs", "->  Sort "}, []string{"tail_batches_pkey", "logs_tail", "Incremental Sort", "Limit"}
		if q.UserID != nil {
			bad, want = []string{"Seq Scan on logs"}, []string{"Limit"}
		}
		t.Run(name, func(t *testing.T) {
			query, args := sqlstore.ReadTailSQL(s, q)
			var lines []string
			if err := db.SelectContext(t.Context(), &lines, "EXPLAIN "+query, args...); err != nil {
				t.Fatal(err)
			}
			checkTailPlan(t, strings.Join(lines, "\n"), bad, want)
		})
	}
}

// TestSQLiteTailReadsUseIndexes: on SQLite an unfiltered tail read walks the project's batches
// from the position through tail_batches' key and each batch's rows, in order, through
// logs_tail: no scan of a table, no sort. A filtered read never scans logs whole.
func TestSQLiteTailReadsUseIndexes(t *testing.T) {
	skipUnderRace(t)
	s := storetest.OpenSQLite(t)
	db := sqlstore.ReadDB(s)
	for name, q := range tailPlanQueries(t, s) {
		bad, want := []string{"SCAN logs", "SCAN b", "TEMP B-TREE"}, []string{"SEARCH b USING PRIMARY KEY", "USING INDEX logs_tail"}
		if q.UserID != nil {
			bad, want = []string{"SCAN logs"}, nil
		}
		t.Run(name, func(t *testing.T) {
			query, args := sqlstore.ReadTailSQL(s, q)
			checkTailPlan(t, sqlitePlan(t, db, query, args), bad, want)
		})
	}
}

// sqlitePlan is SQLite's EXPLAIN QUERY PLAN of query, one line per step.
func sqlitePlan(t *testing.T, db *sqlx.DB, query string, args []any) string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}
