package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	_ "github.com/lib/pq"  // the COPY baseline
	_ "modernc.org/sqlite" // the SQLite baseline: the driver the service uses

	"example.com/obsvc/app/bench"
)

// ingestResult is what an ingest mode prints.
type ingestResult struct {
	Rows    int     `json:"rows"`
	Seconds float64 `json:"seconds"`
}

// concurrently runs job(0..n-1) over workers goroutines and returns the elapsed time; the first
// error stops every worker.
func concurrently(ctx context.Context, workers, n int, job func(ctx context.Context, i int) error) (time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := job(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return 0, err
	}
	return elapsed, nil
}

// ingestHTTP sends batches POST /logs bodies over clients connections. The bodies are made
// before the clock starts.
func ingestHTTP(ctx context.Context, base, project string, seed, batches, size, clients int) (ingestResult, error) {
	if base == "" || project == "" {
		return ingestResult{}, fmt.Errorf("post needs -url and -project")
	}
	bodies := make([][]byte, batches)
	for i := range bodies {
		bodies[i] = bench.BatchJSON(project, bench.Batch(seed+i, size))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: time.Minute}
	elapsed, err := concurrently(ctx, clients, batches, func(ctx context.Context, i int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/logs", bytes.NewReader(bodies[i]))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return fmt.Errorf("POST /logs = %d %s", resp.StatusCode, b)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	})
	return ingestResult{Rows: batches * size, Seconds: elapsed.Seconds()}, err
}

// logColumns is the column order of the service's own bulk inserts.
const logColumns = "project_id, time, id, level, message, subject, user_id"

// ingestCopy writes the same rows as ingestHTTP with COPY, one transaction per batch, as the
// PostgreSQL store does (the statement pq.CopyIn builds, which lib/pq 1.12 deprecates).
func ingestCopy(ctx context.Context, dbURL, project string, seed, batches, size, workers int) (ingestResult, error) {
	return ingestSQL(ctx, "postgres", dbURL, workers, "COPY logs ("+logColumns+") FROM STDIN", true, project, seed, batches, size)
}

// ingestSQLite writes the same rows with the fastest insert the driver offers: one transaction and
// one prepared INSERT per batch, over the one writer connection SQLite allows, with the service's
// pragmas (WAL, synchronous=FULL, foreign keys).
func ingestSQLite(ctx context.Context, path, project string, seed, batches, size, workers int) (ingestResult, error) {
	dsn := "file:" + path + "?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_txlock=immediate"
	return ingestSQL(ctx, "sqlite", dsn, workers, "INSERT INTO logs ("+logColumns+") VALUES (?, ?, ?, ?, ?, ?, ?)", false, project, seed, batches, size)
}

func ingestSQL(ctx context.Context, driver, dsn string, workers int, stmtText string, flush bool, project string, seed, batches, size int) (ingestResult, error) {
	if dsn == "" || project == "" {
		return ingestResult{}, fmt.Errorf("%s needs -db and -project", driver)
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return ingestResult{}, err
	}
	defer db.Close()
	if driver == "sqlite" {
		db.SetMaxOpenConns(1)
	}
	batchRows := make([][]bench.Row, batches)
	for i := range batchRows {
		batchRows[i] = bench.Batch(seed+i, size)
	}
	elapsed, err := concurrently(ctx, workers, batches, func(ctx context.Context, i int) error {
		return insertBatch(ctx, db, stmtText, flush, project, batchRows[i])
	})
	return ingestResult{Rows: batches * size, Seconds: elapsed.Seconds()}, err
}

// insertBatch writes rs in one transaction through one prepared statement; ids are made as the
// service makes them (UUIDv7).
func insertBatch(ctx context.Context, db *sql.DB, stmtText string, flush bool, project string, rs []bench.Row) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	stmt, err := tx.PrepareContext(ctx, stmtText)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if _, err := stmt.ExecContext(ctx, project, r.Time, uuid.Must(uuid.NewV7()).String(), r.Level, r.Message, r.Subject, r.User); err != nil {
			return err
		}
	}
	if flush {
		if _, err := stmt.ExecContext(ctx); err != nil {
			return err
		}
	}
	if err := stmt.Close(); err != nil {
		return err
	}
	return tx.Commit()
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}
