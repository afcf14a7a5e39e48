package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"

	"example.com/obsvc/domain"
)

// entryColumns are the columns of an entry, in scanEntry's order.
const entryColumns = "id, project_id, time, level, message, subject, user_id, attributes, trace_id, span_id"

// contextEntry finds the anchor of a context: the project's entry with the id, unless the
// project's retention has expired it (the bound of a listing, retentionBound). There is no index
// on the id alone: the primary key (project_id, time, id) is read over the project's range,
// index only on PostgreSQL, and the id compared in the index.
const contextEntry = "SELECT " + entryColumns + " FROM logs WHERE project_id = ? AND id = ?" + retentionBound

// contextArgs are the arguments of contextEntry.
func contextArgs(q domain.ContextQuery) []any {
	return []any{q.ProjectID, q.ID, q.Now, q.ProjectID, int64(math.MinInt64), leastID}
}

// contextNear is contextEntry within a range of time, where the anchor is looked for first: the
// service makes an entry's id a UUIDv7 as it takes the entry in, so the id holds the moment of
// ingest, and an entry's own time is nearly always at most a day before it (a shipper's buffer,
// a backfill of the day) and not much after it (clocks). Found there, the anchor costs a read of
// that range of the key rather than of the project's whole range (12 buffers against 219 in 30
// days of 30,000 entries); not found there, LogContext reads the whole. The retention is a filter
// here (retentionFilter): as an index condition, a row comparison on (time, id), PostgreSQL's
// B-tree would start the scan at it rather than at the range's start.
const contextNear = "SELECT " + entryColumns + " FROM logs WHERE project_id = ? AND time >= ? AND time <= ? AND id = ?" + retentionFilter

// The range of contextNear around an id's moment of ingest.
const (
	contextNearBefore = 24 * 3600_000
	contextNearAfter  = 3600_000
)

// contextNearArgs are the arguments of contextNear for an id of moment ms.
func contextNearArgs(q domain.ContextQuery, ms int64) []any {
	return []any{q.ProjectID, ms - contextNearBefore, ms + contextNearAfter, q.ID, q.Now, q.ProjectID, int64(math.MinInt64), leastID}
}

// uuidv7Time is the Unix millisecond a UUIDv7's first 48 bits hold; false for any other text.
func uuidv7Time(id string) (int64, bool) {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[14] != '7' {
		return 0, false
	}
	ms, err := strconv.ParseUint(id[:8]+id[9:13], 16, 64)
	if err != nil {
		return 0, false
	}
	return int64(ms), true
}

// contextSide renders one side of a context: the n entries matching q's neighbour filter right
// before (before) or right after the anchor at (t, id), oldest first. Each is one keyset read
// of the (project_id, time, id) order from the anchor, as a listing's next page is (the anchor
// first among the conditions on time, see listQuery), LIMIT n; the side before reads
// backwards and is put back in order by an outer sort of its n rows.
func contextSide(e engine, q domain.ContextQuery, t int64, id string, before bool, n int) (string, []any) {
	w, args := where(e, q.Neighbours())
	cmp, dir := ">", "ASC"
	if before {
		cmp, dir = "<", "DESC"
	}
	w = strings.Replace(w, projectCondition, projectCondition+" AND (time, id) "+cmp+" (?, ?)", 1)
	args = append([]any{args[0], t, id}, args[1:]...)
	w += retentionBound
	args = append(args, q.Now, q.ProjectID, int64(math.MinInt64), leastID, n)
	query := "SELECT " + entryColumns + " FROM logs" + w + " ORDER BY time " + dir + ", id " + dir + " LIMIT ?"
	if before {
		query = "SELECT " + entryColumns + " FROM (" + query + ") side ORDER BY time, id"
	}
	return query, args
}

// scanEntry reads the current row, in entryColumns' order, into r.
func (r *logRow) scanEntry(rows interface{ Scan(...any) error }) error {
	return rows.Scan(&r.ID, &r.ProjectID, &r.Time, &r.Level, &r.Message, &r.Subject, &r.UserID, &r.Attributes,
		&r.TraceID, &r.SpanID)
}

// LogContext implements domain.LogStore: the anchor by one statement, then each side by its
// own, read only when fn ranges over it and streamed row by row. The three statements are not
// one snapshot: an entry committed between them may show on a side.
func (s *Store) LogContext(ctx context.Context, q domain.ContextQuery, fn domain.ContextFunc) error {
	var anchor logRow
	err := sql.ErrNoRows
	if ms, ok := uuidv7Time(q.ID); ok {
		err = anchor.scanEntry(s.r.QueryRowxContext(ctx, s.bind(contextNear), contextNearArgs(q, ms)...))
	}
	if errors.Is(err, sql.ErrNoRows) {
		err = anchor.scanEntry(s.r.QueryRowxContext(ctx, s.bind(contextEntry), contextArgs(q)...))
	}
	if errors.Is(err, sql.ErrNoRows) {
		return domain.Errorf(domain.KindNotFound, "no entry %s", domain.Brief(q.ID))
	}
	if err != nil {
		return s.translate("log context: entry", err)
	}
	e := anchor.entry()
	side := func(before bool, n int) func(yield func(domain.LogEntry, error) bool) {
		return func(yield func(domain.LogEntry, error) bool) {
			if n == 0 {
				return
			}
			query, args := contextSide(s.eng, q, e.Time, e.ID, before, n)
			rows, err := s.queryRows(ctx, s.bind(query), q.Parsed.Root == nil, args...)
			if err != nil {
				yield(domain.LogEntry{}, s.translate("log context", err))
				return
			}
			defer rows.Close()
			s.streamEntries(rows, yield)
		}
	}
	return fn(domain.LogContext{Entry: e, Before: side(true, *q.Before), After: side(false, *q.After)})
}

// streamEntries hands yield each row of rows as an entry, one at a time, then the rows' error
// if any.
func (s *Store) streamEntries(rows *sqlx.Rows, yield func(domain.LogEntry, error) bool) {
	var row logRow
	for rows.Next() {
		if err := row.scanEntry(rows); err != nil {
			yield(domain.LogEntry{}, s.translate("log context", err))
			return
		}
		if !yield(row.entry(), nil) {
			return
		}
	}
	if err := rows.Err(); err != nil {
		yield(domain.LogEntry{}, s.translate("log context", err))
	}
}
