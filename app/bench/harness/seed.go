package main

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"sync"
	"time"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/app/bench"
	"example.com/obsvc/domain"
)

// The read table: rows entries over seedProjects projects and seedDays days, each project's
// entries evenly spaced in time, seedUsers users, levels in the proportions of a real service.
const (
	seedProjects = 10
	seedDays     = 30
	seedUsers    = 100
	seedStart    = int64(1_793_491_200_000) // 2026-11-01T00:00:00Z, in Unix milliseconds
	day          = int64(24 * time.Hour / time.Millisecond)
)

var seedLevels = []string{"debug", "info", "info", "info", "warn", "error"}

// readTable is what the read figures need to know about the seeded table.
type readTable struct {
	projects []string
	rows     int
}

// seedRead migrates the database at dbURL with the service's own migrations, creates the projects
// and copies rows entries in. COPY runs without the table's indexes and constraints, which are
// built again afterwards from their own definitions (faster than maintaining them row by row),
// then the table is vacuumed and analysed: both the service and the baseline read it as a
// settled table.
func seedRead(ctx context.Context, dbURL string, rows int) (readTable, error) {
	st, err := sqlstore.OpenPostgres(ctx, dbURL, sqlstore.DefaultPostgresOptions())
	if err != nil {
		return readTable{}, err
	}
	t := readTable{rows: rows}
	now := time.Now().UTC()
	for i := range seedProjects {
		id := fmt.Sprintf("0196a000-0000-7000-8000-%012d", i)
		if err := st.CreateProject(ctx, domain.Project{ID: id, Name: "bench-" + strconv.Itoa(i), CreatedAt: now, UpdatedAt: now}); err != nil {
			_ = st.Close()
			return readTable{}, err
		}
		t.projects = append(t.projects, id)
	}
	if err := st.Close(); err != nil {
		return readTable{}, err
	}

	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		return readTable{}, err
	}
	defer db.Close()
	// The definitions to rebuild: primary key first, then the indexes, then the foreign key.
	var rebuild, drop []string
	cons, err := db.QueryContext(ctx, `SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint
		WHERE conrelid = 'logs'::regclass AND contype IN ('p', 'f') ORDER BY contype DESC`)
	if err != nil {
		return readTable{}, err
	}
	var fk []string
	for cons.Next() {
		var name, typ, def string
		if err := cons.Scan(&name, &typ, &def); err != nil {
			cons.Close()
			return readTable{}, err
		}
		add := "ALTER TABLE logs ADD CONSTRAINT " + name + " " + def
		drop = append(drop, "ALTER TABLE logs DROP CONSTRAINT "+name) // f before p
		if typ == "p" {
			rebuild = append(rebuild, add)
		} else {
			fk = append(fk, add)
		}
	}
	cons.Close()
	idx, err := db.QueryContext(ctx, `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()
		AND tablename = 'logs' AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = 'logs'::regclass)`)
	if err != nil {
		return readTable{}, err
	}
	for idx.Next() {
		var name, def string
		if err := idx.Scan(&name, &def); err != nil {
			idx.Close()
			return readTable{}, err
		}
		drop = append(drop, "DROP INDEX "+name)
		rebuild = append(rebuild, def)
	}
	idx.Close()
	rebuild = append(rebuild, fk...)
	for _, s := range drop {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return readTable{}, fmt.Errorf("%s: %w", s, err)
		}
	}

	if err := copyRows(ctx, db, t.projects, rows); err != nil {
		return readTable{}, err
	}
	conn, err := db.Conn(ctx) // one session, so the memory setting holds for every build
	if err != nil {
		return readTable{}, err
	}
	defer conn.Close()
	for _, s := range append([]string{"SET maintenance_work_mem = '512MB'"}, append(rebuild, "VACUUM ANALYZE logs")...) {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return readTable{}, fmt.Errorf("%s: %w", s, err)
		}
	}
	return t, nil
}

// seedChunk is the rows of one COPY transaction of the seed.
const seedChunk = 100_000

// copyRows copies rows entries with two COPY streams.
func copyRows(ctx context.Context, db *sql.DB, projects []string, rows int) error {
	chunks := make(chan int)
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for start := range chunks {
				if err := copyChunk(ctx, db, projects, rows, start, min(start+seedChunk, rows)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	go func() {
		defer close(chunks)
		for start := 0; start < rows; start += seedChunk {
			select {
			case chunks <- start:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

// copyChunk copies entries [from, to) in one transaction. Entry k belongs to project k mod 10
// and is number j = k / 10 of it; a project's entries are evenly spaced over seedDays days.
func copyChunk(ctx context.Context, db *sql.DB, projects []string, rows, from, to int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	stmt, err := tx.PrepareContext(ctx, "COPY logs (project_id, time, id, level, message, subject, user_id) FROM STDIN")
	if err != nil {
		return err
	}
	perProject := max(rows/len(projects), 1)
	step := float64(seedDays*day) / float64(perProject)
	for k := from; k < to; k++ {
		p, j := k%len(projects), k/len(projects)
		t := seedStart + int64(float64(j)*step)
		// A UUIDv7 layout: the time in the first 48 bits, k in the last 48, so ids are unique.
		id := fmt.Sprintf("%08x-%04x-7000-8000-%012x", t>>16, t&0xffff, k)
		msg := bench.Message(k)
		user := "user-" + strconv.Itoa((j*37+p)%seedUsers)
		if _, err := stmt.ExecContext(ctx, projects[p], t, id, seedLevels[j%len(seedLevels)], msg, "checkout", user); err != nil {
			return err
		}
	}
	if _, err := stmt.ExecContext(ctx); err != nil {
		return err
	}
	if err := stmt.Close(); err != nil {
		return err
	}
	return tx.Commit()
}
