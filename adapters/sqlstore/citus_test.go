//go:build citus

package sqlstore_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

func openCitus(t *testing.T) domain.Store { return storetest.OpenPostgres(t, citus.NewDatabase(t)) }

// TestCitusStore runs the store contract on a Citus coordinator with two workers, the schema
// distributed by the store itself, recording every statement the store sends; then each of those
// statements is shown to be routed to one shard (checkRouted). A statement added to the store
// is checked as soon as the contract runs it, without a list to keep.
func TestCitusStore(t *testing.T) {
	rec := sqlstore.NewRecorder()
	t.Run("contract", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) domain.Store { return openRecorded(t, rec) })
	})
	t.Run("EveryStatementIsRouted", func(t *testing.T) { checkRouted(t, rec) })
}

// openRecorded opens a store on a fresh Citus database whose statements rec records.
func openRecorded(t *testing.T, rec *sqlstore.Recorder) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.OpenRecorded(t.Context(), citus.NewDatabase(t), rec)
	if err != nil {
		t.Fatalf("open a recorded store on the Citus coordinator: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// multiShard are the statement shapes that are not per project and so rightly reach every
// shard, each with the reason.
var multiShard = map[string]string{
	"DELETE FROM idempotency_keys WHERE created_at < $":                            "the periodic sweep of expired idempotency records, across all projects",
	"DELETE FROM alert_outbox WHERE delivered_at IS NOT NULL AND delivered_at < $": "the periodic sweep of delivered alert notifications, across all projects",
	"SELECT r.project_id, r.id, r.interval_seconds, l.holder, l.expires_at FROM alert_rules r LEFT JOIN alert_leases l ON l.project_id = r.project_id AND l.rule_id = r.id WHERE r.next_eval_at <= $ ORDER BY r.next_eval_at LIMIT $":                                                                        "the evaluator's scan for due alert rules with their leases, across all projects (each shard joins its own)",
	"SELECT project_id, id, rule_id, seq, target, target_json, notification, attempts, next_attempt_at, last_error FROM alert_outbox WHERE delivered_at IS NULL ORDER BY project_id, rule_id, target, seq LIMIT $":                                                                                           "the sender's scan for undelivered notifications, across all projects",
	"SELECT project_id, id, name, search_id, query, window_seconds, interval_seconds, for_seconds, op, threshold, targets, silenced_until, created_at, updated_at, state, pending_since, firing_since, notified, last_eval_at, last_count, next_eval_at, transitions, version FROM alert_rules WHERE id = $": "an admin key's read of an alert rule by its id alone (GET /alerts/{id}), by the index on id in each shard",
}

// checkRouted EXPLAINs, on a fresh distributed schema, every statement rec recorded with the
// arguments of its first use, and fails for any that is not one task (a router query), unless
// it names no distributed table (the coordinator answers it alone: an advisory lock, the tail's
// snapshot) or is one of multiShard. COPY cannot be EXPLAINed; TestCitusCopyGoesToOneShard
// shows where its rows go.
func checkRouted(t *testing.T, rec *sqlstore.Recorder) {
	s := openCitus(t).(*sqlstore.Store)
	db := sqlstore.WriteDB(s)
	var tables []string
	if err := db.SelectContext(t.Context(), &tables, "SELECT logicalrelid::text FROM pg_dist_partition WHERE partmethod = 'h' ORDER BY 1"); err != nil {
		t.Fatal(err)
	}
	if len(tables) == 0 {
		t.Fatal("no distributed table: the schema was not distributed")
	}
	namesDistributed := regexp.MustCompile(`\b(` + strings.Join(tables, "|") + `)\b`)
	var routed, local, copies, skipped int
	for _, st := range rec.Statements() {
		shape := sqlstore.Shape(st.Query)
		if strings.HasPrefix(st.Query, "COPY ") {
			copies++
			continue
		}
		if why, ok := multiShard[shape]; ok {
			skipped++
			t.Logf("multi-shard by design (%s): %s", why, shape)
			continue
		}
		switch n, plan := citusTasks(t, db, st.Query, st.Args); {
		case n == 1:
			routed++
		case n == -1 && !namesDistributed.MatchString(st.Query):
			local++
		default:
			t.Errorf("%d tasks, want 1 (a router query):\n%s\nargs %v\nplan: %s", n, st.Query, st.Args, plan)
		}
	}
	t.Logf("statements run: %d routed to one shard, %d answered by the coordinator alone, %d COPY, %d multi-shard by design",
		routed, local, copies, skipped)
	if routed == 0 {
		t.Error("no statement was recorded: the check proved nothing")
	}
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
		"searches":         "reference",
		"logs":             "distributed by project_id",
		"alert_rules":      "distributed by project_id, co-located with logs",
		"alert_history":    "distributed by project_id, co-located with logs",
		"alert_outbox":     "distributed by project_id, co-located with logs",
		"alert_leases":     "distributed by project_id, co-located with logs",
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
// one node (a router query): every listing shape (filters, search, order, cursor) and delete
// shape as the store builds it, the retention sweep, the project checks and the idempotency
// look-ups; then every statement that a run through each store method really sent (ingest with
// its rollup upserts, stats from the rollup and from the entries, the live tail's head, read and
// replay, delete with its rollup updates, both sweep paths, the project operations), recorded
// at the driver and EXPLAINed with the arguments it ran with.
func TestCitusQueriesAreRouted(t *testing.T) {
	ctx := t.Context()
	s, rec, p, batch := recordedProject(t, 100, func(e *domain.LogEntry, i int) { e.UserID, e.TraceID = ptr("u"), ptr(traceID(i%3)) })
	now := time.Now().UTC()
	idem := &domain.IdempotencyRecord{Scope: strings.Repeat("ab", 32), Key: "k", Fingerprint: "f", Created: 100, CreatedAt: now}
	if _, err := s.CreateLogs(ctx, batch, domain.LogWrite{Record: idem, Window: time.Hour}); err != nil {
		t.Fatal(err)
	}
	db := sqlstore.WriteDB(s)

	type shape struct {
		name  string
		query string
		args  []any
	}
	var shapes []shape
	start, end := ptr[int64](10), ptr[int64](90_000)
	filters := map[string]domain.LogFilter{
		"project+q":                      {ProjectID: p, Q: ptr("message 1")},
		"project+long q":                 {ProjectID: p, Q: ptr(strings.Repeat("message 1 ", 10))}, // a regular expression
		"project+subject":                {ProjectID: p, Subject: ptr("s")},
		"project+levels":                 {ProjectID: p, Levels: []string{"info", "warn"}},
		"project+q+subject+levels+range": {ProjectID: p, Q: ptr("1"), Subject: ptr("s"), Levels: []string{"info", "error"}, Start: start, End: end},
	}
	// The query language: every node type, each engine-rendered leaf.
	five := 5.0
	for name, root := range map[string]domain.QueryNode{
		"words":  domain.QueryWords{Words: []string{"message", "1"}},
		"prefix": domain.QueryWords{Words: []string{"mess"}, Prefix: true},
		"tree": domain.QueryOr{Terms: []domain.QueryNode{
			domain.QueryAnd{Terms: []domain.QueryNode{
				domain.QueryEquals{Field: domain.QueryField{Name: "http.status", Attribute: true}, Value: "5", Number: &five},
				domain.QueryNot{Term: domain.QueryExists{Field: domain.QueryField{Name: "subject"}}},
			}},
			domain.QueryRange{Field: domain.QueryField{Name: "n", Attribute: true}, Min: &five, MinInclusive: true},
			domain.QueryEquals{Field: domain.QueryField{Name: "level"}, Value: "WARNING"},
			domain.QueryEquals{Field: domain.QueryField{Name: "svc", Attribute: true}, Value: "ca", Prefix: true},
		}},
	} {
		filters["project+query "+name] = domain.LogFilter{ProjectID: p, Parsed: domain.Query{Root: root}, Start: start}
	}
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

	// Every store method a project's requests reach, for real.
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	for _, f := range filters {
		for _, desc := range []bool{false, true} {
			must("list", s.ListLogs(ctx, domain.LogQuery{LogFilter: f, Desc: desc, Limit: 10, Now: 150_000}, func(domain.Page) error { return nil }))
		}
	}
	minute := int64(0)
	stats := []domain.StatsQuery{
		{LogFilter: domain.LogFilter{ProjectID: p, Start: &minute, End: ptr[int64](179_999)}, Step: 60_000, By: domain.ByLevel, Now: 150_000},
		{LogFilter: domain.LogFilter{ProjectID: p, Start: &minute, End: ptr[int64](179_999), Levels: []string{"info"}}, Step: 60_000, By: domain.ByNone, Now: 150_000},
		{LogFilter: domain.LogFilter{ProjectID: p, Start: ptr[int64](500), End: ptr[int64](150_500)}, Step: 60_000, By: domain.ByLevel, Now: 150_000},
		{LogFilter: domain.LogFilter{ProjectID: p, Start: &minute, End: ptr[int64](179_999), Q: ptr("message"), UserID: ptr("u")}, Step: 1000, By: domain.BySubject, Now: 150_000},
		{LogFilter: domain.LogFilter{ProjectID: p, Start: &minute, End: ptr[int64](179_999), Parsed: filters["project+query tree"].Parsed}, Step: 60_000, By: domain.ByLevel, Now: 150_000},
	}
	for _, q := range stats {
		_, err := s.LogStats(ctx, q)
		must("stats", err)
	}
	head, err := s.TailHead(ctx, p)
	must("tail head", err)
	_, err = s.ReadTail(ctx, domain.TailQuery{LogFilter: domain.LogFilter{ProjectID: p}, After: domain.TailPosition{Pos: -1}, Limit: 10})
	must("read tail", err)
	_, err = s.ReadTail(ctx, domain.TailQuery{LogFilter: filters["project+q+subject+levels+range"], After: head, Limit: 10})
	must("read tail, filtered", err)
	_, err = s.ReadTail(ctx, domain.TailQuery{LogFilter: filters["project+query tree"], After: head, Limit: 10})
	must("read tail, a query", err)
	_, err = s.ReplayTail(ctx, domain.LogFilter{ProjectID: p, Level: ptr("warn")}, head, 10)
	must("replay tail", err)
	// Alert counts: each query registered (counting what is written), then counted again over
	// a wider window a few minutes later (recorded in use, old seconds and idle queries
	// dropped); the batch written below adds to them, the delete below drops them.
	for _, text := range []string{"", "message 1", "mess*", `(http.status:5 AND -subject:*) OR n:>=5 OR level:WARNING OR svc:ca*`} {
		parsed, err := domain.ParseQuery(text, domain.DefaultLimits().Query)
		must("parse "+text, err)
		f := domain.LogFilter{ProjectID: p, Query: &text, Parsed: parsed}
		_, _, err = s.CountAlertWindow(ctx, f, 0, 60_000, 60_000)
		must("count an alert window, "+text, err)
		_, _, err = s.CountAlertWindow(ctx, f, 0, 120_000, 240_000)
		must("count a wider alert window, "+text, err)
	}
	// The hub's read: bounded by a horizon and skipping the batches it holds. A batch is read at
	// the place the write returned (its project's next number, mapped to the coordinator's
	// transaction id its rows carry).
	fresh := make([]domain.LogEntry, 3)
	for i := range fresh {
		fresh[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p, Time: 1000, Level: "info", Message: "placed"}
	}
	placed, err := s.CreateLogs(ctx, fresh, domain.LogWrite{})
	if err == nil && placed.Batches[p] != 2 {
		err = fmt.Errorf("the second batch came back placed at %v", placed.Batches)
	}
	must("write a second batch", err)
	horizon, err := s.TailHorizon(ctx, p)
	must("tail horizon", err)
	head = domain.TailPosition{Tx: placed.Batches[p], Pos: -1}
	got, err := s.ReadTail(ctx, domain.TailQuery{LogFilter: domain.LogFilter{ProjectID: p}, After: head, Before: horizon, Limit: 10})
	must("read tail up to a horizon", err)
	if len(got) != 3 || got[0].At != (domain.TailPosition{Tx: 2}) || got[2].At != (domain.TailPosition{Tx: 2, Pos: 2}) {
		t.Fatalf("the batch placed at %v read back as %+v", placed.Batches, got)
	}
	got, err = s.ReadTail(ctx, domain.TailQuery{LogFilter: domain.LogFilter{ProjectID: p}, After: head, Before: horizon, Skip: []uint64{2}, Limit: 10})
	must("read tail skipping a batch", err)
	if len(got) != 0 {
		t.Fatalf("the read skipping the placed batch returned %+v", got)
	}
	_, err = s.DeleteLogs(ctx, domain.LogFilter{ProjectID: p, TraceID: ptr(traceID(2))})
	must("delete", err)
	// Both sweep paths: more expired entries than the limit (a bound first), then the rest.
	_, err = s.SweepLogs(ctx, p, 10*86_400_000, 5)
	must("sweep up to a bound", err)
	_, err = s.SweepLogs(ctx, p, 10*86_400_000, 1000)
	must("sweep all expired", err)
	_, err = s.GetProject(ctx, p)
	must("get project", err)
	must("update project", s.UpdateProject(ctx, domain.Project{ID: p, Name: "q", UpdatedAt: now}))
	_, err = s.ListProjects(ctx)
	must("list projects", err)
	must("delete project", s.DeleteProject(ctx, p))
	t.Run("EveryStatementIsRouted", func(t *testing.T) { checkRouted(t, rec) })
}

// TestCitusCopyGoesToOneShard shows where the store's bulk insert sends a one-project batch:
// COPY cannot be EXPLAINed, so the coordinator is asked to report every command it sends to a
// worker (citus.log_remote_commands, as notices on this connection), and the store's own COPY
// runs in a transaction that is then rolled back. Every command naming a shard of logs names
// the project's one shard, on the node that holds it.
func TestCitusCopyGoesToOneShard(t *testing.T) {
	ctx := t.Context()
	url := citus.NewDatabase(t)
	s, err := sqlstore.OpenPostgres(ctx, url, sqlstore.DefaultPostgresOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := uuid.Must(uuid.NewV7()).String()
	now := time.Now().UTC()
	if err := s.CreateProject(ctx, domain.Project{ID: p, Name: "p", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	var shard, port string
	if err := sqlstore.WriteDB(s).QueryRowContext(ctx, `SELECT shardid::text, nodeport::text FROM citus_shards
WHERE table_name = 'logs'::regclass AND shardid = get_shard_id_for_distribution_column('logs', $1::uuid)`, p).Scan(&shard, &port); err != nil {
		t.Fatal(err)
	}

	base, err := pq.NewConnector(url)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var notices []*pq.Error
	db := sqlx.NewDb(sql.OpenDB(pq.ConnectorWithNoticeHandler(base, func(e *pq.Error) {
		mu.Lock()
		notices = append(notices, e)
		mu.Unlock()
	})), "postgres")
	defer db.Close()
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "SET LOCAL citus.log_remote_commands = on"); err != nil {
		t.Fatal(err)
	}
	batch := make([]domain.LogEntry, 200)
	for i := range batch {
		batch[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p, Time: int64(i), Level: "info", Message: "m"}
	}
	if err := sqlstore.CopyLogs(ctx, s, tx, batch); err != nil {
		t.Fatalf("COPY: %v", err)
	}
	var n int
	if err := tx.GetContext(ctx, &n, "SELECT count(*) FROM logs WHERE project_id = $1", p); err != nil || n != len(batch) {
		t.Fatalf("the transaction sees %d of %d rows: %v", n, len(batch), err)
	}
	mu.Lock()
	defer mu.Unlock()
	shardRE := regexp.MustCompile(`\blogs_(\d+)\b`)
	portRE := regexp.MustCompile(`@[^:]+:(\d+)`)
	copies := 0
	for _, e := range notices {
		if !strings.Contains(e.Message, "COPY") {
			continue
		}
		copies++
		for _, m := range shardRE.FindAllStringSubmatch(e.Message, -1) {
			if m[1] != shard {
				t.Errorf("the COPY of one project's batch reached shard %s, not only the project's shard %s: %s", m[1], shard, e.Message)
			}
		}
		if m := portRE.FindStringSubmatch(e.Detail); m == nil || m[1] != port {
			t.Errorf("a COPY command went to %q, want only the node on port %s: %s", e.Detail, port, e.Message)
		}
	}
	t.Logf("%d COPY commands sent to workers, all to shard %s on port %s", copies, shard, port)
	if copies == 0 {
		t.Errorf("no COPY command was reported to a worker: the test proved nothing (%d notices)", len(notices))
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
		_, err := s.CreateLogs(ctx, []domain.LogEntry{{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: project, Time: 1, Level: "info", Message: "m"}}, domain.LogWrite{})
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

// TestCitusRebalanceKeepsEveryEntry moves shard groups between the workers under a live store
// as an operator would after adding a worker: four of them by hand (citus_move_shard_placement),
// then the rebalancer (citus_rebalance_start) evens the workers out again (within two shards). Every project keeps
// every entry throughout, and the same store writes and reads wherever its shards went.
func TestCitusRebalanceKeepsEveryEntry(t *testing.T) {
	ctx := t.Context()
	s := openCitus(t).(*sqlstore.Store)
	db := sqlstore.WriteDB(s)
	now := time.Now().UTC()
	var projects []string
	for range 8 {
		p := uuid.Must(uuid.NewV7()).String()
		if err := s.CreateProject(ctx, domain.Project{ID: p, Name: "p", CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		batch := make([]domain.LogEntry, 50)
		for i := range batch {
			batch[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p, Time: int64(i), Level: "info", Message: "m"}
		}
		if _, err := s.CreateLogs(ctx, batch, domain.LogWrite{}); err != nil {
			t.Fatal(err)
		}
		projects = append(projects, p)
	}
	check := func(when string, want int) {
		t.Helper()
		for _, p := range projects {
			n := 0
			err := s.ListLogs(ctx, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p}, Limit: 1000, Now: 1000}, func(pg domain.Page) error {
				for _, err := range pg.Entries {
					if err != nil {
						return err
					}
					n++
				}
				return nil
			})
			if err != nil || n != want {
				t.Errorf("%s: project %s has %d entries (%v), want %d", when, p, n, err, want)
			}
		}
	}
	perWorker := func() map[string]int {
		rows, err := db.QueryContext(ctx, "SELECT nodeport::text, count(*) FROM citus_shards WHERE table_name = 'logs'::regclass GROUP BY 1")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int{}
		for rows.Next() {
			var port string
			var n int
			if err := rows.Scan(&port, &n); err != nil {
				t.Fatal(err)
			}
			out[port] = n
		}
		return out
	}
	from, to := citus.Worker(0).Port(), citus.Worker(1).Port()
	var shards []int64
	if err := db.SelectContext(ctx, &shards, "SELECT shardid FROM citus_shards WHERE table_name = 'logs'::regclass AND nodeport = $1 ORDER BY shardid LIMIT 4", from); err != nil {
		t.Fatal(err)
	}
	for _, shard := range shards {
		if _, err := db.ExecContext(ctx, "SELECT citus_move_shard_placement($1, '127.0.0.1', $2, '127.0.0.1', $3, shard_transfer_mode => 'block_writes')", shard, from, to); err != nil {
			t.Fatalf("move shard %d: %v", shard, err)
		}
	}
	moved := perWorker()
	check("after moving 4 shard groups", 50)
	if _, err := db.ExecContext(ctx, "SELECT citus_rebalance_start(shard_transfer_mode => 'block_writes')"); err != nil {
		t.Fatalf("citus_rebalance_start: %v", err)
	}
	if _, err := db.ExecContext(ctx, "SELECT citus_rebalance_wait()"); err != nil {
		t.Fatalf("citus_rebalance_wait: %v", err)
	}
	balanced := perWorker()
	t.Logf("logs shards per worker port: after the moves %v, after citus_rebalance_start %v", moved, balanced)
	// The rebalancer counts every co-location group's shards (idempotency_keys' too) and stops
	// within its threshold, so "even" is within a shard or two, not exact.
	if balanced[from] <= moved[from] || balanced[from]+balanced[to] != moved[from]+moved[to] || abs(balanced[from]-balanced[to]) > 2 {
		t.Errorf("the rebalance left the workers with %v shards of logs (after the moves %v), want them evened out", balanced, moved)
	}
	for _, p := range projects {
		if _, err := s.CreateLogs(ctx, []domain.LogEntry{{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p, Time: 60, Level: "info", Message: "m"}}, domain.LogWrite{}); err != nil {
			t.Errorf("write after the rebalance: %v", err)
		}
	}
	check("after the rebalance and one more entry each", 51)
}

func abs(n int) int { return max(n, -n) }

// recordedProject opens a recorded store with one project (retention 3 days) and makes n
// entries of it, one a second from time 0, levels info and warn in turn, subject "s", each
// finished by more; it stores none of them.
func recordedProject(t *testing.T, n int, more func(e *domain.LogEntry, i int)) (*sqlstore.Store, *sqlstore.Recorder, string, []domain.LogEntry) {
	t.Helper()
	rec := sqlstore.NewRecorder()
	s := openRecorded(t, rec)
	p := uuid.Must(uuid.NewV7()).String()
	now := time.Now().UTC()
	if err := s.CreateProject(t.Context(), domain.Project{ID: p, Name: "p", CreatedAt: now, UpdatedAt: now, RetentionDays: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	batch := make([]domain.LogEntry, n)
	for i := range batch {
		batch[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p, Time: int64(i) * 1000, Level: []string{"info", "warn"}[i%2],
			Message: "Message " + fmt.Sprint(i), Subject: ptr("s")}
		more(&batch[i], i)
	}
	return s, rec, p, batch
}

// TestCitusFacetsAreRouted runs the facets and fields statements on a Citus coordinator, with
// every filter, entry fields and attributes, both counted in the service and grouped by the
// store, and EXPLAINs each: one task, a router query.
func TestCitusFacetsAreRouted(t *testing.T) {
	ctx := t.Context()
	s, rec, p, batch := recordedProject(t, 50, func(e *domain.LogEntry, i int) {
		e.Attributes = []byte(fmt.Sprintf(`{"route":"/r%d","status":%d}`, i%4, 200+i%3))
	})
	if _, err := s.CreateLogs(ctx, batch, domain.LogWrite{}); err != nil {
		t.Fatal(err)
	}
	start, end := ptr[int64](0), ptr[int64](90_000)
	filters := []domain.LogFilter{
		{ProjectID: p, Start: start, End: end},
		{ProjectID: p, Start: start, End: end, Q: ptr("message"), UserID: ptr("u"), Subject: ptr("s"), Levels: []string{"info", "warn"}, TraceID: ptr(traceID(1))},
	}
	targets := []domain.QueryField{{Name: "level"}, {Name: "subject"}, {Name: "route", Attribute: true}, {Name: "status", Attribute: true}}
	for _, f := range filters {
		for _, memory := range []int64{16 << 20, 0} {
			sqlstore.SetFacetsMemory(s, memory)
			facets, err := s.Facets(ctx, domain.FacetsQuery{LogFilter: f, Fields: []string{"level", "subject", "route", "status"}, Targets: targets, Limit: 2, Now: 150_000})
			if err != nil {
				t.Fatalf("facets: %v", err)
			}
			if f.Q == nil && (len(facets) != 4 || facets[2].Values[0].Count+facets[2].Values[1].Count+facets[2].Other != 50) {
				t.Errorf("facets (memory %d) = %+v", memory, facets)
			}
			keys, err := s.Fields(ctx, domain.FieldsQuery{LogFilter: f, Limit: 1000, Now: 150_000})
			if err != nil {
				t.Fatalf("fields: %v", err)
			}
			if f.Q == nil && (len(keys) != 2 || keys[0] != (domain.FieldCount{Field: "route", Count: 50})) {
				t.Errorf("fields (memory %d) = %+v", memory, keys)
			}
		}
	}
	t.Run("EveryStatementIsRouted", func(t *testing.T) { checkRouted(t, rec) })
}
