package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/domain"
)

func ptr[T any](v T) *T { return &v }

// plan returns the JSON plan of query, with the planner's view of a large table.
func plan(t *testing.T, s *sqlstore.Store, query string, args []any) string {
	t.Helper()
	var out []byte
	if err := sqlstore.ReadDB(s).QueryRowContext(t.Context(), "EXPLAIN (FORMAT JSON) "+query, args...).Scan(&out); err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestPostgresQueriesUseIndexes shows, on a table of 200,000 entries over 20 projects, that
// every filter combination the API allows reads logs through an index, never a sequential scan.
func TestPostgresQueriesUseIndexes(t *testing.T) {
	url := pg.NewDatabase(t)
	s, err := sqlstore.OpenPostgres(t.Context(), url, sqlstore.DefaultPostgresOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	var projects []string
	for i := range 20 {
		id := uuid.Must(uuid.NewV7()).String()
		if err := s.CreateProject(ctx, domain.Project{ID: id, Name: fmt.Sprint("p", i), CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
		projects = append(projects, id)
	}
	levels := []string{"debug", "info", "warn", "error"}
	for b := range 20 {
		batch := make([]domain.LogEntry, 10_000)
		for i := range batch {
			n := b*10_000 + i
			batch[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: projects[n%20], Time: int64(n), Level: levels[n%4], Message: "m", UserID: ptr(fmt.Sprint("u", n%500))}
		}
		if _, err := s.InsertLogs(ctx, batch, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sqlstore.ReadDB(s).ExecContext(ctx, "ANALYZE logs"); err != nil {
		t.Fatal(err)
	}
	p := projects[3]
	after := &domain.Cursor{Time: 100_000, ID: uuid.Must(uuid.NewV7()).String()}
	filters := map[string]domain.LogFilter{
		"project":             {ProjectID: p},
		"project+time":        {ProjectID: p, Start: ptr[int64](50_000), End: ptr[int64](150_000)},
		"project+user":        {ProjectID: p, UserID: ptr("u3")},
		"project+user+time":   {ProjectID: p, UserID: ptr("u3"), Start: ptr[int64](50_000), End: ptr[int64](150_000)},
		"project+level":       {ProjectID: p, Level: ptr("error")},
		"project+level+time":  {ProjectID: p, Level: ptr("error"), Start: ptr[int64](50_000)},
		"project+user+level":  {ProjectID: p, UserID: ptr("u3"), Level: ptr("warn")},
		"project+all filters": {ProjectID: p, UserID: ptr("u3"), Level: ptr("warn"), Start: ptr[int64](1), End: ptr[int64](190_000)},
	}
	for name, f := range filters {
		for _, desc := range []bool{false, true} {
			for _, cursor := range []bool{false, true} {
				q := domain.LogQuery{LogFilter: f, Desc: desc, Limit: 100}
				if cursor {
					c := *after
					c.Desc = desc
					q.After = &c
				}
				t.Run(fmt.Sprintf("%s/desc=%v/cursor=%v", name, desc, cursor), func(t *testing.T) {
					query, args := sqlstore.ListSQL(s, q)
					checkIndexed(t, plan(t, s, query, args))
				})
			}
		}
		t.Run(name+"/delete", func(t *testing.T) {
			query, args := sqlstore.DeleteSQL(s, f)
			checkIndexed(t, plan(t, s, query, args))
		})
	}
}

func checkIndexed(t *testing.T, plan string) {
	t.Helper()
	if strings.Contains(plan, `"Seq Scan"`) {
		t.Fatalf("sequential scan in plan:\n%s", plan)
	}
	if !strings.Contains(plan, `"Index Scan"`) && !strings.Contains(plan, `"Index Only Scan"`) && !strings.Contains(plan, `"Bitmap Index Scan"`) {
		t.Fatalf("no index scan in plan:\n%s", plan)
	}
}

func TestPostgresMigrationsAreSafeWhenInstancesStartTogether(t *testing.T) {
	url := pg.NewDatabase(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := sqlstore.OpenPostgres(t.Context(), url, sqlstore.DefaultPostgresOptions())
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d: %v", i, err)
		}
	}
}

// TestPostgresOutageIsUnavailableAndRecovers stops the server under a live store: calls fail
// fast as KindUnavailable, and the same store works again once the server is back. It stops
// the shared server, so it runs alone: not parallel, and the contract suite is not running.
func TestPostgresOutageIsUnavailableAndRecovers(t *testing.T) {
	s, err := sqlstore.OpenPostgres(t.Context(), pg.NewDatabase(t), sqlstore.DefaultPostgresOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := domain.Project{ID: uuid.Must(uuid.NewV7()).String(), Name: "p", CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}
	if err := s.CreateProject(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	pg.Stop(t)
	restarted := false
	defer func() {
		if !restarted {
			pg.Start(t)
		}
	}()
	for _, call := range []func(ctx context.Context) error{
		func(ctx context.Context) error { _, err := s.ProjectByID(ctx, p.ID); return err },
		func(ctx context.Context) error {
			_, err := s.InsertLogs(ctx, []domain.LogEntry{{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p.ID, Level: "info", Message: "m"}}, nil, 0)
			return err
		},
		s.Ping,
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 8*time.Second)
		start := time.Now()
		err := call(ctx)
		cancel()
		if domain.KindOf(err) != domain.KindUnavailable {
			t.Errorf("during the outage: %v (kind %v), want KindUnavailable", err, domain.KindOf(err))
		}
		if time.Since(start) > 9*time.Second {
			t.Errorf("a call during the outage took %v: it must not hang", time.Since(start))
		}
	}
	pg.Start(t)
	restarted = true
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := s.ProjectByID(t.Context(), p.ID)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store did not recover after the server came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
