package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"example.com/obsvc/domain"
)

// Migration 00006 (both engines, in Go because the folded messages are computed by
// domain.FoldCase, which no SQL engine has):
//   - logs.message_fold: the message under Unicode simple case folding, NULL when that equals the
//     message (most lower-case text), so q compares one column with one pattern on both engines
//     whatever the database's locale, and pays storage only for messages folding changes;
//   - logs_subject: the index of the subject filter, shaped like logs_user;
//   - log_counts: per project, minute and level, how many entries the table holds; the stats of
//     the common dashboard question are read from it. project_id leads its key like every
//     per-project table.
//
// Adding a nullable column rewrites nothing; the backfill folds the rows written before, a batch
// at a time in key order, so memory stays bounded.

const (
	searchUpPostgres = `ALTER TABLE logs ADD COLUMN message_fold text;
CREATE INDEX logs_subject ON logs (project_id, subject, time, id);
CREATE TABLE log_counts (
    project_id uuid   NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    minute     bigint NOT NULL,
    level      text   NOT NULL,
    n          bigint NOT NULL,
    PRIMARY KEY (project_id, minute, level)
)`
	searchUpSQLite = `ALTER TABLE logs ADD COLUMN message_fold TEXT;
CREATE INDEX logs_subject ON logs (project_id, subject, time, id);
CREATE TABLE log_counts (
    project_id TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    minute     INTEGER NOT NULL,
    level      TEXT    NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (project_id, minute, level)
)`
	// countExisting fills log_counts from the entries already stored (minute = time floored to
	// a whole minute, negative times included).
	countExisting = `INSERT INTO log_counts (project_id, minute, level, n)
SELECT project_id, time - ((time % 60000) + 60000) % 60000, level, count(*) FROM logs
GROUP BY project_id, time - ((time % 60000) + 60000) % 60000, level`
	searchDown = `DROP TABLE log_counts;
DROP INDEX logs_subject;
ALTER TABLE logs DROP COLUMN message_fold`
)

// foldBatch is how many entries the backfill of 00006 reads at a time.
const foldBatch = 1000

// upSearch returns the RunTx of migration 00006 for an engine's DDL; bind rewrites placeholders.
func upSearch(ddl string, bind func(string) string) func(context.Context, *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		for _, stmt := range splitStatements(ddl) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migration 00006: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, countExisting); err != nil {
			return fmt.Errorf("migration 00006: count entries: %w", err)
		}
		return foldMessages(ctx, tx, bind)
	}
}

func downSearch(ctx context.Context, tx *sql.Tx) error {
	for _, stmt := range splitStatements(searchDown) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("migration 00006 down: %w", err)
		}
	}
	return nil
}

// foldMessages sets message_fold on every entry whose folded message differs from it.
func foldMessages(ctx context.Context, tx *sql.Tx, bind func(string) string) error {
	type key struct {
		project string
		time    int64
		id      string
	}
	type row struct {
		key
		fold string
	}
	read := bind("SELECT project_id, time, id, message FROM logs WHERE (project_id, time, id) > (?, ?, ?) ORDER BY project_id, time, id LIMIT ?")
	write := bind("UPDATE logs SET message_fold = ? WHERE project_id = ? AND time = ? AND id = ?")
	after := key{project: leastID, time: -1 << 63, id: leastID}
	for {
		rows, err := tx.QueryContext(ctx, read, after.project, after.time, after.id, foldBatch)
		if err != nil {
			return fmt.Errorf("read messages: %w", err)
		}
		var changed []row
		n := 0
		for rows.Next() {
			var k key
			var msg string
			if err := rows.Scan(&k.project, &k.time, &k.id, &msg); err != nil {
				_ = rows.Close()
				return fmt.Errorf("read messages: %w", err)
			}
			n++
			after = k
			if f := domain.FoldCase(msg); f != msg {
				changed = append(changed, row{k, f})
			}
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("read messages: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read messages: %w", err)
		}
		for _, r := range changed {
			if _, err := tx.ExecContext(ctx, write, r.fold, r.project, r.time, r.id); err != nil {
				return fmt.Errorf("fold message: %w", err)
			}
		}
		if n < foldBatch {
			return nil
		}
	}
}

// splitStatements splits DDL at the semicolons that end its lines.
func splitStatements(ddl string) []string {
	var out []string
	start := 0
	for i := 0; i < len(ddl); i++ {
		if ddl[i] == ';' && (i+1 == len(ddl) || ddl[i+1] == '\n') {
			out = append(out, ddl[start:i])
			start = i + 1
		}
	}
	if rest := ddl[start:]; len(rest) > 0 {
		out = append(out, rest)
	}
	return out
}
