// Package sqlstore implements the domain's storage ports on SQL databases with sqlx: an embedded
// SQLite store (the zero-set-up default) and a PostgreSQL store. Both share the queries that are
// truly the same and differ where the engines do (DDL, bulk insert, error codes, time columns).
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"example.com/obsvc/domain"
)

// engine is what differs between the SQL engines.
type engine interface {
	// timeArg converts a timestamp to what the engine's time columns store.
	timeArg(t time.Time) any
	// insertLogs writes entries inside tx as fast as the engine allows.
	insertLogs(ctx context.Context, tx *sqlx.Tx, entries []domain.LogEntry) error
	// lockSuffix is appended to the project existence check of a batch so that no project can
	// be deleted between that check and the insert.
	lockSuffix() string
	isForeignKeyViolation(err error) bool
	isUniqueViolation(err error) bool
	isUnavailable(err error) bool
}

// Store is a domain.Store on a SQL database. It is safe for concurrent use.
type Store struct {
	// w takes writes, r reads; they are the same pool except on SQLite, where one writer
	// connection avoids lock upgrades and readers never wait for it (WAL).
	w, r *sqlx.DB
	// ping is a pool of one connection that only Ping uses, so that readiness never queues
	// behind slow readers or a long write holding every connection of w and r.
	ping *sql.DB
	eng  engine
	bind func(query string) string

	// listings caches a prepared statement per listing shape (filters x order x cursor, at most
	// 64): PostgreSQL then plans each shape once per connection instead of once per request,
	// which was most of a small page's time in the database.
	listings sync.Map // query text -> *sqlx.Stmt
}

var _ domain.Store = (*Store)(nil)

// Close releases the store's connections.
func (s *Store) Close() error {
	var err error
	s.listings.Range(func(_, v any) bool {
		err = errors.Join(err, v.(*sqlx.Stmt).Close())
		return true
	})
	if s.ping != nil {
		err = errors.Join(err, s.ping.Close())
	}
	err = errors.Join(err, s.w.Close())
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	return err
}

// Ping checks that the store answers, on a connection of its own: busy reader and writer pools
// (every connection held by slow clients) do not make it wait. A store that cannot be reached is
// KindUnavailable.
func (s *Store) Ping(ctx context.Context) error {
	return s.translate("ping", s.ping.PingContext(ctx))
}

// pingPool opens the one-connection pool of Ping on dsn.
func pingPool(driver, dsn string) (*sql.DB, error) {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return db, nil
}

// projectRow is a projects row; timeValue scans either engine's time column.
type projectRow struct {
	ID        string    `db:"id"`
	Name      string    `db:"name"`
	CreatedAt timeValue `db:"created_at"`
	UpdatedAt timeValue `db:"updated_at"`
}

func (r projectRow) domain() domain.Project {
	return domain.Project{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt.Time, UpdatedAt: r.UpdatedAt.Time}
}

// timeValue scans a time stored as Unix microseconds (SQLite) or as a timestamp (PostgreSQL).
type timeValue struct{ time.Time }

func (t *timeValue) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		t.Time = time.UnixMicro(v).UTC()
	case time.Time:
		t.Time = v.UTC()
	default:
		return fmt.Errorf("cannot scan %T into a time", src)
	}
	return nil
}

const projectColumns = "id, name, created_at, updated_at"

// CreateProject implements domain.ProjectStore.
func (s *Store) CreateProject(ctx context.Context, p domain.Project) error {
	_, err := s.w.ExecContext(ctx, s.bind("INSERT INTO projects ("+projectColumns+") VALUES (?, ?, ?, ?)"),
		p.ID, p.Name, s.eng.timeArg(p.CreatedAt), s.eng.timeArg(p.UpdatedAt))
	return s.translate("create project", err)
}

// ProjectByID implements domain.ProjectStore.
func (s *Store) ProjectByID(ctx context.Context, id string) (domain.Project, error) {
	var row projectRow
	err := s.r.GetContext(ctx, &row, s.bind("SELECT "+projectColumns+" FROM projects WHERE id = ?"), id)
	if err != nil {
		return domain.Project{}, s.translate("get project", err)
	}
	return row.domain(), nil
}

// ListProjects implements domain.ProjectStore.
func (s *Store) ListProjects(ctx context.Context) ([]domain.Project, error) {
	var rows []projectRow
	if err := s.r.SelectContext(ctx, &rows, "SELECT "+projectColumns+" FROM projects ORDER BY created_at, id"); err != nil {
		return nil, s.translate("list projects", err)
	}
	out := make([]domain.Project, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// UpdateProject implements domain.ProjectStore.
func (s *Store) UpdateProject(ctx context.Context, p domain.Project) error {
	res, err := s.w.ExecContext(ctx, s.bind("UPDATE projects SET name = ?, updated_at = ? WHERE id = ?"),
		p.Name, s.eng.timeArg(p.UpdatedAt), p.ID)
	return s.oneRow("update project", res, err)
}

// DeleteProject implements domain.ProjectStore. The logs go with it (ON DELETE CASCADE).
func (s *Store) DeleteProject(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, s.bind("DELETE FROM projects WHERE id = ?"), id)
	return s.oneRow("delete project", res, err)
}

func (s *Store) oneRow(op string, res sql.Result, err error) error {
	if err != nil {
		return s.translate(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.translate(op, err)
	}
	if n == 0 {
		return &domain.Error{Kind: domain.KindNotFound, Msg: "not found"}
	}
	return nil
}

// logColumns is the column order of every bulk insert; rowArgs gives an entry's values in it.
const logColumns = "project_id, time, id, level, message, subject, user_id"

// writeRows executes stmt once per entry with the entry's values in logColumns order.
func writeRows(ctx context.Context, stmt *sql.Stmt, entries []domain.LogEntry) error {
	for _, e := range entries {
		if _, err := stmt.ExecContext(ctx, e.ProjectID, e.Time, e.ID, e.Level, e.Message, e.Subject, e.UserID); err != nil {
			return err
		}
	}
	return nil
}

// existenceChunk bounds the ids of one existence query, well under every engine's parameter limit.
const existenceChunk = 500

// InsertLogs implements domain.LogStore: one transaction, the idempotency record first (so a
// retry finds it or waits for it), the projects checked once per distinct id, then the engine's
// bulk insert.
func (s *Store) InsertLogs(ctx context.Context, entries []domain.LogEntry, rec *domain.IdempotencyRecord, window time.Duration) (prior *domain.IdempotencyRecord, err error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, s.translate("begin", err)
	}
	defer func() {
		if err != nil || prior != nil {
			_ = tx.Rollback() // nothing of this batch may stay; a rollback error adds nothing
		}
	}()
	if rec != nil {
		if prior, err := s.claimKey(ctx, tx, rec, window); prior != nil || err != nil {
			return prior, err
		}
	}
	if err := s.checkProjects(ctx, tx, entries); err != nil {
		return nil, err
	}
	if err := s.eng.insertLogs(ctx, tx, entries); err != nil {
		return nil, s.translate("insert logs", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, s.translate("commit logs", err)
	}
	return nil, nil
}

// claimKey returns the live record of rec's key if there is one; otherwise it inserts rec,
// replacing an expired record of the same key.
func (s *Store) claimKey(ctx context.Context, tx *sqlx.Tx, rec *domain.IdempotencyRecord, window time.Duration) (*domain.IdempotencyRecord, error) {
	cutoff := s.eng.timeArg(rec.CreatedAt.Add(-window))
	var found struct {
		Fingerprint string `db:"fingerprint"`
		Created     int    `db:"created"`
	}
	err := tx.GetContext(ctx, &found, s.bind("SELECT fingerprint, created FROM idempotency_keys WHERE scope = ? AND key = ? AND created_at >= ?"), rec.Scope, rec.Key, cutoff)
	switch {
	case err == nil:
		return &domain.IdempotencyRecord{Scope: rec.Scope, Key: rec.Key, Fingerprint: found.Fingerprint, Created: found.Created}, nil
	case !errors.Is(err, sql.ErrNoRows):
		return nil, s.translate("look up idempotency key", err)
	}
	if _, err := tx.ExecContext(ctx, s.bind("DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND created_at < ?"), rec.Scope, rec.Key, cutoff); err != nil {
		return nil, s.translate("expire idempotency key", err)
	}
	_, err = tx.ExecContext(ctx, s.bind("INSERT INTO idempotency_keys (scope, key, fingerprint, created, created_at) VALUES (?, ?, ?, ?, ?)"),
		rec.Scope, rec.Key, rec.Fingerprint, rec.Created, s.eng.timeArg(rec.CreatedAt))
	if err != nil && s.eng.isUniqueViolation(err) {
		// Another instance wrote the same key between our look-up and insert.
		return nil, domain.Errorf(domain.KindConflict, "a request with this Idempotency-Key is still being handled; retry later")
	}
	return nil, s.translate("record idempotency key", err)
}

// SweepIdempotency implements domain.LogStore.
func (s *Store) SweepIdempotency(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, s.bind("DELETE FROM idempotency_keys WHERE created_at < ?"), s.eng.timeArg(before))
	if err != nil {
		return 0, s.translate("sweep idempotency keys", err)
	}
	n, err := res.RowsAffected()
	return n, s.translate("sweep idempotency keys", err)
}

// checkProjects answers *domain.MissingProjectsError, naming each missing project once, when any
// entry's project does not exist. Phrasing the answer, and bounding it, is the domain's job.
func (s *Store) checkProjects(ctx context.Context, tx *sqlx.Tx, entries []domain.LogEntry) error {
	seen := make(map[string]bool)
	var ids []string
	for _, e := range entries {
		if _, ok := seen[e.ProjectID]; !ok {
			seen[e.ProjectID] = false
			ids = append(ids, e.ProjectID)
		}
	}
	for chunk := range chunks(ids, existenceChunk) {
		q, args, err := sqlx.In("SELECT id FROM projects WHERE id IN (?)"+s.eng.lockSuffix(), chunk)
		if err != nil {
			return fmt.Errorf("build existence query: %w", err)
		}
		var found []string
		if err := tx.SelectContext(ctx, &found, s.bind(q), args...); err != nil {
			return s.translate("check projects", err)
		}
		for _, id := range found {
			seen[id] = true
		}
	}
	var missing []string
	for _, id := range ids {
		if !seen[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return &domain.MissingProjectsError{IDs: missing}
	}
	return nil
}

func chunks(ids []string, n int) iter.Seq[[]string] {
	return func(yield func([]string) bool) {
		for len(ids) > 0 {
			k := min(n, len(ids))
			if !yield(ids[:k]) {
				return
			}
			ids = ids[k:]
		}
	}
}

// where renders f as a WHERE clause with ? placeholders.
func where(f domain.LogFilter) (string, []any) {
	var b strings.Builder
	args := []any{f.ProjectID}
	b.WriteString(" WHERE project_id = ?")
	if f.UserID != nil {
		b.WriteString(" AND user_id = ?")
		args = append(args, *f.UserID)
	}
	if f.Level != nil {
		b.WriteString(" AND level = ?")
		args = append(args, *f.Level)
	}
	if f.Start != nil {
		b.WriteString(" AND time >= ?")
		args = append(args, *f.Start)
	}
	if f.End != nil {
		b.WriteString(" AND time <= ?")
		args = append(args, *f.End)
	}
	return b.String(), args
}

// DeleteLogs implements domain.LogStore in one statement.
func (s *Store) DeleteLogs(ctx context.Context, f domain.LogFilter) (int64, error) {
	w, args := where(f)
	res, err := s.w.ExecContext(ctx, s.bind("DELETE FROM logs"+w), args...)
	if err != nil {
		return 0, s.translate("delete logs", err)
	}
	n, err := res.RowsAffected()
	return n, s.translate("delete logs", err)
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
	Found     int            `db:"found"`
	LastTime  sql.NullInt64  `db:"last_time"`
	LastID    sql.NullString `db:"last_id"`
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
	return e
}

// listQuery renders one page of q. The inner query reads at most limit+1 rows in index order; the
// window functions add the count and the key of row number limit to every row.
func listQuery(q domain.LogQuery) (string, []any) {
	w, args := where(q.LogFilter)
	dir, cmp := "ASC", ">"
	if q.Desc {
		dir, cmp = "DESC", "<"
	}
	if q.After != nil {
		w += " AND (time, id) " + cmp + " (?, ?)"
		args = append(args, q.After.Time, q.After.ID)
	}
	order := " ORDER BY time " + dir + ", id " + dir
	// Placeholders in textual order: the two nth_value positions, the filter, the inner limit.
	args = append(append([]any{q.Limit, q.Limit}, args...), q.Limit+1)
	return "SELECT id, project_id, time, level, message, subject, user_id," +
		" count(*) OVER win AS found," +
		" nth_value(time, ?) OVER win AS last_time, nth_value(id, ?) OVER win AS last_id" +
		" FROM (SELECT id, project_id, time, level, message, subject, user_id FROM logs" + w + order + " LIMIT ?) page" +
		" WINDOW win AS (" + order + " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)" +
		order, args
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

// ListLogs implements domain.LogStore. The rows are scanned and handed on one at a time; nothing
// holds a whole page in memory.
func (s *Store) ListLogs(ctx context.Context, q domain.LogQuery, fn domain.PageFunc) error {
	query, args := listQuery(q)
	stmt, err := s.listing(ctx, s.bind(query))
	if err != nil {
		return s.translate("list logs", err)
	}
	rows, err := stmt.QueryxContext(ctx, args...)
	if err != nil {
		return s.translate("list logs", err)
	}
	defer rows.Close()

	var row logRow
	hasFirst := rows.Next()
	if hasFirst {
		if err := rows.StructScan(&row); err != nil {
			return s.translate("list logs", err)
		}
	} else if err := rows.Err(); err != nil {
		return s.translate("list logs", err)
	} else {
		// An empty page: only now is it worth a round trip to tell "no project" from "no entries".
		_ = rows.Close()
		var one int
		err := s.r.GetContext(ctx, &one, s.bind("SELECT 1 FROM projects WHERE id = ?"), q.ProjectID)
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
			if err := rows.StructScan(&row); err != nil {
				yield(domain.LogEntry{}, s.translate("list logs", err))
				return
			}
		}
	}
	return fn(page)
}
