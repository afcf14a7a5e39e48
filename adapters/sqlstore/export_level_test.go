package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"math"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// DistributeSchema distributes the current schema on a Citus coordinator as OpenPostgres does
// after migrating, so that a test can fill an older schema's distributed tables.
func DistributeSchema(ctx context.Context, db *sql.DB) error {
	_, err := distributeSchema(ctx, db)
	return err
}

// LevelMigrationSQL is every per-project statement of the level migration (00009) as it runs on
// PostgreSQL, with arguments for a project.
func LevelMigrationSQL() []Statement {
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
