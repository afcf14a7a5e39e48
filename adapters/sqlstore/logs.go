package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"example.com/obsvc/adapters/sqlstore/migrations"
	"example.com/obsvc/domain"
)

// logColumns is the column order of every bulk insert; writeRows gives an entry's values in it.
// tail_pos is the entry's position in its batch: with the batch's tail_tx (see tail.go) it is
// the entry's place in the live tail's order.
const logColumns = "project_id, time, id, level, message, subject, user_id, attributes, trace_id, span_id, message_fold, tail_pos"

// writeRows executes stmt once per entry with the entry's values in logColumns order, then
// extra (the same for every row); with search, the message's words (migrations.StoredWords) and the
// hashes of the attributes' terms (migrations.AttributeTerms, TermHashes) last, where the engine keeps them in columns
// (PostgreSQL's words and attr_terms). each, when set, runs after each row.
//
// The rows go in key order, (project_id, time, id), each keeping its position in the batch as
// tail_pos: a batch of several projects then lays each project's rows side by side in the table,
// so a read of a project's range touches fewer pages (a day of one project of ten, written in
// batches of all ten: 1,000 entries in 50 heap pages on PostgreSQL, against 2,007 pages for 3,333
// entries written as sent). The indexes are no smaller for it (logs_pkey stays about 100 bytes
// an entry).
func writeRows(ctx context.Context, stmt *sql.Stmt, entries []domain.LogEntry, search bool, each func(domain.LogEntry) error, extra ...any) error {
	args := make([]any, 0, 14+len(extra))
	for _, i := range keyOrder(entries) {
		e := entries[i]
		// Attributes go as text: lib/pq's COPY would write a []byte as bytea, and SQLite would
		// keep it as a BLOB.
		var attrs any
		if e.Attributes != nil {
			attrs = string(e.Attributes)
		}
		args = append(append(args[:0], e.ProjectID, e.Time, e.ID, e.Level, e.Message, e.Subject, e.UserID, attrs, e.TraceID, e.SpanID, foldedMessage(e.Message), i), extra...)
		if search {
			var terms any
			if h := migrations.TermHashes(migrations.AttributeTerms(e.Attributes)); h != nil {
				terms = pq.Array(h)
			}
			args = append(args, migrations.StoredWords(e.Message), terms)
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return err
		}
		if each != nil {
			if err := each(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyOrder is the positions of entries in (project_id, time, id) order.
func keyOrder(entries []domain.LogEntry) []int {
	order := make([]int, len(entries))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		x, y := &entries[a], &entries[b]
		return cmp.Or(strings.Compare(x.ProjectID, y.ProjectID), cmp.Compare(x.Time, y.Time), strings.Compare(x.ID, y.ID))
	})
	return order
}

// existenceChunk bounds the ids of one existence query, well under every engine's parameter limit.
const existenceChunk = 500

// CreateLogs implements domain.LogStore: one transaction, the idempotency record first (so a
// retry finds it or waits for it), the projects checked once per distinct id and their retention
// handed to admit, then the engine's bulk insert, the rollup, and the batch's numbers in its
// projects' ingest order (see numberBatch).
func (s *Store) CreateLogs(ctx context.Context, entries []domain.LogEntry, w domain.LogWrite) (written domain.Written, err error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return domain.Written{}, s.translate("begin", err)
	}
	defer func() {
		if err != nil || written.Prior != nil {
			_ = tx.Rollback() // nothing of this batch may stay; a rollback error adds nothing
		}
	}()
	if w.Record != nil {
		if prior, err := s.claimKey(ctx, tx, w.Record, w.Window); prior != nil || err != nil {
			return domain.Written{Prior: prior}, err
		}
	}
	retentions, err := s.checkProjects(ctx, tx, entries)
	if err != nil {
		return domain.Written{}, err
	}
	if w.Admit != nil {
		if err := w.Admit(retentions); err != nil {
			return domain.Written{}, err
		}
	}
	batch, err := s.tail.clock(ctx, tx)
	if err != nil {
		return domain.Written{}, s.translate("create logs", err)
	}
	if err := s.eng.createLogs(ctx, tx, entries, batch); err != nil {
		return domain.Written{}, s.translate("create logs", err)
	}
	if err := s.addCounts(ctx, tx, countEntries(entries), 1); err != nil {
		return domain.Written{}, s.translate("count logs", err)
	}
	// Last: each project's row of tail_seq stays locked from here to the commit.
	batches, err := s.numberBatch(ctx, tx, entries, batch)
	if err != nil {
		return domain.Written{}, s.translate("number batch", err)
	}
	// Holding those rows, as a registration of an alert query does.
	if err := s.countAlerts(ctx, tx, entries, batches); err != nil {
		return domain.Written{}, s.translate("count alerts", err)
	}
	if err := tx.Commit(); err != nil {
		return domain.Written{}, s.translate("commit logs", err)
	}
	return domain.Written{Batches: batches}, nil
}

// checkProjects answers *domain.MissingProjectsError, naming each missing project once, when any
// entry's project does not exist; else the retention of the projects that have one. Phrasing
// the answer, and bounding it, is the domain's job.
func (s *Store) checkProjects(ctx context.Context, tx *sqlx.Tx, entries []domain.LogEntry) (domain.Retentions, error) {
	seen := make(map[string]bool)
	var ids []string
	for _, e := range entries {
		if _, ok := seen[e.ProjectID]; !ok {
			seen[e.ProjectID] = false
			ids = append(ids, e.ProjectID)
		}
	}
	if err := s.lockProjects(ctx, tx, ids); err != nil {
		return nil, err
	}
	retentions := domain.Retentions{}
	for chunk := range slices.Chunk(ids, existenceChunk) {
		q, args, err := sqlx.In("SELECT id, retention_days FROM projects WHERE id IN (?)"+s.eng.lockSuffix(), chunk)
		if err != nil {
			return nil, fmt.Errorf("build existence query: %w", err)
		}
		var found []struct {
			ID        string        `db:"id"`
			Retention sql.NullInt32 `db:"retention_days"`
		}
		if err := tx.SelectContext(ctx, &found, s.bind(q), args...); err != nil {
			return nil, s.translate("check projects", err)
		}
		for _, p := range found {
			seen[p.ID] = true
			if p.Retention.Valid {
				retentions[p.ID] = int(p.Retention.Int32)
			}
		}
	}
	var missing []string
	for _, id := range ids {
		if !seen[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, &domain.MissingProjectsError{IDs: missing}
	}
	return retentions, nil
}

// projectCondition opens every WHERE clause where renders, with the project id as its first
// argument.
const projectCondition = " WHERE project_id = ?"

// where renders f as a WHERE clause with ? placeholders: every filter of a listing, delete or
// count, in one place, the query language's tree included. It is the same SQL on both engines
// but for q's operator and the leaves of the tree that the engines render (query.go).
func where(e engine, f domain.LogFilter) (string, []any) {
	var b strings.Builder
	args := []any{f.ProjectID}
	b.WriteString(projectCondition)
	if f.UserID != nil {
		b.WriteString(" AND user_id = ?")
		args = append(args, *f.UserID)
	}
	levels := f.Levels
	if f.Level != nil {
		levels = append([]string{*f.Level}, levels...)
	}
	switch len(levels) {
	case 0:
	case 1:
		b.WriteString(" AND level = ?")
		args = append(args, levels[0])
	default:
		b.WriteString(" AND level IN (?" + strings.Repeat(", ?", len(levels)-1) + ")")
		for _, l := range levels {
			args = append(args, l)
		}
	}
	if f.Subject != nil {
		b.WriteString(" AND subject = ?")
		args = append(args, *f.Subject)
	}
	if f.TraceID != nil {
		b.WriteString(" AND trace_id = ?")
		args = append(args, *f.TraceID)
	}
	if f.Q != nil {
		// The folded message (NULL when folding leaves it as it is) against the folded term, a
		// literal substring, with the engine's operator (see containsText): not LIKE, whose
		// backtracking cost every start position the term's length.
		cond, arg := e.containsText("COALESCE(message_fold, "+e.lowerASCII("message")+")", domain.FoldCase(*f.Q))
		b.WriteString(" AND " + cond)
		args = append(args, arg)
	}
	if f.Start != nil {
		b.WriteString(" AND time >= ?")
		args = append(args, *f.Start)
	}
	if f.End != nil {
		b.WriteString(" AND time <= ?")
		args = append(args, *f.End)
	}
	if f.Parsed.Root != nil {
		// The query language's tree (query.go), its values as arguments.
		cond, qargs := renderQuery(e.forProject(f.ProjectID), f.Parsed.Root)
		b.WriteString(" AND " + cond)
		args = append(args, qargs...)
	}
	return b.String(), args
}

// foldedMessage is what message_fold holds for a message: its folded form, or NULL (nil) when
// that is the message with its ASCII capitals lowered, which q then computes (lowerASCII): most
// messages are ASCII, and storing their folded copy cost about 100 bytes an entry. Rows written
// before hold their folded form wherever it differs from the message; both give the same q.
func foldedMessage(m string) any {
	if f := domain.FoldCase(m); f != lowerASCII(m) {
		return f
	}
	return nil
}

// lowerASCII is m with A to Z lowered and every other byte kept, as the engines' lowerASCII.
func lowerASCII(m string) string {
	i := strings.IndexFunc(m, func(r rune) bool { return 'A' <= r && r <= 'Z' })
	if i < 0 {
		return m
	}
	b := []byte(m)
	for j := i; j < len(b); j++ {
		if 'A' <= b[j] && b[j] <= 'Z' {
			b[j] += 'a' - 'A'
		}
	}
	return string(b)
}

// DeleteLogs implements domain.LogStore in one transaction: the delete returns the minute and
// level of each row it removed, and the rollup loses exactly those.
func (s *Store) DeleteLogs(ctx context.Context, f domain.LogFilter) (n int64, err error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return 0, s.translate("begin delete", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback() // nothing of this delete stays; a rollback error adds nothing
		}
	}()
	w, args, err := s.plannedWhere(ctx, f)
	if err != nil {
		return 0, s.translate("delete logs: plan", err)
	}
	n, err = s.deleteCounted(ctx, tx, "DELETE FROM logs"+w, args...)
	if err != nil {
		return 0, s.translate("delete logs", err)
	}
	if n > 0 {
		// The project's alert counts start over: each query is registered and counted again
		// when a rule next counts it. Last before the commit, holding the project's row of
		// tail_seq as a batch does, so no batch adds to counts that are being dropped.
		if err = s.lockAlertCounts(ctx, tx, f.ProjectID); err != nil {
			return 0, s.translate("delete logs: alert counts", err)
		}
		for _, drop := range []string{"DELETE FROM alert_queries WHERE project_id = ?", "DELETE FROM alert_counts WHERE project_id = ?"} {
			if _, err = tx.ExecContext(ctx, s.bind(drop), f.ProjectID); err != nil {
				return 0, s.translate("delete logs: alert counts", err)
			}
		}
	}
	if err = tx.Commit(); err != nil {
		return 0, s.translate("commit delete", err)
	}
	return n, nil
}

// logRow is one row of a listing: the entry plus, on every row, how many rows the page query
// found (at most limit+1) and the key of the page's last row, so that the next-page cursor is
// known before the first entry is streamed, from one statement and one snapshot.
type logRow struct {
	ID        string         `db:"id"`
	ProjectID string         `db:"project_id"`
	Time      int64          `db:"time"`
	Level     string         `db:"level"`
	Message   string         `db:"message"`
	Subject   sql.NullString `db:"subject"`
	UserID    sql.NullString `db:"user_id"`
	// Attributes is NULL (nil) for entries without them; the scan copies the bytes.
	Attributes []byte         `db:"attributes"`
	TraceID    sql.NullString `db:"trace_id"`
	SpanID     sql.NullString `db:"span_id"`
	Found      int            `db:"found"`
	LastTime   sql.NullInt64  `db:"last_time"`
	LastID     sql.NullString `db:"last_id"`
}

// scan reads the current row into r by position, in listQuery's column order: sqlx's StructScan
// looked each column up by name through reflection on every row, about a tenth of a listing's
// CPU.
func (r *logRow) scan(rows *sqlx.Rows) error {
	return rows.Scan(&r.ID, &r.ProjectID, &r.Time, &r.Level, &r.Message, &r.Subject, &r.UserID, &r.Attributes,
		&r.TraceID, &r.SpanID, &r.Found, &r.LastTime, &r.LastID)
}

func (r *logRow) entry() domain.LogEntry {
	e := domain.LogEntry{ID: r.ID, ProjectID: r.ProjectID, Time: r.Time, Level: r.Level, Message: r.Message}
	// Copies: the row is scanned into again for the next entry.
	if r.Subject.Valid {
		subject := r.Subject.String
		e.Subject = &subject
	}
	if r.UserID.Valid {
		userID := r.UserID.String
		e.UserID = &userID
	}
	// The scan gave Attributes bytes of their own (database/sql copies into a []byte), so the
	// entry may keep them.
	e.Attributes = r.Attributes
	if r.TraceID.Valid {
		traceID := r.TraceID.String
		e.TraceID = &traceID
	}
	if r.SpanID.Valid {
		spanID := r.SpanID.String
		e.SpanID = &spanID
	}
	return e
}

// retentionBound keeps the entries a project still holds as of a moment (parameters in textual
// order: now, project id, the floor that stands for "forever", the least id). It reads the
// retention from projects in the statement that uses it, so a change is seen by the next
// statement on every instance; the uncorrelated subquery is evaluated once, and the bound is an
// index condition. It is a row comparison on (time, id), the tail of every index, rather than
// time >= x: PostgreSQL pairs a plain lower bound it cannot estimate with an end_time upper
// bound as a range of 0.5% of the rows, and then prefers sorting a bitmap read of every match
// to reading the index in order.
const retentionBound = " AND (time, id) >= (COALESCE(? - (SELECT CAST(retention_days AS BIGINT) * 86400000 FROM projects WHERE id = ?), ?), ?)"

// retentionFilter is retentionBound as a filter rather than an index condition, for a tree with
// an attribute equality on PostgreSQL: there the bound, whose selectivity the planner cannot
// know, made it AND the bitmap of the equality's candidates in logs_attr_terms with one of the
// project's whole range read from logs_pkey (1,000 candidates, 100,000 entries of the range:
// 30 ms at 1,000,000 entries, against 2.5 ms from the candidates alone). As a filter it drops
// only what the retention sweep has not removed yet.
const retentionFilter = " AND (time + 0, id) >= (COALESCE(? - (SELECT CAST(retention_days AS BIGINT) * 86400000 FROM projects WHERE id = ?), ?), ?)"

// hasAttributeEquality says whether the tree holds an attribute equality (not a prefix), which
// logs_attr_terms serves.
func hasAttributeEquality(n domain.QueryNode) bool {
	switch n := n.(type) {
	case domain.QueryAnd:
		return slices.ContainsFunc(n.Terms, hasAttributeEquality)
	case domain.QueryOr:
		return slices.ContainsFunc(n.Terms, hasAttributeEquality)
	case domain.QueryNot:
		return hasAttributeEquality(n.Term)
	case domain.QueryEquals:
		return n.Field.Attribute && !n.Prefix
	}
	return false
}

// projectExists tells an empty page of a project from a project that does not exist.
const projectExists = "SELECT 1 FROM projects WHERE id = ?"

// leastID sorts before every id the service issues, in text (SQLite) and as a uuid (PostgreSQL).
const leastID = "00000000-0000-0000-0000-000000000000"

// listQuery renders one page of q (its columns in logRow.scan's order) read from table (see
// listStatement). The inner query reads at most limit+1 rows in index order; the window
// functions add the count and the key of row number limit to every row. Entries older than the
// project's retention at q.Now are not read at all.
func listQuery(e engine, q domain.LogQuery, table string) (string, []any) {
	w, args := where(e, q.LogFilter)
	dir, cmp := "ASC", ">"
	if q.Desc {
		dir, cmp = "DESC", "<"
	}
	if q.After != nil {
		// The cursor goes first among the conditions on time: when several bound the same
		// index column on the side the scan starts from, PostgreSQL's B-tree starts the scan at
		// the first of them and only checks the others on each entry it reads. After the
		// retention bound (or start_time), an oldest-first next page read the index from that
		// bound up to the cursor, every entry of the pages before it: a deep page cost in
		// proportion to its depth (1,108 buffers for 1,000 rows 150,000 rows in, against 36
		// with the cursor first).
		w = strings.Replace(w, projectCondition, projectCondition+" AND (time, id) "+cmp+" (?, ?)", 1)
		args = append([]any{args[0], q.After.Time, q.After.ID}, args[1:]...)
	}
	switch _, pg := e.(postgresEngine); {
	case pg && hasAttributeEquality(q.Parsed.Root):
		w += retentionFilter
		args = append(args, q.Now, q.ProjectID, int64(math.MinInt64), leastID)
	case q.Start != nil:
		// The later of start_time and the retention as one bound: PostgreSQL's B-tree starts
		// an oldest-first scan at a row comparison on (time, id) rather than at a plain lower
		// bound on time beside it, so with start_time apart the scan began at the retention
		// (or the project's oldest entry) and read up to start_time: 220 buffers for a page
		// from an hour ago in 30 days of 30,000 entries, against a few with one bound.
		w += " AND (time, id) >= (" + e.greatest("COALESCE(? - (SELECT CAST(retention_days AS BIGINT) * 86400000 FROM projects WHERE id = ?), ?)", "?") + ", ?)"
		args = append(args, q.Now, q.ProjectID, int64(math.MinInt64), *q.Start, leastID)
	default:
		w += retentionBound
		args = append(args, q.Now, q.ProjectID, int64(math.MinInt64), leastID)
	}
	order := " ORDER BY time " + dir + ", id " + dir
	// Placeholders in textual order: the two nth_value positions, the filter, the inner limit.
	args = append(append([]any{q.Limit, q.Limit}, args...), q.Limit+1)
	return "SELECT id, project_id, time, level, message, subject, user_id, attributes, trace_id, span_id," +
		" count(*) OVER win AS found," +
		" nth_value(time, ?) OVER win AS last_time, nth_value(id, ?) OVER win AS last_id" +
		" FROM (SELECT id, project_id, time, level, message, subject, user_id, attributes, trace_id, span_id FROM " + table + w + order + " LIMIT ?) page" +
		" WINDOW win AS (" + order + " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)" +
		order, args
}

// listStatement is the statement of one page of q, bound for the engine, and its arguments:
// listQuery over logs, or, on SQLite, over the rows of a rare term of q (logs NOT INDEXED,
// see sqlitePlan) or over the index of a field filter (listTable).
func (s *Store) listStatement(ctx context.Context, q domain.LogQuery) (string, []any, error) {
	eng, first, err := s.sqlitePlan(ctx, q.Parsed.Root)
	if err != nil {
		return "", nil, err
	}
	table := eng.listTable(q.LogFilter)
	if first {
		table = "logs NOT INDEXED"
	}
	query, args := listQuery(eng, q, table)
	return s.bind(query), args, nil
}

// listing returns the prepared statement of a listing query, preparing it once.
func (s *Store) listing(ctx context.Context, query string) (*sqlx.Stmt, error) {
	if v, ok := s.listings.Load(query); ok {
		return v.(*sqlx.Stmt), nil
	}
	stmt, err := s.r.PreparexContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if v, loaded := s.listings.LoadOrStore(query, stmt); loaded {
		_ = stmt.Close() // another request prepared it first
		return v.(*sqlx.Stmt), nil
	}
	return stmt, nil
}

// queryRows runs a listing or tail read: prepared once and kept in the listings' cache when
// cached, that is when its text is one of the bounded set of shapes the filters make; sent
// unprepared when a tree of the query language shapes it, since the texts of trees are
// unbounded (a cache of them would grow with every new query a client sends).
func (s *Store) queryRows(ctx context.Context, query string, cached bool, args ...any) (*sqlx.Rows, error) {
	if !cached {
		return s.r.QueryxContext(ctx, query, args...)
	}
	stmt, err := s.listing(ctx, query)
	if err != nil {
		return nil, err
	}
	return stmt.QueryxContext(ctx, args...)
}

// ListLogs implements domain.LogStore. The rows are scanned and handed on one at a time; nothing
// holds a whole page in memory.
func (s *Store) ListLogs(ctx context.Context, q domain.LogQuery, fn domain.PageFunc) error {
	query, args, err := s.listStatement(ctx, q)
	if err != nil {
		return s.translate("list logs: plan", err)
	}
	rows, err := s.queryRows(ctx, query, q.Parsed.Root == nil, args...)
	if err != nil {
		return s.translate("list logs", err)
	}
	defer rows.Close()

	var row logRow
	hasFirst := rows.Next()
	if hasFirst {
		if err := row.scan(rows); err != nil {
			return s.translate("list logs", err)
		}
	} else if err := rows.Err(); err != nil {
		return s.translate("list logs", err)
	} else {
		// An empty page: only now is it worth a round trip to tell "no project" from "no entries".
		_ = rows.Close()
		var one int
		err := s.r.GetContext(ctx, &one, s.bind(projectExists), q.ProjectID)
		if err != nil {
			return s.translate("list logs: project", err)
		}
	}
	var page domain.Page
	if hasFirst && row.Found > q.Limit && row.LastTime.Valid && row.LastID.Valid {
		page.Next = &domain.Cursor{Time: row.LastTime.Int64, ID: row.LastID.String, Desc: q.Desc}
	}
	page.Entries = func(yield func(domain.LogEntry, error) bool) {
		if !hasFirst {
			return
		}
		for n := 1; ; n++ {
			if !yield(row.entry(), nil) || n == q.Limit {
				return
			}
			if !rows.Next() {
				if err := rows.Err(); err != nil {
					yield(domain.LogEntry{}, s.translate("list logs", err))
				}
				return
			}
			if err := row.scan(rows); err != nil {
				yield(domain.LogEntry{}, s.translate("list logs", err))
				return
			}
		}
	}
	return fn(page)
}

// The statements of SweepLogs. Every condition names project_id, so a table distributed by it
// sweeps on one shard. The batch is a range of the primary key (project_id, time, id), from the
// oldest entry up to its limit-th expired one: deleting "the keys IN (the oldest limit keys)"
// instead let PostgreSQL plan a hash join over a scan of the whole project, once per batch.
const (
	// projectRetention is a project's retention_days (alert counting reads it too).
	projectRetention = "SELECT retention_days FROM projects WHERE id = ?"
	sweepBound       = "SELECT time, id FROM logs WHERE project_id = ? AND time < ? ORDER BY time, id LIMIT 1 OFFSET ?"
	sweepUpTo        = "DELETE FROM logs WHERE project_id = ? AND time <= ? AND (time, id) <= (?, ?)"
	sweepAll         = "DELETE FROM logs WHERE project_id = ? AND time < ?"
)

// SingleWriter says whether every write of the store queues for one lock, as on SQLite, where
// a sweep transaction holds back all ingest while it runs; on PostgreSQL a sweep and inserts
// of other rows run side by side. The service paces its sweep by it.
func (s *Store) SingleWriter() bool { return s.eng.singleWriter() }

// SweepLogs implements domain.LogStore: one bounded transaction, under the engine's sweep lock.
// The project's row is read with the engine's lock suffix, so a retention change waits for the
// batch instead of committing between reading the retention and deleting by it.
func (s *Store) SweepLogs(ctx context.Context, projectID string, now int64, limit int) (n int64, err error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return 0, s.translate("begin sweep", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback() // nothing of this batch stays; a rollback error adds nothing
		}
	}()
	ok, err := s.eng.trySweepLock(ctx, tx)
	if err != nil {
		return 0, s.translate("sweep lock", err)
	}
	if !ok {
		return 0, domain.ErrSweepBusy
	}
	if err := s.lockProjects(ctx, tx, []string{projectID}); err != nil {
		return 0, err
	}
	var days sql.NullInt64
	err = tx.GetContext(ctx, &days, s.bind(projectRetention+s.eng.lockSuffix()), projectID)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, s.translate("sweep: read retention", err)
	}
	if days.Valid && limit > 0 {
		cutoff := now - days.Int64*86_400_000
		var bound struct {
			Time int64  `db:"time"`
			ID   string `db:"id"`
		}
		// Each delete takes its entries out of the stats rollup in the same transaction.
		switch err = tx.GetContext(ctx, &bound, s.bind(sweepBound), projectID, cutoff, limit-1); {
		case errors.Is(err, sql.ErrNoRows): // fewer than limit expired: all of them
			n, err = s.deleteCounted(ctx, tx, sweepAll, projectID, cutoff)
		case err == nil:
			// The bound is expired, so time <= bound.Time implies the cutoff; said as a plain
			// column bound it also ends SQLite's index range, which a row value alone does not.
			n, err = s.deleteCounted(ctx, tx, sweepUpTo, projectID, bound.Time, bound.Time, bound.ID)
		}
		if err != nil {
			return 0, s.translate("sweep logs", err)
		}
	}
	if err = tx.Commit(); err != nil {
		return 0, s.translate("commit sweep", err)
	}
	return n, nil
}
