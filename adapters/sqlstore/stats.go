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

	"example.com/obsvc/adapters/sqlstore/migrations"
	"example.com/obsvc/domain"
)

// minuteMs is the width of one count of the rollup: a minute.
const minuteMs = 60_000

// floorMinute is the start of the minute holding t (Unix ms), for negative t too.
func floorMinute(t int64) int64 {
	return t - ((t%minuteMs)+minuteMs)%minuteMs
}

// hourMs is the width of one row of the rollup, log_counts_hour.
const hourMs = 3_600_000

// floorHour is the start of the hour holding t (Unix ms), for negative t too.
func floorHour(t int64) int64 {
	return t - ((t%hourMs)+hourMs)%hourMs
}

// countKey is one count of the rollup: entries of a project and level in a minute (the
// minute's start), or, as the key of a row of log_counts_hour, in an hour (the hour's start).
type countKey struct {
	project string
	minute  int64
	level   string
}

// countEntries tallies entries by minute.
func countEntries(entries []domain.LogEntry) map[countKey]int64 {
	c := make(map[countKey]int64)
	for _, e := range entries {
		c[countKey{e.ProjectID, floorMinute(e.Time), e.Level}]++
	}
	return c
}

// hourCounts is what one row of log_counts_hour counts: the hour's entries, n, and those of
// each of its minutes (migration 00018).
type hourCounts struct {
	n       int64
	minutes [migrations.MinutesPerHour]int64
}

// minuteColumnsOf lists the minute columns of log_counts_hour aliased table, in order:
// "table.m0, table.m1, ...".
func minuteColumnsOf(table string) string {
	cols := migrations.MinuteColumns()
	for i, c := range cols {
		cols[i] = table + "." + c
	}
	return strings.Join(cols, ", ")
}

// rollupRows are the statements that add to (or take from) rows of log_counts_hour, bound for
// the engine: upsert(n) adds n and each minute's count to n rows (upsertRows at most), writing
// those missing, with the row's key, n and minutes as the parameters of each row of VALUES;
// take takes them from one row (parameters: n and the minutes, then the key); drop removes a
// row that counts nothing any more (the key). A store renders them once (Store.rollup).
type rollupRows struct {
	upsert     func(n int) string
	take, drop string
}

// rollupParams is how many parameters a row of log_counts_hour takes: its key, n, the minutes.
const rollupParams = 4 + migrations.MinutesPerHour

// upsertRows is how many rows one upsert of the rollup writes at most: 12,800 parameters,
// below either engine's limit.
const upsertRows = 200

// newRollupRows renders the rollup's statements, bound by bind.
func newRollupRows(bind func(string) string) rollupRows {
	cols := migrations.MinuteColumns()
	marks := "(?" + strings.Repeat(", ?", rollupParams-1) + ")"
	add := make([]string, len(cols))
	take := make([]string, len(cols))
	for i, c := range cols {
		add[i] = c + " = log_counts_hour." + c + " + excluded." + c
		take[i] = c + " = " + c + " - ?"
	}
	key := "project_id = ? AND hour = ? AND level = ?"
	head := "INSERT INTO log_counts_hour (project_id, hour, level, n, " + strings.Join(cols, ", ") + ") VALUES " + marks
	tail := " ON CONFLICT (project_id, hour, level) DO UPDATE SET n = log_counts_hour.n + excluded.n, " + strings.Join(add, ", ")
	return rollupRows{
		upsert: func(n int) string { return bind(head + strings.Repeat(", "+marks, n-1) + tail) },
		take:   bind("UPDATE log_counts_hour SET n = n - ?, " + strings.Join(take, ", ") + " WHERE " + key),
		drop:   bind("DELETE FROM log_counts_hour WHERE " + key + " AND n <= 0"),
	}
}

// addCounts adds (sign > 0) or takes away (sign < 0) the tallies of minutes in the rollup inside
// tx: each hour's row of log_counts_hour, its n and its minutes in one write. Rows are written in
// key order, so that two transactions touching the same rows lock them in the same order (no
// deadlock); rows that fall to zero are removed.
func (s *Store) addCounts(ctx context.Context, tx *sqlx.Tx, counts map[countKey]int64, sign int64) error {
	if len(counts) == 0 {
		return nil
	}
	hours := make(map[countKey]*hourCounts, len(counts))
	for k, n := range counts {
		hk := countKey{k.project, floorHour(k.minute), k.level}
		h := hours[hk]
		if h == nil {
			h = &hourCounts{}
			hours[hk] = h
		}
		h.n += n
		h.minutes[(k.minute-hk.minute)/minuteMs] += n
	}
	keys := make([]countKey, 0, len(hours))
	for k := range hours {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b countKey) int {
		return cmp.Or(strings.Compare(a.project, b.project), cmp.Compare(a.minute, b.minute), strings.Compare(a.level, b.level))
	})
	if sign > 0 {
		// One statement per project and upsertRows rows (one round trip, not one per row;
		// one project's rows, so one shard on Citus); rows are written, and locked, in the
		// order of VALUES.
		for len(keys) > 0 {
			end := 1
			for end < len(keys) && end < upsertRows && keys[end].project == keys[0].project {
				end++
			}
			chunk := keys[:end]
			keys = keys[end:]
			args := make([]any, 0, rollupParams*len(chunk))
			for _, k := range chunk {
				h := hours[k]
				args = append(args, k.project, k.minute, k.level, h.n)
				for _, m := range h.minutes {
					args = append(args, m)
				}
			}
			if _, err := tx.ExecContext(ctx, s.rollup.upsert(len(chunk)), args...); err != nil {
				return err
			}
		}
		return nil
	}
	take, err := tx.PrepareContext(ctx, s.rollup.take)
	if err != nil {
		return err
	}
	defer take.Close()
	for _, k := range keys {
		h := hours[k]
		args := make([]any, 0, rollupParams)
		args = append(args, h.n)
		for _, m := range h.minutes {
			args = append(args, m)
		}
		if _, err := take.ExecContext(ctx, append(args, k.project, k.minute, k.level)...); err != nil {
			return err
		}
	}
	// Only rows this transaction already holds: sweeping the project's zero rows at large
	// could wait on a concurrent batch that waits on this transaction.
	drop, err := tx.PrepareContext(ctx, s.rollup.drop)
	if err != nil {
		return err
	}
	defer drop.Close()
	for _, k := range keys {
		if _, err := drop.ExecContext(ctx, k.project, k.minute, k.level); err != nil {
			return err
		}
	}
	return nil
}

// deleteCounted runs a DELETE of logs inside tx, takes the minute and level of every row it
// removes (RETURNING, so exactly the rows removed, whatever commits beside it) and takes them
// off the rollup in the same transaction. It says how many rows it removed.
func (s *Store) deleteCounted(ctx context.Context, tx *sqlx.Tx, del string, args ...any) (int64, error) {
	rows, err := tx.QueryContext(ctx, s.bind(del+" RETURNING project_id, time, level"), args...)
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
	return n, s.addCounts(ctx, tx, counts, -1)
}

// rollupAnswers says whether the rollup can count q: a filter of project, time and levels only,
// grouped by level or not at all, buckets that are whole minutes starting on a minute.
func rollupAnswers(q domain.StatsQuery) bool {
	f := q.LogFilter
	return f.UserID == nil && f.Subject == nil && f.TraceID == nil && f.Q == nil && f.Level == nil && f.Parsed.Root == nil &&
		q.By != domain.BySubject && q.Step%minuteMs == 0 && floorMinute(*q.Start) == *q.Start
}

// statsCut is the head of every stats statement: the CTE cut, one row when the project exists
// (none otherwise) holding lo, the first millisecond counted: start_time, or the project's
// retention boundary at q.Now when that is later. Placeholders: start, start, now, start,
// project. Reading the retention in the statement that counts makes the two one snapshot on
// both engines, with no transaction.
const statsCut = "WITH cut AS (SELECT CASE WHEN c > ? THEN c ELSE ? END AS lo FROM" +
	" (SELECT COALESCE(? - CAST(retention_days AS BIGINT) * 86400000, ?) AS c FROM projects WHERE id = ?) r)"

// statsCutArgs are statsCut's placeholders for a count from start in project at now.
func statsCutArgs(start, now int64, project string) []any {
	return []any{start, start, now, start, project}
}

// statsBounds adds to statsCut the CTE bounds: lo again; a, the first whole minute at or after
// lo; h, the first whole hour at or after a, or a itself when that is at or after B (the
// placeholder: the end of the whole hours the statement may read as whole hours); and ah, the
// start of a's hour, or the least int64 where that would be less (the placeholders: the least
// whole hour of int64, the least int64). Only the rollup's statement computes them: there
// start_time is a whole minute, so a is start_time or lies a minute from the retention
// boundary, h is computed only below B, and ah only from the least whole hour, so none
// overflows.
const statsBounds = statsCut + ", minutes AS (SELECT lo," +
	" CASE WHEN lo % 60000 = 0 THEN lo ELSE lo - ((lo % 60000) + 60000) % 60000 + 60000 END AS a FROM cut)," +
	" bounds AS (SELECT lo, a, CASE WHEN a % 3600000 = 0 OR a >= ? THEN a" +
	" ELSE a - ((a % 3600000) + 3600000) % 3600000 + 3600000 END AS h," +
	" CASE WHEN a < ? THEN ? ELSE a - ((a % 3600000) + 3600000) % 3600000 END AS ah FROM minutes)"

// leastHour is the least whole hour an int64 of Unix ms holds.
const leastHour = -(math.MaxInt64 / hourMs) * hourMs

// statsFound is the last part of every stats statement: one row of bucket -1 when the project
// exists, so that an empty answer and an unknown project are told apart by the same statement.
const statsFound = " UNION ALL SELECT -1, CAST(NULL AS TEXT), 0, 0 FROM cut"

// LogStats implements domain.LogStore in one statement, which is its own snapshot on both
// engines: the project's retention, then the counts. When the rollup can answer q, the whole
// minutes from start_time (or the retention boundary) to end_time are summed from it (the
// whole hours from log_counts_hour's n when the buckets are whole hours from a whole hour, the
// rest from its minute columns), and the cut minutes at either end are counted from the
// entries, every level answered (a few; the service keeps the top q.Series); otherwise every
// count comes from the entries, ranked in the statement (statsTop). The rollup's statement
// shapes are few (by, number of levels: at most 34) and are prepared once in the listings'
// cache, so the dashboard question is one round trip; the others, whose plans depend on their
// values, are planned each time.
func (s *Store) LogStats(ctx context.Context, q domain.StatsQuery) ([]domain.BucketCount, error) {
	start, hi := *q.Start, *q.End
	head := statsCutArgs(start, q.Now, q.ProjectID)
	if !rollupAnswers(q) || (q.By != domain.ByLevel && q.By != domain.ByNone) {
		f := q.LogFilter
		f.Start, f.End = nil, &hi // lo, the later of start and the retention, is added below
		w, args, err := s.plannedWhere(ctx, f)
		if err != nil {
			return nil, s.translate("stats: plan", err)
		}
		group, groupArgs := s.groupColumn(q.By)
		query := statsCut + ", counts AS (SELECT (time - ?) / ? AS bucket, " + group + " AS grp, count(*) AS n FROM logs" +
			w + " AND time >= (SELECT lo FROM cut) GROUP BY bucket, grp)" + s.statsTop() + statsFound
		args = append(append(append(append(head, start, q.Step), groupArgs...), args...), topArgs(q)...)
		rows, err := s.r.QueryContext(ctx, s.bind(query), args...)
		return s.scanStats(rows, err)
	}
	query, args := s.rollupStatsSQL(q)
	stmt, err := s.listing(ctx, s.bind(query))
	if err != nil {
		return nil, s.translate("stats", err)
	}
	rows, err := stmt.QueryContext(ctx, args...)
	return s.scanStats(rows, err)
}

// rollupStatsSQL is LogStats' statement when the rollup answers q (rollupAnswers, by level or
// none), before binding, and its arguments.
func (s *Store) rollupStatsSQL(q domain.StatsQuery) (string, []any) {
	start, hi := *q.Start, *q.End
	head := statsCutArgs(start, q.Now, q.ProjectID)
	// The rollup counts the whole minutes [a, b), a from the statement: the whole hours [h, B)
	// of them from log_counts_hour's n when the buckets are whole hours from a whole hour, the
	// minutes [a, h) and [B, b) from its minute columns (when h >= B, all of [a, b), and [a,
	// ah), empty, no row read, in place of [a, h)). The entries count [lo, a) and [b, hi]; when
	// a >= b the two entry ranges are [lo, min(a-1, hi)] and [a, hi]: all of [lo, hi] once, and
	// the rollup's ranges are empty. Each range has one lower and one upper bound, so both
	// engines read it as one index range.
	b := floorMinute(hi)
	if hi-b == minuteMs-1 {
		b = hi + 1
	}
	hourB := int64(math.MinInt64) // no hours: h >= B
	if q.Step%hourMs == 0 && floorHour(start) == start {
		hourB = floorHour(b)
	}
	g := "level"
	if q.By == domain.ByNone {
		g = "CAST(NULL AS TEXT)"
	}
	levels := ""
	var levelArgs []any
	if len(q.Levels) > 0 {
		levels = " AND level IN (?" + strings.Repeat(", ?", len(q.Levels)-1) + ")"
		for _, l := range q.Levels {
			levelArgs = append(levelArgs, l)
		}
	}
	// part counts table's rows (n, or 1 for each entry) with column >= from and column upto.
	part := func(table, column, n, from, upto string) string {
		return " SELECT (" + column + " - ?) / ? AS bucket, " + g + " AS grp, " + n + " AS n, 0 AS other FROM " + table +
			" WHERE project_id = ?" + levels + " AND " + column + " >= " + from + " AND " + column + " " + upto + " GROUP BY bucket, grp"
	}
	// minutesPart counts the minutes [from, upto) of the rows of log_counts_hour from the hour
	// hourFrom (from's hour or earlier): each row's minutes one row each (s.eng.minuteCounts),
	// those of a count other than 0. A minute is its hour plus its offset computed only for a
	// count other than 0, so that the hours at the end of int64's range do not overflow.
	join, index, count := s.eng.minuteCounts("c")
	minute := "c.hour + CASE WHEN " + count + " <> 0 THEN " + index + " * 60000 ELSE 0 END"
	minutesPart := func(hourFrom, from, upto string) string {
		return " SELECT (" + minute + " - ?) / ? AS bucket, " + g + " AS grp, SUM(" + count + ") AS n, 0 AS other FROM log_counts_hour c" + join +
			" WHERE c.project_id = ?" + levels + " AND c.hour >= " + hourFrom + " AND c.hour < " + upto + " AND " + count + " <> 0" +
			" AND " + minute + " >= " + from + " AND " + minute + " < " + upto + " GROUP BY bucket, grp"
	}
	query := statsBounds +
		part("log_counts_hour", "hour", "SUM(n)", "(SELECT h FROM bounds)", "< ?") + " UNION ALL" +
		minutesPart("(SELECT ah FROM bounds)", "(SELECT a FROM bounds)", "(SELECT CASE WHEN h < ? THEN h ELSE ah END FROM bounds)") + " UNION ALL" +
		minutesPart("(SELECT CASE WHEN h < ? THEN ? ELSE ah END FROM bounds)", "(SELECT CASE WHEN h < ? THEN ? ELSE a END FROM bounds)", "?") + " UNION ALL" +
		part("logs", "time", "count(*)", "(SELECT lo FROM bounds)", "<= (SELECT CASE WHEN a - 1 < ? THEN a - 1 ELSE ? END FROM bounds)") + " UNION ALL" +
		part("logs", "time", "count(*)", "(SELECT CASE WHEN a > ? THEN a ELSE ? END FROM bounds)", "<= ?") +
		statsFound
	args := append(head, hourB, int64(leastHour), int64(math.MinInt64)) // bounds: h >= B when a >= B; ah
	for _, bound := range [][]any{{hourB}, {hourB, hourB}, {hourB, hourB, b, hourB, hourB, b}, {hi, hi}, {b, b, hi}} {
		args = append(append(append(args, start, q.Step, q.ProjectID), levelArgs...), bound...)
	}
	return query, args
}

// groupColumn is the expression a stats statement groups by, and its arguments: a column, a
// constant for none, or an attribute's value as the JSON text stored, NULL when the entry lacks
// the key (engine.attributeText: the key is an argument, never part of the statement's text).
func (s *Store) groupColumn(by string) (string, []any) {
	if key, ok := strings.CutPrefix(by, domain.ByAttributePrefix); ok {
		return s.eng.attributeText("logs.attributes"), []any{key}
	}
	switch by {
	case domain.BySubject, domain.ByUserID, domain.ByTraceID, domain.BySpanID:
		return by, nil
	case domain.ByNone:
		return "CAST(NULL AS TEXT)", nil
	}
	return "level", nil
}

// statsTop is the tail of an entries' stats statement after the CTE counts (bucket, grp, n): the
// rows of the first ? groups ranked by total (largest first, then NULL, then by value, bytewise
// on both engines), and the sum per bucket of every other group as rows of other = 1, so that
// the answer is exact and holds at most ? + 1 groups however many the range has. Placeholders:
// the number of groups kept, twice.
func (s *Store) statsTop() string {
	bytewise := s.eng.bytewise()
	return ", totals AS (SELECT bucket, grp, n, SUM(n) OVER (PARTITION BY grp) AS total FROM counts)" +
		", ranked AS (SELECT bucket, grp, n, DENSE_RANK() OVER (ORDER BY total DESC, CASE WHEN grp IS NULL THEN 0 ELSE 1 END, grp" + bytewise + ") AS rk FROM totals)" +
		" SELECT bucket, grp, n, 0 AS other FROM ranked WHERE rk <= ?" +
		" UNION ALL SELECT bucket, CAST(NULL AS TEXT), SUM(n), 1 FROM ranked WHERE rk > ? GROUP BY bucket"
}

// topArgs are statsTop's placeholders for q: its Series, or every group when zero.
func topArgs(q domain.StatsQuery) []any {
	n := int64(q.Series)
	if n <= 0 {
		n = math.MaxInt64
	}
	return []any{n, n}
}

// scanStats reads the answer of a stats statement: counts per bucket and group (or of the other
// groups), and the row of bucket -1 that says the project exists (KindNotFound without it).
func (s *Store) scanStats(rows *sql.Rows, err error) ([]domain.BucketCount, error) {
	if err != nil {
		return nil, s.translate("stats", err)
	}
	defer rows.Close()
	var out []domain.BucketCount
	found := false
	for rows.Next() {
		var bucket, n, other int64
		var grp sql.NullString
		if err := rows.Scan(&bucket, &grp, &n, &other); err != nil {
			return nil, s.translate("stats", err)
		}
		if bucket == -1 {
			found = true
			continue
		}
		if bucket < 0 || bucket > math.MaxInt32 {
			return nil, fmt.Errorf("stats: bucket %d out of range", bucket)
		}
		c := domain.BucketCount{Bucket: int(bucket), N: n, Other: other != 0}
		if grp.Valid && !c.Other {
			v := grp.String
			c.Value = &v
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate("stats", err)
	}
	if !found {
		return nil, s.translate("stats: project", sql.ErrNoRows)
	}
	return out, nil
}

// fourTupleRows is how many rows of four parameters one statement writes at most (a rollup's,
// alert counts', alert leases'): 2,000 parameters, far below either engine's limit.
const fourTupleRows = 500

// fourTuples is the VALUES list of n rows of four parameters each: "(?, ?, ?, ?), ...".
func fourTuples(n int) string {
	return "(?, ?, ?, ?)" + strings.Repeat(", (?, ?, ?, ?)", n-1)
}
