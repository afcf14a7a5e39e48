package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"

	"example.com/obsvc/domain"
)

// minuteMs is the width of one row of the log_counts rollup.
const minuteMs = 60_000

// floorMinute is the start of the minute holding t (Unix ms), for negative t too.
func floorMinute(t int64) int64 {
	return t - ((t%minuteMs)+minuteMs)%minuteMs
}

// ceilMinute is the first minute start at or after t.
func ceilMinute(t int64) int64 {
	f := floorMinute(t)
	if f == t {
		return t
	}
	return f + minuteMs
}

// countKey is one row of the rollup.
type countKey struct {
	project string
	minute  int64
	level   string
}

// countEntries tallies entries by rollup row.
func countEntries(entries []domain.LogEntry) map[countKey]int64 {
	c := make(map[countKey]int64)
	for _, e := range entries {
		c[countKey{e.ProjectID, floorMinute(e.Time), e.Level}]++
	}
	return c
}

// addCounts adds sign times each tally to the rollup inside tx, in key order so that two
// transactions touching the same rows lock them in the same order (no deadlock), and removes the
// rows that fall to zero.
func addCounts(ctx context.Context, tx *sqlx.Tx, bind func(string) string, counts map[countKey]int64, sign int64) error {
	if len(counts) == 0 {
		return nil
	}
	keys := make([]countKey, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b countKey) int {
		return cmp.Or(strings.Compare(a.project, b.project), cmp.Compare(a.minute, b.minute), strings.Compare(a.level, b.level))
	})
	query := "INSERT INTO log_counts (project_id, minute, level, n) VALUES (?, ?, ?, ?)" +
		" ON CONFLICT (project_id, minute, level) DO UPDATE SET n = log_counts.n + excluded.n"
	if sign < 0 {
		query = "UPDATE log_counts SET n = n - ? WHERE project_id = ? AND minute = ? AND level = ?"
	}
	stmt, err := tx.PrepareContext(ctx, bind(query))
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, k := range keys {
		if sign < 0 {
			_, err = stmt.ExecContext(ctx, counts[k], k.project, k.minute, k.level)
		} else {
			_, err = stmt.ExecContext(ctx, k.project, k.minute, k.level, counts[k])
		}
		if err != nil {
			return err
		}
	}
	if sign < 0 {
		projects := map[string]bool{}
		for _, k := range keys {
			if !projects[k.project] {
				projects[k.project] = true
				if _, err := tx.ExecContext(ctx, bind("DELETE FROM log_counts WHERE project_id = ? AND n <= 0"), k.project); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// deleteCounted runs a DELETE of logs inside tx, takes the minute and level of every row it
// removes (RETURNING, so exactly the rows removed, whatever commits beside it) and takes them
// off the rollup in the same transaction. It says how many rows it removed.
func deleteCounted(ctx context.Context, tx *sqlx.Tx, bind func(string) string, del string, args ...any) (int64, error) {
	rows, err := tx.QueryContext(ctx, bind(del+" RETURNING project_id, time, level"), args...)
	if err != nil {
		return 0, err
	}
	counts := make(map[countKey]int64)
	var n int64
	for rows.Next() {
		var project, level string
		var t int64
		if err := rows.Scan(&project, &t, &level); err != nil {
			_ = rows.Close()
			return 0, err
		}
		counts[countKey{project, floorMinute(t), level}]++
		n++
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	return n, addCounts(ctx, tx, bind, counts, -1)
}

// rollupAnswers says whether the rollup can count q: a filter of project, time and levels only,
// grouped by level or not at all, buckets that are whole minutes starting on a minute.
func rollupAnswers(q domain.StatsQuery) bool {
	f := q.LogFilter
	return f.UserID == nil && f.Subject == nil && f.TraceID == nil && f.Q == nil && f.Level == nil &&
		q.By != domain.BySubject && q.Step%minuteMs == 0 && floorMinute(*q.Start) == *q.Start
}

// LogStats implements domain.LogStore. It reads in one snapshot (a read-only repeatable-read
// transaction on PostgreSQL; a read transaction on SQLite's WAL) the project's retention, then
// counts: the whole minutes inside the range and the retention from the rollup when it can
// answer q, the rest (the minute cut by the retention boundary, a range end inside a minute,
// every filter the rollup does not hold) from the entries themselves.
func (s *Store) LogStats(ctx context.Context, q domain.StatsQuery) ([]domain.BucketCount, error) {
	tx, err := s.r.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		// SQLite knows no isolation levels but serializable; its read transactions are snapshots.
		tx, err = s.r.BeginTxx(ctx, nil)
		if err != nil {
			return nil, s.translate("begin stats", err)
		}
	}
	defer func() { _ = tx.Rollback() }() // read-only: nothing to keep

	var retention sql.NullInt64
	if err := tx.GetContext(ctx, &retention, s.bind("SELECT retention_days FROM projects WHERE id = ?"), q.ProjectID); err != nil {
		return nil, s.translate("stats: project", err)
	}
	lo, hi := *q.Start, *q.End
	if retention.Valid {
		lo = max(lo, q.Now-retention.Int64*86_400_000)
	}
	if lo > hi {
		return nil, nil
	}
	var out []domain.BucketCount
	entries := func(from, to int64) error { // [from, to], both inclusive
		if from > to {
			return nil
		}
		c, err := s.countEntries(ctx, tx, q, from, to)
		out = append(out, c...)
		return err
	}
	if !rollupAnswers(q) {
		if err := entries(lo, hi); err != nil {
			return nil, s.translate("stats: entries", err)
		}
		return out, nil
	}
	// Whole minutes [a, b) from the rollup; the cut minutes at either end from the entries.
	a := ceilMinute(lo)
	b := floorMinute(hi)
	if hi-b == minuteMs-1 {
		b = hi + 1
	}
	if a >= b {
		if err := entries(lo, hi); err != nil {
			return nil, s.translate("stats: entries", err)
		}
		return out, nil
	}
	if err := entries(lo, a-1); err != nil {
		return nil, s.translate("stats: entries", err)
	}
	if err := entries(b, hi); err != nil {
		return nil, s.translate("stats: entries", err)
	}
	c, err := s.countRollup(ctx, tx, q, a, b)
	if err != nil {
		return nil, s.translate("stats: rollup", err)
	}
	return append(out, c...), nil
}

// groupColumn is the column a stats query groups by, or a constant for none.
func groupColumn(by string) string {
	switch by {
	case domain.BySubject:
		return "subject"
	case domain.ByNone:
		return "CAST(NULL AS TEXT)"
	}
	return "level"
}

// countEntries counts the matching entries with time in [from, to] per bucket and group.
func (s *Store) countEntries(ctx context.Context, tx *sqlx.Tx, q domain.StatsQuery, from, to int64) ([]domain.BucketCount, error) {
	f := q.LogFilter
	f.Start, f.End = &from, &to
	w, args := where(f)
	g := groupColumn(q.By)
	query := "SELECT (time - ?) / ? AS bucket, " + g + " AS grp, count(*) AS n FROM logs" + w + " GROUP BY bucket, grp"
	return s.scanCounts(ctx, tx, query, append([]any{*q.Start, q.Step}, args...))
}

// countRollup sums the rollup's minutes in [from, to) per bucket and group.
func (s *Store) countRollup(ctx context.Context, tx *sqlx.Tx, q domain.StatsQuery, from, to int64) ([]domain.BucketCount, error) {
	g := "level"
	if q.By == domain.ByNone {
		g = "CAST(NULL AS TEXT)"
	}
	var b strings.Builder
	args := []any{*q.Start, q.Step, q.ProjectID, from, to}
	b.WriteString("SELECT (minute - ?) / ? AS bucket, " + g + " AS grp, SUM(n) AS n FROM log_counts WHERE project_id = ? AND minute >= ? AND minute < ?")
	if len(q.Levels) > 0 {
		b.WriteString(" AND level IN (?" + strings.Repeat(", ?", len(q.Levels)-1) + ")")
		for _, l := range q.Levels {
			args = append(args, l)
		}
	}
	b.WriteString(" GROUP BY bucket, grp")
	return s.scanCounts(ctx, tx, b.String(), args)
}

func (s *Store) scanCounts(ctx context.Context, tx *sqlx.Tx, query string, args []any) ([]domain.BucketCount, error) {
	rows, err := tx.QueryContext(ctx, s.bind(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []domain.BucketCount
	for rows.Next() {
		var bucket, n int64
		var grp sql.NullString
		if err := rows.Scan(&bucket, &grp, &n); err != nil {
			return nil, err
		}
		if bucket < 0 || bucket > math.MaxInt32 {
			return nil, fmt.Errorf("bucket %d out of range", bucket)
		}
		c := domain.BucketCount{Bucket: int(bucket), N: n}
		if grp.Valid {
			v := grp.String
			c.Value = &v
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
