//go:build citus

package sqlstore_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/pgtest"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

// citus is the Citus cluster of this test binary (make test-citus).
var citus *pgtest.Citus

func runOptions() []pgtest.Option { return []pgtest.Option{pgtest.WithCitus(&citus)} }

func openCitus(t *testing.T) domain.Store {
	t.Helper()
	s, err := sqlstore.OpenPostgres(t.Context(), citus.NewDatabase(t), sqlstore.DefaultPostgresOptions())
	if err != nil {
		t.Fatalf("OpenPostgres on the Citus coordinator: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestCitusStore runs the store contract on a Citus coordinator with two workers, the schema
// distributed by the store itself.
func TestCitusStore(t *testing.T) {
	// On Citus a batch takes no row lock on projects (a reference table: the lock would reach
	// every worker, and one worker down would stop ingest for every project), so a retention
	// shortened while a batch is in flight does not wait for it. The entries it admits are
	// hidden from readers at once and removed by the next sweep.
	storetest.Run(t, openCitus, storetest.Without("RetentionChangeWaitsForBatchInFlight",
		"a batch locks no project row on Citus; readers hide what a shortened retention expires"))
}

// distribution is how Citus holds each table: "reference", "distributed by COLUMN" or "local".
func distribution(t *testing.T, db *sqlx.DB) map[string]string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `
SELECT c.relname,
       CASE WHEN p.logicalrelid IS NULL THEN 'local'
            WHEN p.partmethod = 'n' AND p.repmodel = 't' THEN 'reference'
            WHEN p.partmethod = 'h' THEN 'distributed by ' || column_to_column_name(p.logicalrelid, p.partkey)
            ELSE 'citus local' END,
       coalesce(p.colocationid = (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'logs'::regclass), false)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
WHERE n.nspname = 'public' AND c.relkind = 'r'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var name, how string
		var withLogs bool
		if err := rows.Scan(&name, &how, &withLogs); err != nil {
			t.Fatal(err)
		}
		if withLogs && name != "logs" {
			how += ", co-located with logs"
		}
		got[name] = how
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestCitusDistributesTheSchema opens the store from several instances at once on a fresh
// coordinator; then a later migration's work (a new per-project table, a new column on logs) is
// simulated and the store opened again: everything ends up distributed as the service needs.
func TestCitusDistributesTheSchema(t *testing.T) {
	url := citus.NewDatabase(t)
	ctx := t.Context()
	var wg sync.WaitGroup
	stores := make([]*sqlstore.Store, 3)
	errs := make([]error, 3)
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = sqlstore.OpenPostgres(ctx, url, sqlstore.DefaultPostgresOptions()) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	db := sqlstore.WriteDB(stores[0])
	want := map[string]string{
		"projects":         "reference",
		"logs":             "distributed by project_id",
		"idempotency_keys": "distributed by scope",
		"goose_db_version": "local",
	}
	got := distribution(t, db)
	for name, how := range want {
		if got[name] != how {
			t.Errorf("%s is %q, want %q (all: %v)", name, got[name], how, got)
		}
	}

	// What a later migration may do: a column on a distributed table (Citus propagates it) and a
	// new per-project table with a foreign key to projects; the next start distributes the table.
	for _, stmt := range []string{
		"ALTER TABLE logs ADD COLUMN later text",
		"CREATE TABLE later_rollup (project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE, minute bigint NOT NULL, n bigint NOT NULL, PRIMARY KEY (project_id, minute))",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	again, err := sqlstore.OpenPostgres(ctx, url, sqlstore.DefaultPostgresOptions())
	if err != nil {
		t.Fatalf("open again: %v", err)
	}
	defer again.Close()
	got = distribution(t, db)
	if got["later_rollup"] != "distributed by project_id, co-located with logs" {
		t.Errorf("a table added later is %q, want it distributed by project_id with logs (all: %v)", got["later_rollup"], got)
	}
	for name, how := range want {
		if got[name] != how {
			t.Errorf("after a restart %s is %q, want %q", name, got[name], how)
		}
	}
}

// citusTasks is the task count of the Citus node of an EXPLAIN (FORMAT JSON) plan, -1 when the
// plan has none (a query the coordinator answers alone, from a local table).
func citusTasks(t *testing.T, db *sqlx.DB, query string, args []any) (int, string) {
	t.Helper()
	var out []byte
	if err := db.QueryRowContext(t.Context(), "EXPLAIN (FORMAT JSON) "+query, args...).Scan(&out); err != nil {
		t.Fatalf("EXPLAIN %s: %v", query, err)
	}
	var plans []map[string]any
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("plan %s: %v", out, err)
	}
	tasks := -1
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if n, ok := v["Task Count"].(float64); ok {
				tasks = max(tasks, 0) + int(n)
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(plans[0])
	return tasks, string(out)
}

// TestCitusQueriesAreRouted shows that every per-project statement of the store is one task on
// one node (a router query): every listing shape (filters, order, cursor), delete, the retention
// sweep, the project checks and the idempotency look-ups.
func TestCitusQueriesAreRouted(t *testing.T) {
	ctx := t.Context()
	s, err := sqlstore.OpenPostgres(ctx, citus.NewDatabase(t), sqlstore.DefaultPostgresOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := uuid.Must(uuid.NewV7()).String()
	now := time.Now().UTC()
	if err := s.CreateProject(ctx, domain.Project{ID: p, Name: "p", CreatedAt: now, UpdatedAt: now, RetentionDays: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	batch := make([]domain.LogEntry, 100)
	for i := range batch {
		batch[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p, Time: int64(i), Level: "info", Message: "m", UserID: ptr("u"), TraceID: ptr(traceID(i % 3))}
	}
	if _, err := s.CreateLogs(ctx, batch, nil, 0, nil); err != nil {
		t.Fatal(err)
	}
	db := sqlstore.WriteDB(s)

	type shape struct {
		name  string
		query string
		args  []any
	}
	var shapes []shape
	start, end := ptr[int64](10), ptr[int64](90)
	filters := map[string]domain.LogFilter{}
	for mask := range 32 {
		f := domain.LogFilter{ProjectID: p}
		name := "project"
		if mask&1 != 0 {
			f.UserID, name = ptr("u"), name+"+user"
		}
		if mask&2 != 0 {
			f.Level, name = ptr("info"), name+"+level"
		}
		if mask&4 != 0 {
			f.TraceID, name = ptr(traceID(1)), name+"+trace"
		}
		if mask&8 != 0 {
			f.Start, name = start, name+"+start"
		}
		if mask&16 != 0 {
			f.End, name = end, name+"+end"
		}
		filters[name] = f
	}
	for name, f := range filters {
		for _, desc := range []bool{false, true} {
			for _, cursor := range []bool{false, true} {
				q := domain.LogQuery{LogFilter: f, Desc: desc, Limit: 10, Now: 150}
				if cursor {
					q.After = &domain.Cursor{Time: 50, ID: uuid.Must(uuid.NewV7()).String(), Desc: desc}
				}
				query, args := sqlstore.ListSQL(s, q)
				shapes = append(shapes, shape{fmt.Sprintf("list %s desc=%v cursor=%v", name, desc, cursor), query, args})
			}
		}
		query, args := sqlstore.DeleteSQL(s, f)
		shapes = append(shapes, shape{"delete " + name, query, args})
	}
	for _, st := range append(sqlstore.SweepStatements(s, 1000, 100), sqlstore.PerProjectSQL(s)...) {
		shapes = append(shapes, shape{st.Name, st.Query, st.Args(p)})
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			if n, plan := citusTasks(t, db, sh.query, sh.args); n != 1 {
				t.Errorf("%d tasks, want 1 (a router query)\n%s\nplan: %s", n, sh.query, plan)
			}
		})
	}
}

// TestCitusWorkerDownIsUnavailableForItsProjectsOnly stops the worker holding one project's
// shards under a live store: that project's reads and writes are KindUnavailable (a 503), a
// project on the other worker keeps working, and once the worker is back the same store serves
// the first project again, every acknowledged entry there.
func TestCitusWorkerDownIsUnavailableForItsProjectsOnly(t *testing.T) {
	ctx := t.Context()
	s, err := sqlstore.OpenPostgres(ctx, citus.NewDatabase(t), sqlstore.DefaultPostgresOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := sqlstore.WriteDB(s)
	// One project on each worker: new projects until both workers hold one.
	onPort := map[string]string{}
	for len(onPort) < 2 {
		id := uuid.Must(uuid.NewV7()).String()
		var port string
		err := db.GetContext(ctx, &port, "SELECT nodeport::text FROM citus_shards WHERE table_name = 'logs'::regclass AND shardid = get_shard_id_for_distribution_column('logs', $1::uuid)", id)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := onPort[port]; ok {
			continue
		}
		now := time.Now().UTC()
		if err := s.CreateProject(ctx, domain.Project{ID: id, Name: port, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		onPort[port] = id
	}
	down := citus.Worker(0)
	hit, spared := onPort[down.Port()], onPort[citus.Worker(1).Port()]
	write := func(project string) error {
		_, err := s.CreateLogs(ctx, []domain.LogEntry{{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: project, Time: 1, Level: "info", Message: "m"}}, nil, 0, nil)
		return err
	}
	count := func(project string) (int, error) {
		n := 0
		err := s.ListLogs(ctx, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: project}, Limit: 1000, Now: 2}, func(p domain.Page) error {
			for _, err := range p.Entries {
				if err != nil {
					return err
				}
				n++
			}
			return nil
		})
		return n, err
	}
	for _, p := range []string{hit, spared} {
		if err := write(p); err != nil {
			t.Fatal(err)
		}
	}

	down.Stop(t)
	stopped := true
	defer func() {
		if stopped {
			down.Start(t)
		}
	}()
	if err := write(hit); domain.KindOf(err) != domain.KindUnavailable {
		t.Errorf("write to a project on the stopped worker: %v (kind %v), want KindUnavailable", err, domain.KindOf(err))
	}
	if _, err := count(hit); domain.KindOf(err) != domain.KindUnavailable {
		t.Errorf("list a project on the stopped worker: %v (kind %v), want KindUnavailable", err, domain.KindOf(err))
	}
	if err := write(spared); err != nil {
		t.Errorf("write to a project on the running worker: %v", err)
	}
	if n, err := count(spared); err != nil || n != 2 {
		t.Errorf("list a project on the running worker: %d entries, %v; want 2", n, err)
	}

	down.Start(t)
	stopped = false
	if err := write(hit); err != nil {
		t.Errorf("write after the worker is back: %v", err)
	}
	if n, err := count(hit); err != nil || n != 2 {
		t.Errorf("list after the worker is back: %d entries, %v; want 2 (nothing acknowledged lost)", n, err)
	}
}
