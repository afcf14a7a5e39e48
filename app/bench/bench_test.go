package bench

// The benchmark suite of `make bench`. Each benchmark runs our service and a baseline in the same
// run on the same machine and reports both and their ratio with b.ReportMetric, so a noisy
// machine still gives a meaningful figure. BENCH_ROWS sets the size of the read tables (default
// 1,000,000; CI runs everything once on a small table only to keep the suite working).

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/pgtest"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
	"example.com/obsvc/domain"
)

// pg is the PostgreSQL server of this test binary (see pgtest.Run).
var pg *pgtest.Server

// citus is the Citus cluster of this test binary under the citus build tag (make bench-citus).
var citus *pgtest.Citus

// TestMain starts the PostgreSQL server, and the Citus cluster too under the citus build tag.
func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &pg, pgtest.WithCitus(&citus))) }

// envCount is the positive whole number in the environment variable name, else def: how the
// benchmarks take their sizes (BENCH_ROWS, BENCH_RULES, BENCH_ABBA, BENCH_TAIL_SAMPLES,
// BENCH_SWEEP_ROWS).
func envCount(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func benchRows() int { return envCount("BENCH_ROWS", 1_000_000) }

// benchEnv is the real wiring over a store, served on loopback.
type benchEnv struct {
	url     string
	st      server.Store
	svc     *server.Server
	cfg     server.Config
	project string
	// database names the PostgreSQL database of st, for benchmarks that count what its backends
	// spend; "" on SQLite (in this process) and where the benchmark does not set it.
	database string
}

// newProject creates a project named name through the service's use case and returns its id.
func (e *benchEnv) newProject(b *testing.B, name string) string {
	b.Helper()
	p, err := e.svc.Core.CreateProject(domain.WithPrincipal(context.Background(), domain.Principal{Admin: true}), domain.ProjectInput{Name: name})
	if err != nil {
		b.Fatal(err)
	}
	return p.ID
}

func newBenchEnv(b *testing.B, st server.Store, tweak func(*server.Config)) *benchEnv {
	b.Helper()
	cfg := server.DefaultConfig()
	cfg.MaxInFlight = 0
	cfg.LogLevel = "warn"
	if tweak != nil {
		tweak(&cfg)
	}
	svc, srv := servetest.Serve(b, cfg, st, nil)
	e := &benchEnv{url: srv.URL, st: st, svc: svc, cfg: cfg}
	e.project = e.newProject(b, "bench")
	return e
}

func benchSQLite(b *testing.B) server.Store { return storetest.OpenSQLite(b) }

func benchPostgres(b *testing.B) (server.Store, string) {
	b.Helper()
	url := pg.NewDatabase(b)
	return storetest.OpenPostgres(b, url), url
}

// runConcurrent sends n jobs over workers goroutines and returns the elapsed time.
func runConcurrent(b *testing.B, workers, n int, job func(i int) error) time.Duration {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := job(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return elapsed
}

func postBatch(client *http.Client, url string, body []byte) error {
	resp, err := client.Post(url+"/logs", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 201 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST /logs = %d %.300s", resp.StatusCode, b)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return nil
}

const (
	createBatch   = 1000
	createClients = 2
)

// BenchmarkCreateLogsPostgres: POST /logs end to end (validation included), 1,000-entry batches from
// 2 clients, against raw pq COPY of the same rows, 1,000 per transaction, with 2 workers, into
// the same schema (a second database migrated by the same code).
func BenchmarkCreateLogsPostgres(b *testing.B) {
	st, _ := benchPostgres(b)
	e := newBenchEnv(b, st, nil)
	raw, rawProject := rawPostgres(b)
	createLogsVersus(b, e, func(rows []Row) error { return copyRaw(raw, rawProject, rows) })
}

// rawPostgres is a PostgreSQL database migrated by the store, holding one project, for writes with
// the driver alone; the connection closes when b ends.
func rawPostgres(b *testing.B) (db *sql.DB, project string) {
	b.Helper()
	st, url := benchPostgres(b)
	project = uuid.Must(uuid.NewV7()).String()
	if err := st.CreateProject(context.Background(), domain.Project{ID: project, Name: "raw", CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("postgres", url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return db, project
}

// createLogsVersus sends the same batches through the API and through raw, 2 clients each, and
// reports both rates and their ratio.
func createLogsVersus(b *testing.B, e *benchEnv, raw func([]Row) error) {
	b.Helper()
	batches := max(b.N, 4) * 4
	rows, bodies := createBatches(batches, e.project)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: createClients}}
	b.ResetTimer()
	api := runConcurrent(b, createClients, batches, func(i int) error { return postBatch(client, e.url, bodies[i]) })
	direct := runConcurrent(b, createClients, batches, func(i int) error { return raw(rows[i]) })
	b.StopTimer()
	reportRatio(b, batches*createBatch, api, direct)
}

// createBatches is the load of the create benchmarks: n batches of createBatch rows, and each as
// the body of POST /logs for project.
func createBatches(n int, project string) (rows [][]Row, bodies [][]byte) {
	rows, bodies = make([][]Row, n), make([][]byte, n)
	for i := range n {
		rows[i] = Batch(i, createBatch)
		bodies[i] = BatchJSON(project, rows[i])
	}
	return rows, bodies
}

func copyRaw(db *sql.DB, projectID string, rows []Row) error {
	return copyRows(db, "COPY logs (project_id, time, id, level, message, subject, user_id) FROM STDIN", rows, func(_ int, r Row) []any {
		return []any{projectID, r.Time, uuid.Must(uuid.NewV7()).String(), r.Level, r.Message, r.Subject, r.User}
	})
}

// copyRows writes rows to PostgreSQL with one COPY statement (copyIn) in one transaction, the
// i-th row's columns being values(i, row).
func copyRows(db *sql.DB, copyIn string, rows []Row, values func(i int, r Row) []any) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	stmt, err := tx.Prepare(copyIn)
	if err != nil {
		return err
	}
	for i, r := range rows {
		if _, err := stmt.Exec(values(i, r)...); err != nil {
			return err
		}
	}
	if _, err := stmt.Exec(); err != nil {
		return err
	}
	if err := stmt.Close(); err != nil {
		return err
	}
	return tx.Commit()
}

// BenchmarkCreateLogsSQLite: POST /logs end to end against the fastest raw insert the same driver
// can do: one transaction per batch, one prepared statement, same rows, same schema.
func BenchmarkCreateLogsSQLite(b *testing.B) {
	e := newBenchEnv(b, benchSQLite(b), nil)
	raw, rawProject := rawSQLite(b)
	createLogsVersus(b, e, func(rows []Row) error { return insertRawSQLite(raw, rawProject, rows) })
}

// rawSQLite makes a SQLite database with the store's schema and one project, and opens it past
// the store with the store's settings and one connection, for the raw insert a benchmark
// compares with; it is closed when b ends.
func rawSQLite(b *testing.B) (db *sql.DB, project string) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "raw.db")
	st, err := sqlstore.OpenSQLite(context.Background(), path, sqlstore.DefaultSQLiteOptions())
	if err != nil {
		b.Fatal(err)
	}
	project = uuid.Must(uuid.NewV7()).String()
	if err := st.CreateProject(context.Background(), domain.Project{ID: project, Name: "raw", CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}); err != nil {
		b.Fatal(err)
	}
	_ = st.Close()
	db, err = sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { _ = db.Close() })
	return db, project
}

func insertRawSQLite(db *sql.DB, projectID string, rows []Row) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	stmt, err := tx.Prepare("INSERT INTO logs (project_id, time, id, level, message, subject, user_id) VALUES (?, ?, ?, ?, ?, ?, ?)")
	if err != nil {
		return err
	}
	for _, r := range rows {
		if _, err := stmt.Exec(projectID, r.Time, uuid.Must(uuid.NewV7()).String(), r.Level, r.Message, r.Subject, r.User); err != nil {
			return err
		}
	}
	_ = stmt.Close()
	return tx.Commit()
}

func reportRatio(b *testing.B, rows int, api, direct time.Duration) {
	apiRate := float64(rows) / api.Seconds()
	rawRate := float64(rows) / direct.Seconds()
	b.ReportMetric(apiRate, "api_rows/s")
	b.ReportMetric(rawRate, "raw_rows/s")
	b.ReportMetric(apiRate/rawRate, "ratio")
}

func str(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

func kv(k string, v *commonpb.AnyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: v}
}
