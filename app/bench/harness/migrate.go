package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver, for the database an earlier release left

	"example.com/obsvc/adapters/sqlstore/migrations"
	"example.com/obsvc/domain"
)

// The in-place upgrade: a database as the release before the query language left it (schema
// version 10), holding rows entries of the search corpus written at that schema directly with
// SQL, is upgraded by the service binary itself, which migrates at start-up (00011 on both
// engines, 00012 on SQLite: the words and attribute terms of every stored entry). The figures
// are the time until the service is ready and its process's peak RSS, each beside the same
// service started again on the migrated database (nothing left to migrate); then a needle and
// an attribute equality among the old entries are asked through GET /logs.

// migrateFrom is the schema version of the release before the migrations under test.
const migrateFrom = 10

// migrateChunk is how many entries one transaction of the old release's rows holds.
const migrateChunk = 100_000

// measureMigrate: the upgrade figures, PostgreSQL then SQLite.
func (h *harness) measureMigrate(ctx context.Context) error {
	rows := h.opts.migrateRows
	start := (time.Now().UnixMilli()/3_600_000)*3_600_000 - seedDays*day
	if err := execAdmin(ctx, h.pg, "CREATE DATABASE migrate"); err != nil {
		return err
	}
	pgURL := h.pg.DatabaseURL("migrate")
	sqlitePath := filepath.Join(h.dir, "migrate.db")
	stores := []struct {
		name, engine, dsn, dbURL string
		projects                 []string
	}{
		{name: "PostgreSQL", engine: "postgres", dsn: pgURL, dbURL: pgURL},
		{name: "SQLite", engine: "sqlite", dsn: "file:" + sqlitePath + "?_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)", dbURL: "sqlite:" + sqlitePath},
	}
	for i, st := range stores {
		h.logf("migrate: writing %s entries at schema version %d, %s", thousands(int64(rows)), migrateFrom, st.name)
		began := time.Now()
		projects, err := writeOldRelease(ctx, st.engine, st.dsn, rows, start)
		if err != nil {
			return fmt.Errorf("%s: write at version %d: %w", st.name, migrateFrom, err)
		}
		stores[i].projects = projects
		h.logf("migrate: written in %v", time.Since(began).Round(time.Second))
	}
	if err := vacuum(ctx, pgURL); err != nil {
		return err
	}
	h.logf("migrate: before the upgrade, at schema version %d:", migrateFrom)
	if err := h.reportBytes(ctx, rows, pgURL, sqlitePath, false); err != nil {
		return err
	}
	for _, st := range stores {
		if err := h.upgrade(ctx, st.name, st.engine, st.dbURL, rows, st.projects, start); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
	}
	h.logf("migrate: after the upgrade:")
	return h.reportBytes(ctx, rows, pgURL, sqlitePath, false)
}

// upgrade starts the service on the old database (it migrates, then is ready), checks the old
// entries are found, stops it and starts it again on the migrated database.
func (h *harness) upgrade(ctx context.Context, name, engine, dbURL string, rows int, projects []string, start int64) error {
	label := fmt.Sprintf("Upgrade %d -> latest, %s, %s rows", migrateFrom, name, thousands(int64(rows)))
	ready := figure{Name: label + ": time to ready (baseline: started again, nothing to migrate)", Unit: "s"}
	rss := figure{Name: label + ": the service's peak RSS (baseline: started again)", Unit: "MiB"}
	defer func() { h.figs = append(h.figs, ready, rss) }()
	within := time.Hour // the upgrade takes what it takes, within the run's -timeout
	if deadline, ok := ctx.Deadline(); ok {
		within = time.Until(deadline)
	}
	for round := range 2 {
		h.logf("migrate: starting the service on %s (%s)", name, map[bool]string{true: "migrates", false: "migrated"}[round == 0])
		began := time.Now()
		svc, base, err := h.startServiceWithin(ctx, "migrate-"+engine+"-"+strconv.Itoa(round), dbURL, within)
		if err != nil {
			ready.Err, rss.Err = err, err
			return nil
		}
		secs := time.Since(began).Seconds()
		peak, err := peakRSS(svc.cmd.Process.Pid)
		if err == nil && round == 0 {
			err = checkUpgraded(ctx, base, rows, projects, start)
		}
		svc.halt(30 * time.Second)
		if err != nil {
			ready.Err, rss.Err = err, err
			return nil
		}
		h.logf("migrate: ready in %.1f s, peak RSS %d MiB", secs, peak>>20)
		if round == 0 {
			ready.Ours, rss.Ours = secs, float64(peak>>20)
		} else {
			ready.Baseline, rss.Baseline = secs, float64(peak>>20)
		}
	}
	if engine == "postgres" {
		rss.Note = "the service's process only, not PostgreSQL's backend"
	}
	return nil
}

// peakRSS is the peak resident set of process pid (VmHWM), in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// checkUpgraded asks the upgraded service for one old entry by its request id, and for the
// newest 100 entries of a project holding one attribute value, whose newest it must name.
func checkUpgraded(ctx context.Context, base string, rows int, projects []string, start int64) error {
	perProject := rows / seedProjects
	month := fmt.Sprintf("&start_time=%d&end_time=%d", start, start+seedDays*day)
	k := 3 + seedProjects*(perProject/2) // an entry of project 3, halfway through its month
	needle := searchEntry(k, rows, projects, start)
	j := (perProject-1)/1000*1000 + 42 // the newest entry of project 3 with session s-0042
	if j >= perProject {
		j -= 1000
	}
	newest := searchEntry(3+seedProjects*j, rows, projects, start)
	for _, c := range []struct{ query, want string }{
		{requestID(k), needle.ID},
		{`session.id:"s-0042"`, newest.ID},
	} {
		u := base + "/logs?project_id=" + projects[3] + month + "&order=desc&limit=100&query=" + url.QueryEscape(c.query)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %d %v %s", u, resp.StatusCode, err, oneLine(string(body)))
		}
		if !strings.Contains(string(body), `"`+c.want+`"`) {
			return fmt.Errorf("after the upgrade, query %s does not find entry %s written before it", c.query, c.want)
		}
	}
	return nil
}

// writeOldRelease brings the database of engine at dsn to schema version 10 with the service's
// own migrations and writes the corpus's projects and rows entries into it as that release
// stored them, migrateChunk entries a transaction (PostgreSQL: COPY; SQLite: one prepared
// INSERT), then its rollups and tail batches as that release kept them.
func writeOldRelease(ctx context.Context, engine, dsn string, rows int, start int64) ([]string, error) {
	db, err := sql.Open(engine, dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	newProvider, bind := migrations.SQLite, func(q string) string { return q }
	if engine == "postgres" {
		newProvider = migrations.Postgres
		bind = func(q string) string {
			for i := 1; strings.Contains(q, "?"); i++ {
				q = strings.Replace(q, "?", "$"+strconv.Itoa(i), 1)
			}
			return q
		}
	}
	p, err := newProvider(db)
	if err != nil {
		return nil, err
	}
	if _, err := p.UpTo(ctx, migrateFrom); err != nil {
		return nil, fmt.Errorf("migrate to version %d: %w", migrateFrom, err)
	}
	now := time.Now().UTC()
	var created any = now
	if engine == "sqlite" {
		created = now.UnixMicro()
	}
	var projects []string
	for i := range seedProjects {
		id := fmt.Sprintf("0196a000-0000-7000-8000-%012d", i)
		if _, err := db.ExecContext(ctx, bind("INSERT INTO projects (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)"), id, "migrate-"+strconv.Itoa(i), created, created); err != nil {
			return nil, err
		}
		projects = append(projects, id)
	}
	for from := 0; from < rows; from += migrateChunk {
		if err := writeOldChunk(ctx, db, engine, bind, rows, from, min(from+migrateChunk, rows), projects, start); err != nil {
			return nil, err
		}
	}
	// What version 10 keeps beside the entries: the rollups of 00006 and 00008, and the tail
	// batches of 00010 (one per transaction).
	for _, s := range []string{
		`INSERT INTO log_counts (project_id, minute, level, n) SELECT project_id, time - ((time % 60000) + 60000) % 60000, level, count(*) FROM logs
		GROUP BY project_id, time - ((time % 60000) + 60000) % 60000, level`,
		`INSERT INTO log_counts_hour (project_id, hour, level, n) SELECT project_id, minute - ((minute % 3600000) + 3600000) % 3600000, level, sum(n) FROM log_counts
		GROUP BY project_id, minute - ((minute % 3600000) + 3600000) % 3600000, level`,
		`INSERT INTO tail_batches (project_id, seq, tx) SELECT project_id, row_number() OVER (PARTITION BY project_id ORDER BY tail_tx), tail_tx
		FROM (SELECT DISTINCT project_id, tail_tx FROM logs WHERE tail_tx IS NOT NULL) b`,
		`INSERT INTO tail_seq (project_id, seq) SELECT project_id, max(seq) FROM tail_batches GROUP BY project_id`,
	} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return nil, fmt.Errorf("%s: %w", oneLine(s), err)
		}
	}
	if engine == "sqlite" {
		if _, err := db.ExecContext(ctx, "UPDATE tail_clock SET tx = (SELECT coalesce(max(tail_tx), 0) FROM logs)"); err != nil {
			return nil, err
		}
	}
	return projects, nil
}

// oldColumns are the columns of logs at version 10 that the corpus fills (on PostgreSQL
// tail_tx is its default, the transaction's id).
var oldColumns = []string{"project_id", "time", "id", "level", "message", "message_fold", "subject", "user_id", "attributes", "tail_pos"}

// writeOldChunk writes entries [from, to) of the corpus in one transaction.
func writeOldChunk(ctx context.Context, db *sql.DB, engine string, bind func(string) string, rows, from, to int, projects []string, start int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	query := "COPY logs (" + strings.Join(oldColumns, ", ") + ") FROM STDIN"
	if engine == "sqlite" {
		query = "INSERT INTO logs (" + strings.Join(oldColumns, ", ") + ", tail_tx) VALUES (" + strings.Repeat("?, ", len(oldColumns)) + "?)"
	}
	stmt, err := tx.PrepareContext(ctx, bind(query))
	if err != nil {
		return err
	}
	for k := from; k < to; k++ {
		e := searchEntry(k, rows, projects, start)
		var fold *string
		if f := domain.FoldCase(e.Message); f != e.Message {
			fold = &f
		}
		args := []any{e.ProjectID, e.Time, e.ID, e.Level, e.Message, fold, *e.Subject, *e.UserID, string(e.Attributes), k - from}
		if engine == "sqlite" {
			args = append(args, 1+from/migrateChunk)
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	if engine == "postgres" {
		if _, err := stmt.ExecContext(ctx); err != nil {
			return err
		}
	}
	if err := stmt.Close(); err != nil {
		return err
	}
	return tx.Commit()
}
