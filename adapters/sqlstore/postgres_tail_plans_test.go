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

// TestPostgresTailReadsUseIndexes: an unfiltered tail read from the middle of a project of 400
// batches (a hub's, bounded and skipping, or a tail's own) walks the project's batches from the
// position through tail_batches' key and each batch's rows through logs_tail, and stops at the
// limit: no scan of a whole table, no hash of every batch, no sort of every row. A filtered read
// may instead take the filter's index and join (at this size, 1,600 rows of one user, the
// planner hashes the batches); it never scans logs whole.
func TestPostgresTailReadsUseIndexes(t *testing.T) {
	s := storetest.OpenPostgres(t, pg.NewDatabase(t))
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
	db := sqlstore.ReadDB(s)
	if _, err := db.ExecContext(ctx, "ANALYZE logs; ANALYZE tail_batches"); err != nil {
		t.Fatal(err)
	}
	mid := domain.TailPosition{Tx: 200, Pos: 3}
	queries := map[string]domain.TailQuery{
		"from the middle":             {LogFilter: domain.LogFilter{ProjectID: p}, After: mid, Limit: 500},
		"from the middle, one user":   {LogFilter: domain.LogFilter{ProjectID: p, UserID: ptr("u3")}, After: mid, Limit: 500},
		"the hub's, bounded, skipped": {LogFilter: domain.LogFilter{ProjectID: p}, After: mid, Before: domain.TailPosition{Tx: 390, Pos: 1<<31 - 1}, Skip: []uint64{201, 205}, Limit: 500},
	}
	for name, q := range queries {
		bad, want := []string{"Seq Scan", "Hash Join", "Bitmap Heap Scan on logs"}, []string{"tail_batches_pkey", "logs_tail", "Limit"}
		if q.UserID != nil {
			bad, want = []string{"Seq Scan on logs"}, []string{"Limit"}
		}
		t.Run(name, func(t *testing.T) {
			query, args := sqlstore.ReadTailSQL(s, q)
			rows, err := db.QueryContext(ctx, "EXPLAIN "+query, args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan strings.Builder
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatal(err)
				}
				plan.WriteString(line + "\n")
			}
			text := plan.String()
			for _, bad := range bad {
				if strings.Contains(text, bad) {
					t.Errorf("the plan has a %s:\n%s", bad, text)
				}
			}
			for _, want := range want {
				if !strings.Contains(text, want) {
					t.Errorf("the plan does not use %s:\n%s", want, text)
				}
			}
		})
	}
}
