//go:build faults

package faults

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/domain"
)

const (
	dayMs  = int64(24 * time.Hour / time.Millisecond)
	hourMs = int64(time.Hour / time.Millisecond)
	// keepDays is the retention the retention fault tests set.
	keepDays = 7
	// seedChunk is the entries of one seeding transaction.
	seedChunk = 50_000
)

// retentionDB is one database of a retention fault test: the server's DATABASE_URL, a store on
// it for seeding, and a raw connection for counting what is really in the table.
type retentionDB struct {
	name string
	url  string
	open func(ctx context.Context) (*sqlstore.Store, error)
	raw  *sql.DB
	// bind turns the ? placeholders of a query into the engine's.
	bind func(string) string
}

func sqliteDB(t *testing.T) *retentionDB {
	path := filepath.Join(t.TempDir(), "retention.db")
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	return &retentionDB{
		name: "sqlite", url: "sqlite:" + path, raw: raw, bind: func(q string) string { return q },
		open: func(ctx context.Context) (*sqlstore.Store, error) {
			return sqlstore.OpenSQLite(ctx, path, sqlstore.DefaultSQLiteOptions())
		},
	}
}

func postgresDB(t *testing.T) *retentionDB {
	dsn := pg.NewDatabase(t)
	raw, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	return &retentionDB{
		name: "postgres", url: dsn, raw: raw,
		bind: func(q string) string {
			for i := 1; strings.Contains(q, "?"); i++ {
				q = strings.Replace(q, "?", "$"+strconv.Itoa(i), 1)
			}
			return q
		},
		open: func(ctx context.Context) (*sqlstore.Store, error) {
			return sqlstore.OpenPostgres(ctx, dsn, sqlstore.DefaultPostgresOptions())
		},
	}
}

// seeded is what seed wrote: n entries of one project kept forever, spread evenly over the 30
// days before now, with no entry within an hour of the 7-day cutoff (so the few minutes a test
// runs cannot move any entry across it and every count below is exact).
type seeded struct {
	projectID string
	now       int64 // Unix ms of the seeding
	expired   int64 // entries older than now - 7 days - 1 hour
	kept      int64 // entries newer than now - 7 days + 1 hour
}

// cutoff is the oldest time a 7-day retention keeps, at the moment of the seeding: every expired
// entry is more than an hour older, every kept one more than an hour younger.
func (s seeded) cutoff() int64 { return s.now - keepDays*dayMs }

// seed writes n entries through the store, in large transactions: seeding is not what is tested.
func seed(t *testing.T, db *retentionDB, n int) seeded {
	t.Helper()
	began := time.Now()
	st, err := db.open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	p := domain.Project{ID: uuid.Must(uuid.NewV7()).String(), Name: "retention", CreatedAt: now, UpdatedAt: now}
	if err := st.CreateProject(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	s := seeded{projectID: p.ID, now: now.UnixMilli()}
	oldSpan := (30-keepDays)*dayMs - hourMs // [now-30d, cutoff-1h)
	span := 30*dayMs - 2*hourMs             // oldSpan, then [cutoff+1h, now)
	batch := make([]domain.LogEntry, 0, seedChunk)
	for i := range n {
		off := int64(i) * span / int64(n)
		ts := s.now - 30*dayMs + off
		if off < oldSpan {
			s.expired++
		} else {
			ts = s.cutoff() + hourMs + (off - oldSpan)
			s.kept++
		}
		batch = append(batch, domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p.ID, Time: ts, Level: "info", Message: "seeded"})
		if len(batch) == seedChunk || i == n-1 {
			if _, err := st.CreateLogs(t.Context(), batch, domain.LogWrite{}); err != nil {
				t.Fatalf("seed: %v", err)
			}
			batch = batch[:0]
		}
	}
	t.Logf("%s: seeded %d entries (%d to expire, %d to keep) in %v", db.name, n, s.expired, s.kept, time.Since(began).Round(time.Millisecond))
	return s
}

// tableCounts counts the project's rows on either side of the 7-day cutoff, in the table itself.
func tableCounts(t *testing.T, db *retentionDB, s seeded) (expired, kept int64) {
	t.Helper()
	q := db.bind("SELECT COUNT(CASE WHEN time < ? THEN 1 END), COUNT(CASE WHEN time >= ? THEN 1 END) FROM logs WHERE project_id = ?")
	if err := db.raw.QueryRowContext(t.Context(), q, s.cutoff(), s.cutoff(), s.projectID).Scan(&expired, &kept); err != nil {
		t.Fatalf("count the table: %v", err)
	}
	return expired, kept
}

func integrityCheck(t *testing.T, db *retentionDB, when string) {
	t.Helper()
	if db.name != "sqlite" {
		return
	}
	// A connection of its own, opened now, as an operator's sqlite3 would: one kept open while
	// another process writes answers FTS5's part of the check from the structure it cached
	// before (it named a merged-away blob of logs_words as corrupt, where a fresh connection
	// found the same file sound).
	fresh, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(db.url, "sqlite:")+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	var res string
	if err := fresh.QueryRowContext(t.Context(), "PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		t.Errorf("sqlite %s: PRAGMA integrity_check = %q, %v", when, res, err)
	}
}

// metric reads one sample of the server's /metrics; 0 when it is absent.
func metric(base, name string) (float64, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("GET /metrics: %d", resp.StatusCode)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, nil
}

// setRetention PATCHes the project's retention through the API.
func setRetention(t *testing.T, base, projectID string, days int) {
	t.Helper()
	req, _ := http.NewRequest("PATCH", base+"/projects/"+projectID, strings.NewReader(fmt.Sprintf(`{"retention_days":%d}`, days)))
	req.Header.Set("Content-Type", "application/merge-patch+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PATCH retention: %d", resp.StatusCode)
	}
}

// expiredReads polls GET /logs for entries past the retention until stopped: the entries at or
// before now - 7 days (end_time, the oldest allowed bound), and the oldest visible entry. Answers
// other than 200 (the server is down while it restarts) are counted apart, not judged.
type expiredReads struct {
	mu         sync.Mutex
	ok, down   int
	downBy     map[string]int // why the answers that were not 200 were not
	violations []string
}

func (r *expiredReads) run(ctx context.Context, base func() string, projectID string) *sync.WaitGroup {
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			bound := time.Now().UnixMilli() - keepDays*dayMs
			for _, q := range []string{"&end_time=" + strconv.FormatInt(bound-1, 10) + "&limit=10", "&limit=1"} {
				times, status, err := listTimes(ctx, client, base()+"/logs?project_id="+url.QueryEscape(projectID)+q)
				r.mu.Lock()
				switch {
				case err != nil || status != 200:
					r.down++
					why := strconv.Itoa(status)
					if err != nil {
						why = "transport error"
					}
					r.downBy[why]++
				default:
					r.ok++
					for _, ts := range times {
						if ts < bound && len(r.violations) < 10 {
							r.violations = append(r.violations, fmt.Sprintf("GET /logs?…%s returned an entry at %d, before the bound %d", q, ts, bound))
						}
					}
				}
				r.mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return &wg
}

func listTimes(ctx context.Context, client *http.Client, u string) ([]int64, int, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	var page []struct {
		Time int64 `json:"time"`
	}
	if resp.StatusCode != 200 {
		return nil, resp.StatusCode, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		return nil, resp.StatusCode, err
	}
	out := make([]int64, len(page))
	for i, e := range page {
		out[i] = e.Time
	}
	return out, resp.StatusCode, nil
}

// waitMetric polls a metric of the server until ok accepts it, or fails the test after d.
func waitMetric(t *testing.T, srv *server, name string, d time.Duration, ok func(float64) bool) float64 {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		v, err := metric("http://"+srv.addr, name)
		if err == nil && ok(v) {
			return v
		}
		select {
		case err := <-srv.done:
			t.Fatalf("server exited: %v\n%s", err, srv.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached the wanted value (last %v, %v)", name, v, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRetentionSweepSurvivesKillNine: 1,000,000 entries over 30 days, retention set to 7 days,
// the server killed with SIGKILL once the sweep has committed a few transactions (watched on
// obsvc_log_entries_expired_total, which moves per transaction) and restarted. Throughout, GET
// /logs is polled for anything older than the bound; after the restarted server's first sweep
// none of the expired entries is left in the table and every entry inside the retention is.
func TestRetentionSweepSurvivesKillNine(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { retentionKill(t, sqliteDB(t), 1_000_000) })
	t.Run("postgres", func(t *testing.T) { retentionKill(t, postgresDB(t), 1_000_000) })
}

func retentionKill(t *testing.T, db *retentionDB, n int) {
	const batch, interval = 5000, time.Second
	s := seed(t, db, n)
	env := []string{"DATABASE_URL=" + db.url, "RETENTION_INTERVAL=" + interval.String(), "RETENTION_BATCH=" + strconv.Itoa(batch)}
	addr := freeAddr(t)
	srv := start(t, addr, env...)
	base := "http://" + addr

	// The poll can see expired entries: before the retention is set, the same query finds them.
	if times, _, err := listTimes(t.Context(), http.DefaultClient, base+"/logs?project_id="+s.projectID+"&end_time="+strconv.FormatInt(s.cutoff()-1, 10)+"&limit=10"); err != nil || len(times) == 0 {
		t.Fatalf("before the retention is set, the old entries should be listed: %v %v", times, err)
	}
	setRetention(t, base, s.projectID, keepDays)
	reads := &expiredReads{downBy: map[string]int{}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	polls := reads.run(ctx, func() string { return base }, s.projectID)

	// Mid-sweep: at least two transactions committed, and not yet all of them.
	setAt := time.Now()
	swept := waitMetric(t, srv, "obsvc_log_entries_expired_total", time.Minute, func(v float64) bool { return v >= 2*batch })
	srv.kill()
	killedAt := time.Now()
	left, kept := tableCounts(t, db, s)
	t.Logf("%s: SIGKILL %v after the retention was set, with %.0f entries reported swept; the table holds %d expired and %d kept", db.name, killedAt.Sub(setAt).Round(time.Millisecond), swept, left, kept)
	if left == 0 || left == s.expired {
		t.Fatalf("the kill was not mid-sweep: %d of %d expired entries left", left, s.expired)
	}
	if kept != s.kept {
		t.Errorf("after the kill %d entries inside the retention are left, want %d", kept, s.kept)
	}
	if int64(swept) > s.expired-left {
		t.Errorf("the server reported %.0f swept, but only %d are gone", swept, s.expired-left)
	}
	integrityCheck(t, db, "after SIGKILL mid-sweep")

	// The reads answered "down" are those between the kill and the restart: the counts and the
	// integrity check above run while no server is up, then the start itself.
	starting := time.Now()
	srv = start(t, addr, env...)
	restarted := time.Now()
	down, startTook := restarted.Sub(killedAt), restarted.Sub(starting)
	waitMetric(t, srv, "obsvc_retention_last_sweep_timestamp_seconds", 5*time.Minute, func(v float64) bool { return v > 0 })
	took := time.Since(restarted)
	cancel()
	polls.Wait()
	left, kept = tableCounts(t, db, s)
	resumed, _ := metric(base, "obsvc_log_entries_expired_total")
	errs, _ := metric(base, "obsvc_retention_sweep_errors_total")
	_ = srv.cmd.Process.Signal(syscall.SIGTERM)
	<-srv.done
	integrityCheck(t, db, "after the restarted sweep")

	fmt.Printf("FAULTS retention-kill-9/%s: entries=%d expired=%d swept_before_kill=%d swept_after_restart=%.0f expired_left=%d kept=%d/%d reads_ok=%d reads_down=%d %v expired_reads=%d down_for=%s (restart %s) first_sweep_after_restart=%s\n",
		db.name, n, s.expired, s.expired-left-int64(resumed), resumed, left, kept, s.kept, reads.ok, reads.down, reads.downBy, len(reads.violations), down.Round(time.Millisecond), startTook.Round(time.Millisecond), took.Round(time.Millisecond))
	for _, v := range reads.violations {
		t.Error(v)
	}
	if reads.ok == 0 {
		t.Error("no read was answered: the test proved nothing")
	}
	if left != 0 {
		t.Errorf("after the restarted server's first sweep %d expired entries are left in the table", left)
	}
	if kept != s.kept {
		t.Errorf("%d entries inside the retention are left, want exactly %d", kept, s.kept)
	}
	if errs != 0 {
		t.Errorf("the restarted sweep reported %v errors:\n%s", errs, srv.log.String())
	}
}

// TestTwoInstancesSweepOnce runs two servers on one PostgreSQL database, both sweeping: the
// expired set is deleted once (the two expired counters sum to it), and neither logs an error.
func TestTwoInstancesSweepOnce(t *testing.T) {
	db := postgresDB(t)
	s := seed(t, db, 200_000)
	env := []string{"DATABASE_URL=" + db.url, "RETENTION_INTERVAL=200ms", "RETENTION_BATCH=1000", "LOG_LEVEL=debug"}
	var srvs []*server
	for range 2 {
		srvs = append(srvs, start(t, freeAddr(t), env...))
	}
	setRetention(t, "http://"+srvs[0].addr, s.projectID, keepDays)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if left, _ := tableCounts(t, db, s); left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the expired entries were not deleted in time")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A few more intervals: a second deletion would show here.
	time.Sleep(time.Second)
	var swept [2]float64
	for i, srv := range srvs {
		v, err := metric("http://"+srv.addr, "obsvc_log_entries_expired_total")
		if err != nil {
			t.Fatal(err)
		}
		swept[i] = v
		_ = srv.cmd.Process.Signal(syscall.SIGTERM)
		<-srv.done
	}
	_, kept := tableCounts(t, db, s)
	var busy [2]int
	for i, srv := range srvs {
		log := srv.log.String()
		busy[i] = strings.Count(log, "left to another instance")
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, "no API keys configured") {
				continue // the start-up notice of a server without keys, as in every fault test
			}
			if strings.Contains(line, `"level":"ERROR"`) || strings.Contains(line, `"level":"WARN"`) || strings.Contains(strings.ToLower(line), "deadlock") {
				t.Errorf("instance %d logged: %s", i+1, line)
			}
		}
	}
	fmt.Printf("FAULTS retention-two-instances/postgres: expired=%d swept_by_1=%.0f swept_by_2=%.0f sum=%.0f kept=%d/%d turns_left_to_the_other=%v\n",
		s.expired, swept[0], swept[1], swept[0]+swept[1], kept, s.kept, busy)
	if int64(swept[0]+swept[1]) != s.expired {
		t.Errorf("the instances report %.0f + %.0f swept, want %d in all", swept[0], swept[1], s.expired)
	}
	if kept != s.kept {
		t.Errorf("%d entries inside the retention are left, want exactly %d", kept, s.kept)
	}
}
