package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

// capture is a store that only records the idempotency record a service hands it.
type capture struct {
	domain.Store
	rec *domain.IdempotencyRecord
}

func (c *capture) CreateLogs(_ context.Context, _ []domain.LogEntry, w domain.LogWrite) (domain.Written, error) {
	c.rec = w.Record
	return domain.Written{}, nil
}

// migrationTest upgrades a database of engine at dsn: timeArg is how the engine takes a
// timestamp, open opens the store on the database once it is written.
type migrationTest func(t *testing.T, engine, dsn string, timeArg func(time.Time) any, open func() (*sqlstore.Store, error))

// onBothEngines runs test on a new SQLite file and on a new PostgreSQL database.
func onBothEngines(t *testing.T, test migrationTest) {
	t.Run("SQLite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "test.db")
		test(t, "sqlite", "file:"+path, func(ts time.Time) any { return ts.UnixMicro() }, func() (*sqlstore.Store, error) {
			return sqlstore.OpenSQLite(t.Context(), path, sqlstore.DefaultSQLiteOptions())
		})
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		url := pg.NewDatabase(t)
		test(t, "postgres", url, func(ts time.Time) any { return ts }, func() (*sqlstore.Store, error) {
			return sqlstore.OpenPostgres(t.Context(), url, sqlstore.DefaultPostgresOptions())
		})
	})
}

// migratedTo opens the database of engine at dsn at schema version, as an earlier release left
// it, for the test to write its rows past the store; bind puts a query in the engine's
// placeholders. The caller closes the database.
func migratedTo(t *testing.T, engine, dsn string, version int64) (raw *sql.DB, bind func(string) string) {
	t.Helper()
	raw, err := sql.Open(engine, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqlstore.MigrateTo(t.Context(), raw, engine, version); err != nil {
		t.Fatalf("migrate to version %d: %v", version, err)
	}
	bind = func(q string) string {
		if engine == "postgres" {
			return sqlx.Rebind(sqlx.DOLLAR, q)
		}
		return q
	}
	return raw, bind
}

// upgrade closes the database an earlier release left and opens the store on it, which
// migrates it; the store is closed when the test ends.
func upgrade(t *testing.T, raw *sql.DB, open func() (*sqlstore.Store, error)) *sqlstore.Store {
	t.Helper()
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	return openUpgraded(t, open)
}

// skipUnderRace skips a test that drives one goroutine over thousands of entries, a migration or
// a plan checked at a size: the race detector has nothing to find there (the store's concurrent
// paths run under it in the store contract suites) and makes it several times slower, SQLite
// most of all, whose engine is Go code instrumented with the rest (TestAlertCountsMigration: 15 s
// without, 73 s with). make test runs it.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("one goroutine over a large table: run by make test, not under -race")
	}
}

// newProjects creates n projects in s and returns their ids.
func newProjects(t *testing.T, s *sqlstore.Store, n int) []string {
	t.Helper()
	now := time.Now().UTC()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7()).String()
		if err := s.CreateProject(t.Context(), domain.Project{ID: ids[i], Name: fmt.Sprint("p", i), CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// openUpgraded opens the store, which migrates the database; it is closed when the test ends.
func openUpgraded(t *testing.T, open func() (*sqlstore.Store, error)) *sqlstore.Store {
	t.Helper()
	s, err := open()
	if err != nil {
		t.Fatalf("open and migrate: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestIdempotencyKeysSurviveTheScopeMigration upgrades a database holding idempotency records
// that the previous release wrote (scopes stored as "KEYID|PROJECT,..." text) to the hashed
// scopes of migration 00003: a retry of a batch written before the upgrade is still answered as
// a replay, and another batch under its key is still refused, on both engines.
func TestIdempotencyKeysSurviveTheScopeMigration(t *testing.T) {
	onBothEngines(t, testScopeMigration)
}

func testScopeMigration(t *testing.T, engine, dsn string, timeArg func(time.Time) any, open func() (*sqlstore.Store, error)) {
	ctx := t.Context()
	newID := func() string { return uuid.Must(uuid.NewV7()).String() }
	const keyID = "0123456789abcdef"
	a, b := newID(), newID()
	batch := []domain.LogInput{{ProjectID: b, Message: ptr("first")}, {ProjectID: a, Message: ptr("second")}}
	who := domain.WithPrincipal(ctx, domain.Principal{Admin: true, KeyID: keyID})
	openService := domain.WithPrincipal(ctx, domain.Principal{Admin: true}) // an open service: no key id

	// What the service hands the store for this batch: the fingerprint, unchanged by the upgrade.
	var c capture
	if _, err := domain.NewService(&c, domain.Options{NewID: newID}).CreateLogs(who, batch, "retry-me"); err != nil || c.rec == nil {
		t.Fatalf("capturing the record: %v", err)
	}

	// The database as the previous release left it, with its records.
	raw, _ := migratedTo(t, engine, dsn, 2)
	created := time.Now().UTC().Truncate(time.Microsecond)
	insert := "INSERT INTO idempotency_keys (scope, key, fingerprint, created, created_at) VALUES (?, ?, ?, ?, ?)"
	if engine == "postgres" {
		insert = "INSERT INTO idempotency_keys (scope, key, fingerprint, created, created_at) VALUES ($1, $2, $3, $4, $5)"
	}
	old := []struct{ scope, key, fingerprint string }{
		{keyID + "|" + min(a, b) + "," + max(a, b), "retry-me", c.rec.Fingerprint},
		{"|" + a, "retry-me", c.rec.Fingerprint}, // the same key of an open service, another scope
	}
	// More records than the SQLite migration reads at a time, so that it takes several rounds.
	for i := range 2500 {
		old = append(old, struct{ scope, key, fingerprint string }{fmt.Sprintf("%s|%s", keyID, newID()), fmt.Sprint("k", i), "f"})
	}
	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range old {
		if _, err := tx.ExecContext(ctx, insert, r.scope, r.key, r.fingerprint, 2, timeArg(created)); err != nil {
			t.Fatalf("write an old record: %v", err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	// The new release opens it and migrates.
	s := upgrade(t, raw, open)
	var total, texts int
	if err := sqlstore.ReadDB(s).GetContext(ctx, &total, "SELECT count(*) FROM idempotency_keys"); err != nil {
		t.Fatal(err)
	}
	if err := sqlstore.ReadDB(s).GetContext(ctx, &texts, "SELECT count(*) FROM idempotency_keys WHERE scope LIKE '%|%' OR length(scope) <> 64"); err != nil {
		t.Fatal(err)
	}
	if total != len(old) || texts != 0 {
		t.Fatalf("after the migration %d records, %d of them not hashed; want %d, none", total, texts, len(old))
	}
	for _, id := range []string{a, b} {
		if err := s.CreateProject(ctx, domain.Project{ID: id, Name: "p", CreatedAt: created, UpdatedAt: created}); err != nil {
			t.Fatal(err)
		}
	}
	svc := domain.NewService(s, domain.Options{NewID: newID})
	got, err := svc.CreateLogs(who, batch, "retry-me")
	if err != nil || !got.Replayed || got.N != 2 {
		t.Fatalf("retry after the upgrade = %+v, %v; want a replay of 2", got, err)
	}
	changed := []domain.LogInput{{ProjectID: b, Message: ptr("first")}, {ProjectID: a, Message: ptr("changed")}}
	if _, err := svc.CreateLogs(who, changed, "retry-me"); domain.KindOf(err) != domain.KindKeyReused {
		t.Fatalf("another batch under the old key = %v, want KindKeyReused", err)
	}
	alone := []domain.LogInput{{ProjectID: a, Message: ptr("x")}}
	if _, err := svc.CreateLogs(openService, alone, "retry-me"); domain.KindOf(err) != domain.KindKeyReused {
		t.Fatalf("another batch under the open service's old key = %v, want KindKeyReused", err)
	}
	var entries int
	if err := sqlstore.ReadDB(s).GetContext(ctx, &entries, "SELECT count(*) FROM logs"); err != nil {
		t.Fatal(err)
	}
	if entries != 0 {
		t.Fatalf("%d entries stored by retries of batches stored before the upgrade, want 0", entries)
	}
}

// TestRetentionMigrationKeepsData upgrades a database at the previous version, holding projects
// and their entries, to migration 00005 (retention_days): every project reads back kept forever,
// every entry is still listed, and a retention can then be set, on both engines.
func TestRetentionMigrationKeepsData(t *testing.T) {
	onBothEngines(t, testRetentionMigration)
}

func testRetentionMigration(t *testing.T, engine, dsn string, timeArg func(time.Time) any, open func() (*sqlstore.Store, error)) {
	ctx := t.Context()
	raw, bind := migratedTo(t, engine, dsn, 3)
	created := time.Now().UTC().Truncate(time.Microsecond)
	var projects []string
	for i := range 3 {
		id := uuid.Must(uuid.NewV7()).String()
		if _, err := raw.ExecContext(ctx, bind("INSERT INTO projects (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)"), id, fmt.Sprint("p", i), timeArg(created), timeArg(created)); err != nil {
			t.Fatalf("write an old project: %v", err)
		}
		for j := range 50 {
			if _, err := raw.ExecContext(ctx, bind("INSERT INTO logs (project_id, time, id, level, message) VALUES (?, ?, ?, 'info', 'm')"), id, int64(j), uuid.Must(uuid.NewV7()).String()); err != nil {
				t.Fatalf("write an old entry: %v", err)
			}
		}
		projects = append(projects, id)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}

	s := openUpgraded(t, open)
	svc := domain.NewService(s, domain.Options{NewID: func() string { return uuid.Must(uuid.NewV7()).String() }})
	admin := domain.WithPrincipal(ctx, domain.Principal{Admin: true})
	for i, id := range projects {
		p, err := svc.GetProject(admin, id)
		if err != nil || p.RetentionDays != nil || p.Name != fmt.Sprint("p", i) || !p.CreatedAt.Equal(created) {
			t.Fatalf("project after the migration = %+v, %v; want p%d, kept forever", p, err, i)
		}
		n := 0
		err = svc.ListLogs(admin, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: id}}, func(pg domain.Page) error {
			for _, err := range pg.Entries {
				if err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil || n != 50 {
			t.Fatalf("entries after the migration = %d, %v; want 50", n, err)
		}
	}
	ten := 10
	if p, err := svc.PatchProject(admin, projects[0], domain.ProjectPatch{RetentionDays: domain.Optional[int]{Set: true, Value: &ten}}); err != nil || p.RetentionDays == nil || *p.RetentionDays != 10 {
		t.Fatalf("setting a retention after the migration = %+v, %v", p, err)
	}
}

// TestEntriesSurviveTheAttributesMigration upgrades a database that the previous release (schema
// version 3) filled with entries to migration 00004 (attributes, trace_id, span_id and the trace
// index), on both engines: every entry reads back unchanged and without the new fields, and the
// upgraded store keeps and filters the new fields beside them.
func TestEntriesSurviveTheAttributesMigration(t *testing.T) {
	onBothEngines(t, testAttributesMigration)
}

func testAttributesMigration(t *testing.T, engine, dsn string, timeArg func(time.Time) any, open func() (*sqlstore.Store, error)) {
	ctx := t.Context()
	newID := func() string { return uuid.Must(uuid.NewV7()).String() }
	raw, bind := migratedTo(t, engine, dsn, 3)
	created := time.Now().UTC().Truncate(time.Microsecond)
	project := newID()
	if _, err := raw.ExecContext(ctx, bind("INSERT INTO projects (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)"), project, "p", timeArg(created), timeArg(created)); err != nil {
		t.Fatal(err)
	}
	// The previous release's rows, as it wrote them: its seven columns.
	var old []domain.LogEntry
	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		e := domain.LogEntry{ID: newID(), ProjectID: project, Time: int64(i), Level: "info", Message: fmt.Sprint("old ", i)}
		if i%3 == 0 {
			e.Subject, e.UserID = ptr("s"), ptr(fmt.Sprint("u", i%7))
		}
		if _, err := tx.ExecContext(ctx, bind("INSERT INTO logs (project_id, time, id, level, message, subject, user_id) VALUES (?, ?, ?, ?, ?, ?, ?)"),
			e.ProjectID, e.Time, e.ID, e.Level, e.Message, e.Subject, e.UserID); err != nil {
			t.Fatalf("write an old entry: %v", err)
		}
		old = append(old, e)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}

	s := openUpgraded(t, open)
	got := listAll(t, s, domain.LogFilter{ProjectID: project})
	if len(got) != len(old) {
		t.Fatalf("after the migration %d entries, want %d", len(got), len(old))
	}
	same := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	for i, e := range got {
		w := old[i]
		if e.ID != w.ID || e.Time != w.Time || e.Level != w.Level || e.Message != w.Message || !same(e.Subject, w.Subject) || !same(e.UserID, w.UserID) {
			t.Fatalf("entry %d = %+v, want %+v", i, e, w)
		}
		if e.Attributes != nil || e.TraceID != nil || e.SpanID != nil {
			t.Fatalf("an old entry reads back with new fields: %+v", e)
		}
	}
	// The upgraded store takes the new fields beside the old rows and finds them by trace.
	svc := domain.NewService(s, domain.Options{NewID: newID})
	who := domain.WithPrincipal(ctx, domain.Principal{Admin: true})
	trace := "4BF92F3577B34DA6A3CE929D0E0E4736"
	in := []domain.LogInput{{ProjectID: project, Message: ptr("new"), Attributes: []byte(`{"n":12345678901234567890}`), TraceID: &trace, SpanID: ptr("00f067aa0ba902b7")}}
	if _, err := svc.CreateLogs(who, in, ""); err != nil {
		t.Fatal(err)
	}
	byTrace := listAll(t, s, domain.LogFilter{ProjectID: project, TraceID: ptr(strings.ToLower(trace))})
	if len(byTrace) != 1 || string(byTrace[0].Attributes) != `{"n":12345678901234567890}` || *byTrace[0].SpanID != "00f067aa0ba902b7" {
		t.Fatalf("the new entry by trace = %+v", byTrace)
	}
	if n := len(listAll(t, s, domain.LogFilter{ProjectID: project})); n != len(old)+1 {
		t.Fatalf("%d entries after one more, want %d", n, len(old)+1)
	}
}

// listAll reads every entry of f straight from the store, in listing order.
func listAll(t *testing.T, s *sqlstore.Store, f domain.LogFilter) []domain.LogEntry {
	t.Helper()
	var out []domain.LogEntry
	err := s.ListLogs(t.Context(), domain.LogQuery{LogFilter: f, Limit: 1_000_000}, func(p domain.Page) error {
		for e, err := range p.Entries {
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list logs: %v", err)
	}
	return out
}

// TestSearchMigrationFoldsAndCounts upgrades a database that the previous release (schema
// version 5) filled with entries to migration 00006, on both engines: more than one backfill
// batch of messages with capitals and accents is found by q under case folding, the subject
// filter works, and the stats of the rollup count every old entry.
func TestSearchMigrationFoldsAndCounts(t *testing.T) {
	skipUnderRace(t)
	onBothEngines(t, testSearchMigration)
}

func testSearchMigration(t *testing.T, engine, dsn string, timeArg func(time.Time) any, open func() (*sqlstore.Store, error)) {
	ctx := t.Context()
	newID := func() string { return uuid.Must(uuid.NewV7()).String() }
	raw, bind := migratedTo(t, engine, dsn, 5)
	created := time.Now().UTC().Truncate(time.Microsecond)
	project := newID()
	if _, err := raw.ExecContext(ctx, bind("INSERT INTO projects (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)"), project, "p", timeArg(created), timeArg(created)); err != nil {
		t.Fatal(err)
	}
	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2500 // more than two backfill batches
	for i := range n {
		msg := fmt.Sprint("plain ", i)
		if i%2 == 0 {
			msg = fmt.Sprint("CAFÉ ", i)
		}
		if _, err := tx.ExecContext(ctx, bind("INSERT INTO logs (project_id, time, id, level, message, subject) VALUES (?, ?, ?, ?, ?, ?)"),
			project, int64(i)*1000-60_000, newID(), []string{"info", "error"}[i%2], msg, fmt.Sprint("s", i%5)); err != nil {
			t.Fatalf("write an old entry: %v", err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	s := upgrade(t, raw, open)
	if got := len(listAll(t, s, domain.LogFilter{ProjectID: project, Q: ptr("café")})); got != n/2 {
		t.Fatalf("q=café finds %d old entries, want %d", got, n/2)
	}
	if got := len(listAll(t, s, domain.LogFilter{ProjectID: project, Q: ptr("PLAIN 2499")})); got != 1 {
		t.Fatalf("q=PLAIN 2499 finds %d old entries, want 1", got)
	}
	if got := len(listAll(t, s, domain.LogFilter{ProjectID: project, Subject: ptr("s3")})); got != n/5 {
		t.Fatalf("subject=s3 finds %d old entries, want %d", got, n/5)
	}
	// Whole minutes from the backfilled rollup (negative times included).
	counts, err := s.LogStats(ctx, domain.StatsQuery{LogFilter: domain.LogFilter{ProjectID: project, Start: ptr[int64](-60_000), End: ptr[int64](n*1000 - 1)}, Step: 60_000, By: domain.ByLevel})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, c := range counts {
		total += c.N
	}
	if total != n {
		t.Fatalf("stats after the migration count %d, want %d", total, n)
	}
}

// TestTailMigrationKeepsData upgrades a database at version 5, holding entries, to migration
// 00007 (ingest order): every old entry is still listed, none is streamed as live, and an entry
// written after the upgrade is read in ingest order, on both engines.
func TestTailMigrationKeepsData(t *testing.T) {
	onBothEngines(t, testTailMigration)
}

func testTailMigration(t *testing.T, engine, dsn string, timeArg func(time.Time) any, open func() (*sqlstore.Store, error)) {
	ctx := t.Context()
	raw, bind := migratedTo(t, engine, dsn, 5)
	created := time.Now().UTC().Truncate(time.Microsecond)
	id := uuid.Must(uuid.NewV7()).String()
	if _, err := raw.ExecContext(ctx, bind("INSERT INTO projects (id, name, created_at, updated_at) VALUES (?, 'p', ?, ?)"), id, timeArg(created), timeArg(created)); err != nil {
		t.Fatalf("write an old project: %v", err)
	}
	for j := range 20 {
		if _, err := raw.ExecContext(ctx, bind("INSERT INTO logs (project_id, time, id, level, message) VALUES (?, ?, ?, 'info', 'm')"), id, int64(j), uuid.Must(uuid.NewV7()).String()); err != nil {
			t.Fatalf("write an old entry: %v", err)
		}
	}
	s := upgrade(t, raw, open)
	if n := len(listAll(t, s, domain.LogFilter{ProjectID: id})); n != 20 {
		t.Fatalf("%d entries listed after the upgrade, want 20", n)
	}
	got, err := s.ReadTail(ctx, domain.TailQuery{LogFilter: domain.LogFilter{ProjectID: id}, Limit: 100})
	if err != nil || len(got) != 0 {
		t.Fatalf("ReadTail from the start after the upgrade = %d entries, %v; want none (old entries are history)", len(got), err)
	}
	e := domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: id, Time: 1, Level: "info", Message: "new"}
	if _, err := s.CreateLogs(ctx, []domain.LogEntry{e, {ID: uuid.Must(uuid.NewV7()).String(), ProjectID: id, Time: 0, Level: "info", Message: "second"}}, domain.LogWrite{}); err != nil {
		t.Fatal(err)
	}
	got, err = s.ReadTail(ctx, domain.TailQuery{LogFilter: domain.LogFilter{ProjectID: id}, Limit: 100})
	if err != nil || len(got) != 2 || got[0].Message != "new" || got[1].Message != "second" || got[0].At.Tx != got[1].At.Tx {
		t.Fatalf("ReadTail after a new batch = %+v, %v; want the batch in the order sent", got, err)
	}
}

// TestHourlyCountsMigrationKeepsCounts upgrades a database at version 7, holding entries and
// their per-minute rollup, to migration 00008 (log_counts_hour, filled from log_counts; on
// SQLite both rollups WITHOUT ROWID), and on through 00018 (the per-minute rollup held in the
// hourly one's rows): the stats the rollup answers, by minute and by hour, count every old
// entry, keep counting the ingest and delete after the upgrade, and deleting the project takes
// its counts with it, on both engines.
func TestHourlyCountsMigrationKeepsCounts(t *testing.T) {
	onBothEngines(t, testHourlyCountsMigration)
}

func testHourlyCountsMigration(t *testing.T, engine, dsn string, timeArg func(time.Time) any, open func() (*sqlstore.Store, error)) {
	ctx := t.Context()
	raw, bind := migratedTo(t, engine, dsn, 7)
	defer raw.Close()
	created := time.Now().UTC().Truncate(time.Microsecond)
	project := uuid.Must(uuid.NewV7()).String()
	if _, err := raw.ExecContext(ctx, bind("INSERT INTO projects (id, name, created_at, updated_at) VALUES (?, 'p', ?, ?)"), project, timeArg(created), timeArg(created)); err != nil {
		t.Fatal(err)
	}
	const n = 600 // two hours, two levels
	for i := range n {
		if _, err := raw.ExecContext(ctx, bind("INSERT INTO logs (project_id, time, id, level, message) VALUES (?, ?, ?, ?, 'm')"),
			project, int64(i)*12_000, uuid.Must(uuid.NewV7()).String(), []string{"info", "error"}[i%2]); err != nil {
			t.Fatalf("write an old entry: %v", err)
		}
	}
	if _, err := raw.ExecContext(ctx, "INSERT INTO log_counts (project_id, minute, level, n)"+
		" SELECT project_id, time - time % 60000, level, count(*) FROM logs GROUP BY project_id, time - time % 60000, level"); err != nil {
		t.Fatalf("count the old entries: %v", err)
	}
	s := openUpgraded(t, open)
	stats := func(step int64) map[string]int64 {
		t.Helper()
		// Whole minutes or hours, project and time only: a rollup answers.
		counts, err := s.LogStats(ctx, domain.StatsQuery{LogFilter: domain.LogFilter{ProjectID: project, Start: ptr[int64](0), End: ptr[int64](2*3_600_000 - 1)}, Step: step, By: domain.ByLevel, Now: 2 * 3_600_000})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, c := range counts {
			out[*c.Value] += c.N
		}
		return out
	}
	for _, step := range []int64{60_000, 3_600_000} {
		if got := stats(step); got["info"] != n/2 || got["error"] != n/2 || len(got) != 2 {
			t.Fatalf("stats in steps of %d after the upgrade = %v, want %d of info and of error", step, got, n/2)
		}
	}
	if _, err := s.CreateLogs(ctx, []domain.LogEntry{{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: project, Time: 5, Level: "warn", Message: "new"}}, domain.LogWrite{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteLogs(ctx, domain.LogFilter{ProjectID: project, Level: ptr("error"), End: ptr[int64](599_999)}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []int64{60_000, 3_600_000} {
		if got := stats(step); got["info"] != n/2 || got["error"] != n/2-25 || got["warn"] != 1 || len(got) != 3 {
			t.Fatalf("stats in steps of %d after an ingest and a delete = %v, want info %d, error %d, warn 1", step, got, n/2, n/2-25)
		}
	}
	if engine == "sqlite" {
		var ddl string
		if err := raw.QueryRowContext(ctx, "SELECT group_concat(sql) FROM sqlite_master WHERE type = 'table' AND name LIKE 'log_counts%'").Scan(&ddl); err != nil || strings.Count(ddl, "WITHOUT ROWID") != 1 || !strings.Contains(ddl, "CREATE TABLE log_counts_hour") {
			t.Fatalf("the rollup after the upgrade: %q, %v; want log_counts_hour alone, WITHOUT ROWID", ddl, err)
		}
	}
	if err := s.DeleteProject(ctx, project); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM log_counts_hour").Scan(&left); err != nil || left != 0 {
		t.Fatalf("rollup rows left after the project's deletion: %d, %v", left, err)
	}
}

// TestTailBatchesMigration upgrades a database at version 8, holding batches of two projects
// written in ingest order (tail_tx, tail_pos) and entries from before ingest order was kept, to
// migration 00010 (per-project batch numbers): each project's batches are numbered 1, 2, ... in
// the order the tail read them, its entries read back in that order at (number, place in the
// batch), the older entries stay history, and the next batch takes the next number of its
// project, on both engines.
func TestTailBatchesMigration(t *testing.T) {
	onBothEngines(t, testTailBatchesMigration)
}

func testTailBatchesMigration(t *testing.T, engine, dsn string, timeArg func(time.Time) any, open func() (*sqlstore.Store, error)) {
	ctx := t.Context()
	raw, bind := migratedTo(t, engine, dsn, 8)
	created := time.Now().UTC().Truncate(time.Microsecond)
	a, b := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
	for _, id := range []string{a, b} {
		if _, err := raw.ExecContext(ctx, bind("INSERT INTO projects (id, name, created_at, updated_at) VALUES (?, 'p', ?, ?)"), id, timeArg(created), timeArg(created)); err != nil {
			t.Fatalf("write an old project: %v", err)
		}
	}
	// An entry from before ingest order was kept (migration 00007 left it NULL): history.
	if _, err := raw.ExecContext(ctx, bind("INSERT INTO logs (project_id, time, id, level, message, tail_tx) VALUES (?, 0, ?, 'info', 'history', NULL)"), a, uuid.Must(uuid.NewV7()).String()); err != nil {
		t.Fatal(err)
	}
	// Batches as the previous release wrote them: one transaction each, tail_tx its id on
	// PostgreSQL (the column's default), tail_clock's next number on SQLite.
	batch := func(project string, msgs ...string) {
		t.Helper()
		tx, err := raw.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback() }()
		insert, extra := "INSERT INTO logs (project_id, time, id, level, message, tail_pos) VALUES (?, ?, ?, 'info', ?, ?)", []any{}
		if engine == "sqlite" {
			var n int64
			if err := tx.QueryRowContext(ctx, "UPDATE tail_clock SET tx = tx + 1 WHERE id = 1 RETURNING tx").Scan(&n); err != nil {
				t.Fatal(err)
			}
			insert, extra = "INSERT INTO logs (project_id, time, id, level, message, tail_pos, tail_tx) VALUES (?, ?, ?, 'info', ?, ?, ?)", []any{n}
		}
		for i, m := range msgs {
			if _, err := tx.ExecContext(ctx, bind(insert), append([]any{project, int64(len(msgs) - i), uuid.Must(uuid.NewV7()).String(), m, i}, extra...)...); err != nil {
				t.Fatalf("write an old entry: %v", err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	batch(a, "a1", "a2")
	batch(b, "b1")
	batch(a, "a3")
	batch(b, "b2")
	batch(b, "b3")
	batch(a, "a4", "a5", "a6")
	s := upgrade(t, raw, open)
	type at struct {
		msg      string
		seq, pos int
	}
	read := func(project string) []at {
		t.Helper()
		got, err := s.ReadTail(ctx, domain.TailQuery{LogFilter: domain.LogFilter{ProjectID: project}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []at
		for _, e := range got {
			out = append(out, at{e.Message, int(e.At.Tx), int(e.At.Pos)})
		}
		return out
	}
	want := []at{{"a1", 1, 0}, {"a2", 1, 1}, {"a3", 2, 0}, {"a4", 3, 0}, {"a5", 3, 1}, {"a6", 3, 2}}
	if got := read(a); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("project a after the upgrade: %v, want %v", got, want)
	}
	if got, want := read(b), []at{{"b1", 1, 0}, {"b2", 2, 0}, {"b3", 3, 0}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("project b after the upgrade: %v, want %v", got, want)
	}
	w, err := s.CreateLogs(ctx, []domain.LogEntry{{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: a, Time: 1, Level: "info", Message: "a7"}}, domain.LogWrite{})
	if err != nil {
		t.Fatal(err)
	}
	if w.Batches[a] != 4 {
		t.Fatalf("the first batch after the upgrade placed at %v, want 4 for %s", w.Batches, a)
	}
	if got := read(a); len(got) != 7 || got[6] != (at{"a7", 4, 0}) {
		t.Fatalf("project a after a new batch: %v", got)
	}
	if n := len(listAll(t, s, domain.LogFilter{ProjectID: a})); n != 8 {
		t.Fatalf("%d entries of a listed after the upgrade, want 8", n)
	}
	// Deleting the project takes its numbers with it.
	if err := s.DeleteProject(ctx, a); err != nil {
		t.Fatal(err)
	}
	if h, err := s.TailHorizon(ctx, a); err != nil || h.Tx != 0 {
		t.Fatalf("horizon of a deleted project = %+v, %v; want 0", h, err)
	}
}

// TestAlertCountsMigration upgrades a database holding 50,000 entries of a project, written by
// the previous release, to migration 00015 (alert counts kept at ingest): the first count of a
// query registers it and counts the entries already written, batches written after add to it,
// and a filtered delete makes it start over, each time equal to the store's own count.
func TestAlertCountsMigration(t *testing.T) {
	skipUnderRace(t)
	onBothEngines(t, testAlertCountsMigration)
}

func testAlertCountsMigration(t *testing.T, engine, dsn string, timeArg func(time.Time) any, open func() (*sqlstore.Store, error)) {
	ctx := t.Context()
	raw, bind := migratedTo(t, engine, dsn, 14)
	created := time.Now().UTC().Truncate(time.Microsecond)
	p := uuid.Must(uuid.NewV7()).String()
	if _, err := raw.ExecContext(ctx, bind("INSERT INTO projects (id, name, created_at, updated_at) VALUES (?, 'p', ?, ?)"), p, timeArg(created), timeArg(created)); err != nil {
		t.Fatal(err)
	}
	const entries = 50_000
	now := int64(1_795_000_000_000)
	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	levels := []string{"debug", "info", "warn", "error"}
	for i := range entries {
		msg := fmt.Sprintf("order %d shipped", i)
		if i%3 == 0 {
			msg = fmt.Sprintf("Timeout after %d ms", i)
		}
		if _, err := tx.ExecContext(ctx, bind("INSERT INTO logs (project_id, time, id, level, message) VALUES (?, ?, ?, ?, ?)"),
			p, now-int64(i*12), uuid.Must(uuid.NewV7()).String(), levels[i%4], msg); err != nil {
			t.Fatalf("write an old entry: %v", err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	s := upgrade(t, raw, open)
	t.Logf("%s: opened and migrated in %v", engine, time.Since(began))
	check := func(when, text string, start, end int64) {
		t.Helper()
		parsed, err := domain.ParseQuery(text, domain.DefaultLimits().Query)
		if err != nil {
			t.Fatal(err)
		}
		f := domain.LogFilter{ProjectID: p, Query: &text, Parsed: parsed}
		got, ok, err := s.CountAlertWindow(ctx, f, start, end, now)
		if err != nil || !ok {
			t.Fatalf("%s: CountAlertWindow(%q) = %d, %v, %v", when, text, got, ok, err)
		}
		if want := storetest.WindowCount(t, s, p, text, start, end, now); got != want || want == 0 {
			t.Fatalf("%s: %q counted %d in [%d, %d); the store counts %d", when, text, got, start, end, want)
		}
	}
	start, end := now-300_000, now+60_000
	// Field conditions: the entries written by hand here lack the words SQLite's store keeps.
	for _, q := range []string{"level:error", "-level:debug", "level:warn OR level:error"} {
		check("first count", q, start, end)
	}
	for i := range 3 {
		es := make([]domain.LogEntry, 100)
		for j := range es {
			es[j] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p, Time: now - int64(j*1000) + int64(i), Level: levels[j%4], Message: "timeout again"}
		}
		if _, err := s.CreateLogs(ctx, es, domain.LogWrite{}); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprint("after batch ", i), "timeout", start, end)
		check(fmt.Sprint("after batch ", i), "level:error", start, end)
	}
	warn := "warn"
	if n, err := s.DeleteLogs(ctx, domain.LogFilter{ProjectID: p, Levels: []string{warn}}); err != nil || n == 0 {
		t.Fatalf("delete = %d, %v", n, err)
	}
	check("after a delete", "-level:debug", start, end)
	check("after a delete", "timeout", start, end)
}
