package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

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
// logs_level index), and the rows that need their attributes rewritten a batch at a time; the
// rest is set-based UPDATEs. Every statement names project_id, so on Citus each is routed to
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
	levelReadAttrs  = "SELECT time, id, attributes FROM logs WHERE project_id = ? AND level = ? ORDER BY time, id LIMIT ?"
	levelWriteEntry = "UPDATE logs SET level = ?, attributes = ? WHERE project_id = ? AND time = ? AND id = ?"
)

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

// upCanonicalLevels returns the RunTx of the migration; bind rewrites placeholders.
func upCanonicalLevels(bind func(string) string) func(context.Context, *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		after := leastID
		for {
			ids, err := readStrings(ctx, tx, bind(levelProjects), after, levelBatch)
			if err != nil {
				return fmt.Errorf("migration %05d: read projects: %w", levelMigrationVersion, err)
			}
			for _, id := range ids {
				if err := canonicalProjectLevels(ctx, tx, bind, id); err != nil {
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
func canonicalProjectLevels(ctx context.Context, tx *sql.Tx, bind func(string) string, project string) error {
	err := forEachLevel(ctx, tx, bind(fmt.Sprintf(levelsOf, "logs")), project,
		func(old, level string) error { return canonicalEntries(ctx, tx, bind, project, old, level) })
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
// when the rule keeps it: set-based where the attributes are absent or untouched, row by row
// (in batches) where an attributes object gains the key.
func canonicalEntries(ctx context.Context, tx *sql.Tx, bind func(string) string, project, old, level string) error {
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
	// Each batch's rows leave the level, so the same query reads the next batch.
	read, write := bind(levelReadAttrs), bind(levelWriteEntry)
	type row struct {
		time  int64
		id    string
		attrs string
	}
	for {
		rows, err := tx.QueryContext(ctx, read, project, old, levelBatch)
		if err != nil {
			return fmt.Errorf("read entries: %w", err)
		}
		var batch []row
		for rows.Next() {
			var r row
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
		for _, r := range batch {
			attrs, err := domain.WithSeverityText(json.RawMessage(r.attrs), old)
			if err != nil {
				return fmt.Errorf("entry %s: %w", r.id, err)
			}
			if _, err := tx.ExecContext(ctx, write, level, string(attrs), project, r.time, r.id); err != nil {
				return fmt.Errorf("update entry: %w", err)
			}
		}
		if len(batch) < levelBatch {
			return nil
		}
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
