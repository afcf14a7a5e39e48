package migrations

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"example.com/obsvc/domain"
)

// Migration 00009 (both engines, in Go because the rule is domain.CanonicalLevel, which no SQL
// engine has): levels are canonical. Entries written before kept their level as sent ("ERROR",
// "WARNING", "critical"); the migration stores each as the service now would: the canonical
// level, and, when that differs from the text beyond case, the text in the attribute
// severity_text (unless the entry holds that attribute already), so nothing is lost. The
// rollups (log_counts, log_counts_hour) are merged the same way: the counts of every level
// that folds into another are added to it.
//
// Memory stays bounded however large the tables are: projects are read a batch at a time in id
// order, each project's distinct levels a batch at a time in level order (a range of the
// logs_level index), and the rows that need their attributes rewritten a batch at a time in
// (time, id) order, each batch written back in one statement on PostgreSQL; the rest is
// set-based UPDATEs. On PostgreSQL, 300,000 rows of which 225,000 change (a quarter of them
// gaining severity_text in existing attributes) migrate with at most 31 MiB of Go heap in use;
// the batched write takes about as long per row as the set-based UPDATEs. Every statement names project_id, so on Citus each is routed to
// the one node holding the project's shards. A canonical level is its own canonical form, so
// the walk over levels needs no other bookkeeping than its position.
//
// Down leaves the levels canonical: the previous release reads any level text, so there is
// nothing to undo, and the spellings as sent live on in severity_text where they differed.

// levelMigrationVersion is the number of the migration in goose's sequence.
const levelMigrationVersion = 9

// levelBatch is how many projects, levels or entries the migration reads at a time.
const levelBatch = 1000

// The statements of the migration (placeholders as ?). Every one but the first, which reads the
// reference table projects, names the project.
const (
	levelProjects = "SELECT id FROM projects WHERE id > ? ORDER BY id LIMIT ?"
	// levelsOf reads distinct levels of a table (logs or a rollup) in level order.
	levelsOf        = "SELECT DISTINCT level FROM %s WHERE project_id = ? AND level > ? ORDER BY level LIMIT ?"
	levelSet        = "UPDATE logs SET level = ? WHERE project_id = ? AND level = ?"
	levelSetBare    = "UPDATE logs SET level = ?, attributes = ? WHERE project_id = ? AND level = ? AND attributes IS NULL"
	levelReadAttrs  = "SELECT time, id, attributes FROM logs WHERE project_id = ? AND level = ? AND (time, id) > (?, ?) ORDER BY time, id LIMIT ?"
	levelWriteEntry = "UPDATE logs SET level = ?, attributes = ? WHERE project_id = ? AND time = ? AND id = ?"
	// levelWriteBatch is PostgreSQL's write of a whole batch in one statement ($1 the level, $2
	// the project, then the batch's times, ids and attributes as arrays): a statement per row
	// costs a round trip each.
	levelWriteBatch = "UPDATE logs SET level = $1, attributes = v.a::json FROM unnest($3::bigint[], $4::uuid[], $5::text[]) AS v(t, i, a)" +
		" WHERE logs.project_id = $2 AND logs.time = v.t AND logs.id = v.i"
)

// Statement is one statement of a migration as it runs on PostgreSQL, with the arguments it
// runs with for a project.
type Statement struct {
	Name  string
	Query string
	Args  func(projectID string) []any
}

// LevelStatements is every per-project statement of 00009 as it runs on PostgreSQL, with
// arguments for a project: the Citus routing test EXPLAINs each, so that none of them leaves
// the project's shard.
func LevelStatements() []Statement {
	bind := func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) }
	out := []Statement{
		{"levels of logs", bind(fmt.Sprintf(levelsOf, "logs")), func(p string) []any { return []any{p, "", levelBatch} }},
		{"case-only level", bind(levelSet), func(p string) []any { return []any{"error", p, "ERROR"} }},
		{"level of entries without attributes", bind(levelSetBare), func(p string) []any { return []any{"warn", `{"severity_text":"WARNING"}`, p, "WARNING"} }},
		{"entries with attributes", bind(levelReadAttrs), func(p string) []any { return []any{p, "WARNING", int64(math.MinInt64), leastID, levelBatch} }},
		{"a batch of entries", levelWriteBatch, func(p string) []any {
			return []any{"warn", p, pq.Array([]int64{1, 2}), pq.Array([]string{leastID, leastID}), pq.Array([]string{"{}", "{}"})}
		}},
	}
	for _, r := range levelRollups {
		merge, drop := rollupMerge(r.table, r.column)
		out = append(out,
			Statement{"levels of " + r.table, bind(fmt.Sprintf(levelsOf, r.table)), func(p string) []any { return []any{p, "", levelBatch} }},
			Statement{"merge " + r.table, bind(merge), func(p string) []any { return []any{"warn", p, "WARNING"} }},
			Statement{"drop from " + r.table, bind(drop), func(p string) []any { return []any{p, "WARNING"} }})
	}
	return out
}

// levelRow is an entry whose attributes the migration rewrites.
type levelRow struct {
	time  int64
	id    string
	attrs string
}

// levelWriter stores level and each row's attributes on a batch of the project's entries.
type levelWriter func(ctx context.Context, tx *sql.Tx, project, level string, rows []levelRow) error

// writeLevelRows is SQLite's levelWriter: a statement per row, which in process costs no round
// trip.
func writeLevelRows(ctx context.Context, tx *sql.Tx, project, level string, rows []levelRow) error {
	for _, r := range rows {
		if _, err := tx.ExecContext(ctx, levelWriteEntry, level, r.attrs, project, r.time, r.id); err != nil {
			return err
		}
	}
	return nil
}

// writeLevelBatch is PostgreSQL's levelWriter: one statement per batch.
func writeLevelBatch(ctx context.Context, tx *sql.Tx, project, level string, rows []levelRow) error {
	times, ids, attrs := make([]int64, len(rows)), make([]string, len(rows)), make([]string, len(rows))
	for i, r := range rows {
		times[i], ids[i], attrs[i] = r.time, r.id, r.attrs
	}
	_, err := tx.ExecContext(ctx, levelWriteBatch, level, project, pq.Array(times), pq.Array(ids), pq.Array(attrs))
	return err
}

// levelRollups are the rollups the migration merges, and the column of each one's time.
var levelRollups = []struct{ table, column string }{{"log_counts", "minute"}, {"log_counts_hour", "hour"}}

// rollupMerge is the statement that adds the counts of one level (args: the canonical level,
// the project, the old level) to another's in a rollup; rollupDrop (args: project, old level)
// then drops the old level's rows.
func rollupMerge(table, column string) (merge, drop string) {
	merge = "INSERT INTO " + table + " (project_id, " + column + ", level, n)" +
		" SELECT project_id, " + column + ", CAST(? AS text), n FROM " + table + " WHERE project_id = ? AND level = ?" +
		" ON CONFLICT (project_id, " + column + ", level) DO UPDATE SET n = " + table + ".n + excluded.n"
	return merge, "DELETE FROM " + table + " WHERE project_id = ? AND level = ?"
}

// upCanonicalLevels returns the RunTx of the migration; bind rewrites placeholders, write stores
// a batch of rewritten entries.
func upCanonicalLevels(bind func(string) string, write levelWriter) func(context.Context, *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		after := leastID
		for {
			ids, err := readStrings(ctx, tx, bind(levelProjects), after, levelBatch)
			if err != nil {
				return fmt.Errorf("migration %05d: read projects: %w", levelMigrationVersion, err)
			}
			for _, id := range ids {
				if err := canonicalProjectLevels(ctx, tx, bind, write, id); err != nil {
					return fmt.Errorf("migration %05d: project %s: %w", levelMigrationVersion, id, err)
				}
			}
			if len(ids) < levelBatch {
				return nil
			}
			after = ids[len(ids)-1]
		}
	}
}

// downCanonicalLevels is the Down of the migration: nothing to undo (see above).
func downCanonicalLevels(context.Context, *sql.Tx) error { return nil }

// canonicalProjectLevels brings one project's entries and rollups to canonical levels.
func canonicalProjectLevels(ctx context.Context, tx *sql.Tx, bind func(string) string, write levelWriter, project string) error {
	err := forEachLevel(ctx, tx, bind(fmt.Sprintf(levelsOf, "logs")), project,
		func(old, level string) error { return canonicalEntries(ctx, tx, bind, write, project, old, level) })
	if err != nil {
		return err
	}
	for _, r := range levelRollups {
		merge, drop := rollupMerge(r.table, r.column)
		err := forEachLevel(ctx, tx, bind(fmt.Sprintf(levelsOf, r.table)), project,
			func(old, level string) error {
				// The old level's counts are added to the canonical level's, then dropped.
				if _, err := tx.ExecContext(ctx, bind(merge), level, project, old); err != nil {
					return fmt.Errorf("merge %s: %w", r.table, err)
				}
				if _, err := tx.ExecContext(ctx, bind(drop), project, old); err != nil {
					return fmt.Errorf("merge %s: %w", r.table, err)
				}
				return nil
			})
		if err != nil {
			return err
		}
	}
	return nil
}

// forEachLevel calls fn with every distinct level the query (project, after, limit) yields whose
// canonical form differs from it, and that form.
func forEachLevel(ctx context.Context, tx *sql.Tx, query, project string, fn func(old, level string) error) error {
	after := ""
	for {
		levels, err := readStrings(ctx, tx, query, project, after, levelBatch)
		if err != nil {
			return fmt.Errorf("read levels: %w", err)
		}
		for _, old := range levels {
			if level := domain.CanonicalLevel(old); level != old {
				if err := fn(old, level); err != nil {
					return err
				}
			}
		}
		if len(levels) < levelBatch {
			return nil
		}
		after = levels[len(levels)-1]
	}
}

// canonicalEntries stores level in place of old on the project's entries, with severity_text
// when the rule keeps it: set-based where the attributes are absent or untouched, a batch at a
// time where an attributes object gains the key (computed here, by the domain's rule).
func canonicalEntries(ctx context.Context, tx *sql.Tx, bind func(string) string, write levelWriter, project, old, level string) error {
	if !domain.KeepsSeverityText(old, level) {
		if _, err := tx.ExecContext(ctx, bind(levelSet), level, project, old); err != nil {
			return fmt.Errorf("update levels: %w", err)
		}
		return nil
	}
	only, err := domain.WithSeverityText(nil, old)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, bind(levelSetBare), level, string(only), project, old); err != nil {
		return fmt.Errorf("update levels: %w", err)
	}
	// In (time, id) order from where the last batch ended: the index entries of the rows already
	// rewritten stay in the index until the transaction ends, and are not read again.
	read := bind(levelReadAttrs)
	afterTime, afterID := int64(math.MinInt64), leastID
	for {
		rows, err := tx.QueryContext(ctx, read, project, old, afterTime, afterID, levelBatch)
		if err != nil {
			return fmt.Errorf("read entries: %w", err)
		}
		var batch []levelRow
		for rows.Next() {
			var r levelRow
			if err := rows.Scan(&r.time, &r.id, &r.attrs); err != nil {
				_ = rows.Close()
				return fmt.Errorf("read entries: %w", err)
			}
			batch = append(batch, r)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("read entries: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read entries: %w", err)
		}
		for i, r := range batch {
			attrs, err := domain.WithSeverityText(json.RawMessage(r.attrs), old)
			if err != nil {
				return fmt.Errorf("entry %s: %w", r.id, err)
			}
			batch[i].attrs = string(attrs)
		}
		if err := write(ctx, tx, project, level, batch); err != nil {
			return fmt.Errorf("update entries: %w", err)
		}
		if len(batch) < levelBatch {
			return nil
		}
		afterTime, afterID = batch[len(batch)-1].time, batch[len(batch)-1].id
	}
}

// readStrings runs a query of one text column and returns its values.
func readStrings(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
