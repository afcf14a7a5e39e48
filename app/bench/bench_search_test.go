package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/domain"
)

// BenchmarkSearch runs the search and stats benchmarks on each store over BENCH_ROWS entries of
// one project spread over 24 hours, each figure beside its baseline from the same run:
//
//   - stats: GET /logs/stats for the day in hourly buckets by level, against
//     GET /logs?project_id=P&limit=100 (p50 of each; target ratio <= 2);
//   - q_common: a 100-entry page of a term a sixth of the messages hold, against the same page
//     unfiltered (target <= 2);
//   - q_none: a 100-entry page of a term no message holds, a read of the whole project, against
//     the same predicate as hand-written SQL through database/sql on the same rows (target <= 1.2);
//   - ingest: the store's CreateLogs, which keeps both rollups (minute, hour) in the batch's
//     transaction, against the same statements without the rollups' (target >= 0.9).
func BenchmarkSearch(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		st := storetest.OpenSQLite(b)
		benchSearch(b, st, st.Pools()["reader"], st.Pools()["writer"], sqlx.QUESTION)
	})
	b.Run("postgres", func(b *testing.B) {
		st, _ := benchPostgres(b)
		db := st.Pools()["main"]
		benchSearch(b, st, db, db, sqlx.DOLLAR)
	})
}

// searchDay is the first millisecond of the benchmark's day (a whole hour, UTC).
const searchDay = int64(1_795_392_000_000)

// searchMessages are the templates of the benchmark's messages: one in six holds "timeout" in
// some case, some need folding beyond ASCII (so message_fold is stored for them).
var searchMessages = []string{
	"GET /api/v1/orders/%d completed in %d ms",
	"payment %d declined: card expired (code %d)",
	"Upstream TIMEOUT after %d ms calling inventory-%d",
	"cache miss for key user:%d (shard %d)",
	"Zahlung %d für Straße %d abgelehnt",
	"user %d signed in from region %d",
}

// searchEntries are n entries of project from time from on, step ms apart, with fresh ids.
func searchEntries(project string, k, n int, from, step int64) []domain.LogEntry {
	levels := []string{"debug", "info", "info", "info", "warn", "error"}
	subjects := []string{"checkout", "auth", "search"}
	out := make([]domain.LogEntry, n)
	for i := range out {
		j := k + i
		subject, user := subjects[j%len(subjects)], "user-"+strconv.Itoa(j%1000)
		out[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: project, Time: from + int64(i)*step,
			Level: levels[j%len(levels)], Message: fmt.Sprintf(searchMessages[j%len(searchMessages)], j, j%977),
			Subject: &subject, UserID: &user}
	}
	return out
}

func benchSearch(b *testing.B, st server.Store, read, write *sql.DB, bindType int) {
	e := newBenchEnv(b, st, nil)
	n := benchRows()
	const chunk = 20_000
	for k := 0; k < n; k += chunk {
		m := min(chunk, n-k)
		// Spread evenly over the day: entry k at searchDay + k*day/n.
		from := searchDay + int64(k)*86_400_000/int64(n)
		step := max(int64(86_400_000/n), 1)
		if _, err := st.CreateLogs(context.Background(), searchEntries(e.project, k, m, from, step), domain.LogWrite{}); err != nil {
			b.Fatal(err)
		}
	}
	if bindType == sqlx.DOLLAR {
		if _, err := write.Exec("VACUUM ANALYZE logs"); err != nil {
			b.Fatal(err)
		}
	}
	client := &http.Client{}
	get := func(query string) func() error {
		u := e.url + query
		return func() error {
			resp, err := client.Get(u)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET %s = %d", u, resp.StatusCode)
			}
			return nil
		}
	}
	p := url.QueryEscape(e.project)
	page := get("/logs?project_id=" + p + "&limit=100")

	b.Run("stats", func(b *testing.B) {
		stats := get(fmt.Sprintf("/logs/stats?project_id=%s&start_time=%d&end_time=%d&step=3600000&by=level", p, searchDay, searchDay+86_400_000-1))
		ours, base := pairedP50(b, max(b.N, 200), stats, page)
		reportP50(b, "stats", ours, "page", base)
	})
	b.Run("q_common", func(b *testing.B) {
		ours, base := pairedP50(b, max(b.N, 200), get("/logs?project_id="+p+"&q=timeout&limit=100"), page)
		reportP50(b, "q", ours, "page", base)
	})
	b.Run("q_none", func(b *testing.B) {
		// The predicate the store writes for q (see where in adapters/sqlstore), run by hand.
		const term = "no-such-term"
		contains := "instr(COALESCE(message_fold, lower(message)), ?) > 0" // SQLite
		if bindType == sqlx.DOLLAR {
			contains = `strpos(COALESCE(message_fold, lower(message COLLATE "C")), ?) > 0` // PostgreSQL, for a term of up to 32 bytes
		}
		raw := sqlx.Rebind(bindType, "SELECT id, project_id, time, level, message, subject, user_id FROM logs"+
			" WHERE project_id = ? AND "+contains+" ORDER BY time, id LIMIT 100")
		direct := func() error {
			rows, err := read.Query(raw, e.project, term)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id, project, level, message string
				var tm int64
				var subject, user sql.NullString
				if err := rows.Scan(&id, &project, &tm, &level, &message, &subject, &user); err != nil {
					return err
				}
			}
			return rows.Err()
		}
		// Each question reads every entry of the project: fewer rounds than the others.
		ours, base := pairedP50(b, max(b.N, 15), get("/logs?project_id="+p+"&q="+term+"&limit=100"), direct)
		reportP50(b, "api", ours, "sql", base)
	})
	b.Run("ingest", func(b *testing.B) { benchIngestRollup(b, e, st, write, bindType) })
}

// pairedP50 runs ours and base alternately iters times each, after one warm-up call of each,
// and returns the median latency of each.
func pairedP50(b *testing.B, iters int, ours, base func() error) (time.Duration, time.Duration) {
	b.Helper()
	if err := ours(); err != nil {
		b.Fatal(err)
	}
	if err := base(); err != nil {
		b.Fatal(err)
	}
	o := make([]time.Duration, 0, iters)
	r := make([]time.Duration, 0, iters)
	for range iters {
		start := time.Now()
		if err := ours(); err != nil {
			b.Fatal(err)
		}
		o = append(o, time.Since(start))
		start = time.Now()
		if err := base(); err != nil {
			b.Fatal(err)
		}
		r = append(r, time.Since(start))
	}
	return p50(o), p50(r)
}

func reportP50(b *testing.B, oursName string, ours time.Duration, baseName string, base time.Duration) {
	b.ReportMetric(float64(ours.Microseconds())/1000, oursName+"_p50_ms")
	b.ReportMetric(float64(base.Microseconds())/1000, baseName+"_p50_ms")
	b.ReportMetric(float64(ours)/float64(base), "ratio")
}

// benchIngestRollup: CreateLogs, 1,000-entry batches from 2 workers, against the same batches
// written by the statements CreateLogs runs minus the rollup's, through the store's own write
// pool into the same table, in short ABBA phases, so that neither side gets the emptier table. The
// batches are live traffic: each spans a second, consecutive ones follow each other, so the two
// workers add to the same rollup rows, as two clients of one project do. Rows: BENCH_ROWS / 5,
// 200,000 at most.
func benchIngestRollup(b *testing.B, e *benchEnv, st server.Store, write *sql.DB, bindType int) {
	const phaseBatches = 2 * createClients // one phase: two batches per worker
	batches := max(min(benchRows()/5, 200_000)/createBatch, 4*phaseBatches) / (4 * phaseBatches) * (4 * phaseBatches)
	now := time.Now().UnixMilli()
	all := make([][]domain.LogEntry, batches)
	for i := range all {
		all[i] = searchEntries(e.project, i*createBatch, createBatch, now+int64(i*createBatch), 1)
	}
	withRollup := func(i int) error {
		_, err := st.CreateLogs(context.Background(), all[i], domain.LogWrite{})
		return err
	}
	without := func(i int) error { return insertWithoutRollup(write, bindType, all[i]) }
	next := 0
	phase := func(job func(int) error) time.Duration {
		first := next
		next += phaseBatches
		return runConcurrent(b, createClients, phaseBatches, func(i int) error { return job(first + i) })
	}
	// One batch of each first, outside the figures: statements prepared, pages cached.
	warm := searchEntries(e.project, 0, createBatch, now-2*createBatch, 1)
	if _, err := st.CreateLogs(context.Background(), warm[:createBatch/2], domain.LogWrite{}); err != nil {
		b.Fatal(err)
	}
	if err := insertWithoutRollup(write, bindType, warm[createBatch/2:]); err != nil {
		b.Fatal(err)
	}
	// Short phases in ABBA rounds: on a shared machine the load changes by the second, and each
	// side must see as much of it as the other.
	b.ResetTimer()
	var ours, base time.Duration
	for next < batches {
		ours += phase(withRollup)
		base += phase(without)
		base += phase(without)
		ours += phase(withRollup)
	}
	b.StopTimer()
	rows := float64(batches / 2 * createBatch)
	oursRate, baseRate := rows/ours.Seconds(), rows/base.Seconds()
	b.ReportMetric(oursRate, "rollup_rows/s")
	b.ReportMetric(baseRate, "norollup_rows/s")
	b.ReportMetric(oursRate/baseRate, "ratio")
}

// insertWithoutRollup writes entries as CreateLogs does (one transaction: the project checked
// and locked as the engine does it, the engine's bulk insert of the same columns, message_fold
// and tail order included), without the rollup's statements.
func insertWithoutRollup(db *sql.DB, bindType int, entries []domain.LogEntry) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	postgres := bindType == sqlx.DOLLAR
	lock := " FOR SHARE"
	if !postgres {
		lock = "" // SQLite: the one writer's transaction holds the write lock
	}
	var id string
	var retention sql.NullInt32
	if err := tx.QueryRow(sqlx.Rebind(bindType, "SELECT id, retention_days FROM projects WHERE id IN (?)"+lock), entries[0].ProjectID).Scan(&id, &retention); err != nil {
		return err
	}
	const columns = "project_id, time, id, level, message, subject, user_id, attributes, trace_id, span_id, message_fold, tail_pos"
	query := "COPY logs (" + columns + ") FROM STDIN"
	var extra []any
	if !postgres {
		var batch int64
		if err := tx.QueryRow("UPDATE tail_clock SET tx = tx + 1 WHERE id = 1 RETURNING tx").Scan(&batch); err != nil {
			return err
		}
		query, extra = "INSERT INTO logs ("+columns+", tail_tx) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", []any{batch}
	}
	stmt, err := tx.Prepare(query)
	if err != nil {
		return err
	}
	for i, e := range entries {
		var fold any
		if f := domain.FoldCase(e.Message); f != e.Message {
			fold = f
		}
		args := append([]any{e.ProjectID, e.Time, e.ID, e.Level, e.Message, e.Subject, e.UserID, nil, e.TraceID, e.SpanID, fold, i}, extra...)
		if _, err := stmt.Exec(args...); err != nil {
			return err
		}
	}
	if postgres { // COPY: flush
		if _, err := stmt.Exec(); err != nil {
			return err
		}
	}
	if err := stmt.Close(); err != nil {
		return err
	}
	return tx.Commit()
}
