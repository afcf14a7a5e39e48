package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twitchtv/twirp"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/api/haberdasher"
	"example.com/obsvc/app/server"
	"example.com/obsvc/domain"
)

// readTable is a database holding BENCH_ROWS entries of one project, filled once per benchmark
// binary, served by the service (env) and open for the same queries by hand (db, whose
// placeholders are bound by bind).
type readTable struct {
	env  *benchEnv
	db   *sql.DB
	bind func(string) string
	rows int
}

// fillRead writes BENCH_ROWS entries of one project through st and serves st.
func fillRead(b *testing.B, st server.Store) (*benchEnv, int) {
	b.Helper()
	e := newBenchEnv(b, st, nil)
	n := benchRows()
	const batch = 10_000
	for i := 0; i < n; i += batch {
		rows := Batch(i/batch, min(batch, n-i))
		entries := make([]domain.LogEntry, len(rows))
		for j, r := range rows {
			subject, user := r.Subject, r.User
			entries[j] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: e.project, Time: r.Time, Level: r.Level, Message: r.Message, Subject: &subject, UserID: &user}
		}
		if _, err := st.CreateLogs(context.Background(), entries, domain.LogWrite{}); err != nil {
			b.Fatal(err)
		}
	}
	return e, n
}

// newReadTable fills a fresh PostgreSQL database; it lives until b (the parent benchmark) ends.
func newReadTable(b *testing.B) *readTable {
	b.Helper()
	st, dbURL := benchPostgres(b)
	e, n := fillRead(b, st)
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	if _, err := db.Exec("VACUUM ANALYZE logs"); err != nil {
		b.Fatal(err)
	}
	return &readTable{env: e, db: db, bind: func(q string) string { return q }, rows: n}
}

// newSQLiteReadTable fills a fresh SQLite file, as the service leaves it (no ANALYZE), and
// opens it read-only a second time for the queries by hand.
func newSQLiteReadTable(b *testing.B) *readTable {
	b.Helper()
	path := filepath.Join(b.TempDir(), "read.db")
	st, err := sqlstore.OpenSQLite(context.Background(), path, sqlstore.DefaultSQLiteOptions())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	e, n := fillRead(b, st)
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	placeholder := regexp.MustCompile(`\$[0-9]+`)
	return &readTable{env: e, db: db, bind: func(q string) string { return placeholder.ReplaceAllString(q, "?") }, rows: n}
}

func p50(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkReadPostgres fills one table of BENCH_ROWS entries and runs the read benchmarks on it:
// query/* (latency of GET /logs against the same query by hand through database/sql) and
// stream/* (memory while paging through everything).
func BenchmarkReadPostgres(b *testing.B) {
	t := newReadTable(b)
	b.Run("query", func(b *testing.B) { benchQueries(b, t) })
	b.Run("stream", func(b *testing.B) { benchStreamMemory(b, t) })
}

// BenchmarkReadSQLite is query/* of BenchmarkReadPostgres on the SQLite store, each listing
// against the same query by hand on the same file.
func BenchmarkReadSQLite(b *testing.B) {
	t := newSQLiteReadTable(b)
	b.Run("query", func(b *testing.B) { benchQueries(b, t) })
}

// benchQueries: GET /logs per filter combination against the same query written by hand and run
// directly through database/sql; p50 of each.
func benchQueries(b *testing.B, t *readTable) {
	p := t.env.project
	mid := int64(1_795_000_000_000) + int64(t.rows/2)
	cursor := domain.EncodeCursor(domain.Cursor{Time: mid, ID: "ffffffff-ffff-7fff-bfff-ffffffffffff"})
	cases := []struct {
		name, query, sql string
		args             []any
	}{
		{"project", "project_id=" + p,
			"SELECT id, project_id, time, level, message, subject, user_id FROM logs WHERE project_id = $1 ORDER BY time, id LIMIT 100", []any{p}},
		{"project+user+time", fmt.Sprintf("project_id=%s&user_id=user-7&start_time=%d&end_time=%d", p, mid-int64(t.rows/4), mid+int64(t.rows/4)),
			"SELECT id, project_id, time, level, message, subject, user_id FROM logs WHERE project_id = $1 AND user_id = $2 AND time >= $3 AND time <= $4 ORDER BY time, id LIMIT 100", []any{p, "user-7", mid - int64(t.rows/4), mid + int64(t.rows/4)}},
		{"project+level/desc", "project_id=" + p + "&log_level=error&order=desc",
			"SELECT id, project_id, time, level, message, subject, user_id FROM logs WHERE project_id = $1 AND level = $2 ORDER BY time DESC, id DESC LIMIT 100", []any{p, "error"}},
		{"keyset next page", "project_id=" + p + "&cursor=" + cursor,
			"SELECT id, project_id, time, level, message, subject, user_id FROM logs WHERE project_id = $1 AND (time, id) > ($2, $3) ORDER BY time, id LIMIT 100", []any{p, mid, "ffffffff-ffff-7fff-bfff-ffffffffffff"}},
	}
	client := &http.Client{}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			iters := max(b.N, 200)
			api := make([]time.Duration, 0, iters)
			raw := make([]time.Duration, 0, iters)
			for range iters {
				start := time.Now()
				resp, err := client.Get(t.env.url + "/logs?" + c.query + "&limit=100")
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("GET = %d", resp.StatusCode)
				}
				api = append(api, time.Since(start))

				start = time.Now()
				rows, err := t.db.Query(t.bind(c.sql), c.args...)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
					var id, project, level, message string
					var tm int64
					var subject, user sql.NullString
					if err := rows.Scan(&id, &project, &tm, &level, &message, &subject, &user); err != nil {
						b.Fatal(err)
					}
				}
				rows.Close()
				raw = append(raw, time.Since(start))
			}
			a, r := p50(api), p50(raw)
			b.ReportMetric(float64(a.Microseconds())/1000, "api_p50_ms")
			b.ReportMetric(float64(r.Microseconds())/1000, "sql_p50_ms")
			b.ReportMetric(float64(a)/float64(r), "ratio")
		})
	}
}

// benchStreamMemory pages through the whole read table with limit 100 and 10,000 and reports
// bytes allocated per entry served and the peak heap while serving: the figures must not grow
// with the page size.
func benchStreamMemory(b *testing.B, t *readTable) {
	for _, limit := range []int{100, 10_000} {
		b.Run("limit="+strconv.Itoa(limit), func(b *testing.B) {
			var peak atomic.Uint64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				var ms runtime.MemStats
				for {
					runtime.ReadMemStats(&ms)
					if ms.HeapInuse > peak.Load() {
						peak.Store(ms.HeapInuse)
					}
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			served := 0
			for range 1 { // one pass over the whole table, whatever b.N
				next := fmt.Sprintf("%s/logs?project_id=%s&limit=%d", t.env.url, t.env.project, limit)
				for next != "" {
					resp, err := http.Get(next)
					if err != nil {
						b.Fatal(err)
					}
					n, _ := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					_ = n
					served += limit
					next = ""
					if l := resp.Header.Get("Link"); l != "" {
						next = t.env.url + l[1:strings.Index(l, ">")] // a relative reference: /logs?…
					} else {
						served -= limit // the last page may be short: count what it held below
						served += t.rows % limit
						if t.rows%limit == 0 {
							served += limit
						}
					}
				}
			}
			runtime.ReadMemStats(&after)
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(served), "alloc_B/entry")
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak_heap_MiB")
			b.ReportMetric(float64(served), "entries")
		})
	}
}

// stockHaberdasher is MakeHat as a minimal service would write it, for the baseline.
type stockHaberdasher struct{}

func (stockHaberdasher) MakeHat(_ context.Context, s *haberdasher.Size) (*haberdasher.Hat, error) {
	if s.GetInches() <= 0 {
		return nil, twirp.InvalidArgumentError("inches", "must be positive")
	}
	return &haberdasher.Hat{Inches: s.GetInches(), Color: "navy", Name: "fedora"}, nil
}

// BenchmarkMakeHat: our whole stack (access log, metrics, API key auth, load shedding, a write
// rate limit, request ids) against a stock Twirp server of the same generated code with no
// hooks, with the same client, in JSON and in protobuf.
func BenchmarkMakeHat(b *testing.B) {
	ours := newBenchEnv(b, benchSQLite(b), func(c *server.Config) {
		c.APIKeys = apitest.KeyLine("admin", "bench-secret")
		c.MaxInFlight = 64
		c.WriteRate = 1e9
		c.WriteBurst = 1 << 20
	})
	_ = ours
	stock := httptest.NewServer(haberdasher.NewHaberdasherServer(stockHaberdasher{}))
	b.Cleanup(stock.Close)
	for _, enc := range []string{"json", "protobuf"} {
		b.Run(enc, func(b *testing.B) {
			newClient := func(url string, rt http.RoundTripper) haberdasher.Haberdasher {
				hc := &http.Client{Transport: rt}
				if enc == "json" {
					return haberdasher.NewHaberdasherJSONClient(url, hc)
				}
				return haberdasher.NewHaberdasherProtobufClient(url, hc)
			}
			tr := &http.Transport{MaxIdleConnsPerHost: 4}
			oursC := newClient(ours.url, tr)
			stockC := newClient(stock.URL, tr)
			// The key goes in the way Twirp clients send headers; the stock calls carry it too,
			// so both clients do the same work.
			ctx, err := twirp.WithHTTPRequestHeaders(context.Background(), http.Header{"Authorization": {"Bearer bench-secret"}})
			if err != nil {
				b.Fatal(err)
			}
			calls := max(b.N, 2000)
			run := func(c haberdasher.Haberdasher) time.Duration {
				return runConcurrent(b, 2, calls, func(int) error {
					_, err := c.MakeHat(ctx, &haberdasher.Size{Inches: 12})
					return err
				})
			}
			run(stockC) // warm both
			run(oursC)
			s := run(stockC)
			o := run(oursC)
			b.ReportMetric(float64(calls)/o.Seconds(), "ours_calls/s")
			b.ReportMetric(float64(calls)/s.Seconds(), "stock_calls/s")
			b.ReportMetric(s.Seconds()/o.Seconds(), "ratio")
		})
	}
}

// BenchmarkCreateLogsRSS starts the service as a process of its own on PostgreSQL, sends 16
// concurrent 10,000-entry batches (twice) and reports the process's peak resident set (VmHWM).
func BenchmarkCreateLogsRSS(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "obsvc")
	if out, err := exec.Command("go", "build", "-o", bin, "example.com/obsvc/app").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	ln := freeLoopbackAddr(b)
	dbURL := pg.NewDatabase(b)
	cmd := exec.Command(bin, "-addr", ln, "-database-url", dbURL, "-log-level", "warn")
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	base := "http://" + ln
	var projectID string
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Post(base+"/projects", "application/json", strings.NewReader(`{"name":"rss"}`))
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 201 {
			projectID = strings.Split(strings.Split(string(body), `"id":"`)[1], `"`)[0]
			break
		}
	}
	if projectID == "" {
		b.Fatal("server did not start")
	}
	bodies := make([][]byte, 16)
	for i := range bodies {
		bodies[i] = BatchJSON(projectID, Batch(i, 10_000))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	for range min(max(b.N, 2), 4) {
		runConcurrent(b, 16, 16, func(i int) error { return postBatch(client, base, bodies[i]) })
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.Atoi(f[1])
			b.ReportMetric(float64(kb)/1024, "peak_rss_MiB")
		}
	}
}

func freeLoopbackAddr(b *testing.B) string {
	b.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	u, _ := url.Parse("http://" + addr)
	return u.Host
}
