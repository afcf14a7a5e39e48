//go:build citus

package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"regexp"
	"strings"
	"sync"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"example.com/obsvc/domain"
)

// Recorder keeps every statement shape a store sent to the database, with the arguments of its
// first use, so that the Citus routing test checks the statements the store really runs rather
// than a list kept by hand: a statement added to the store is checked the first time a test
// runs it.
type Recorder struct {
	mu     sync.Mutex
	shapes map[string]bool
	stmts  []Recorded
}

// Recorded is one statement shape as the store sent it.
type Recorded struct {
	Query string
	Args  []any
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{shapes: map[string]bool{}} }

// Statements are the shapes recorded so far, in the order first seen.
func (r *Recorder) Statements() []Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Recorded(nil), r.stmts...)
}

var (
	placeholderRE = regexp.MustCompile(`\$\d+`)
	inListRE      = regexp.MustCompile(`IN \(\$(, \$)*\)`)
)

// Shape is a statement's text with its placeholders unnumbered and its IN lists of any length
// made one: two uses of one code path have one shape.
func Shape(query string) string {
	return inListRE.ReplaceAllString(placeholderRE.ReplaceAllString(query, "$"), "IN (…)")
}

func (r *Recorder) record(query string, args []driver.NamedValue) {
	if strings.HasPrefix(query, "EXPLAIN ") {
		return // a test's own question about a statement, not the store's
	}
	key := Shape(query)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shapes[key] {
		return
	}
	r.shapes[key] = true
	values := make([]any, len(args))
	for i, a := range args {
		values[i] = a.Value
	}
	r.stmts = append(r.stmts, Recorded{Query: query, Args: values})
}

// OpenRecorded opens a store on the PostgreSQL (or Citus) database at rawURL as OpenPostgres
// does, migrations and distribution included, then puts its reads and writes on a pool whose
// connections tell rec every statement they send.
func OpenRecorded(ctx context.Context, rawURL string, rec *Recorder) (*Store, error) {
	opts := DefaultPostgresOptions()
	s, err := OpenPostgres(ctx, rawURL, opts)
	if err != nil {
		return nil, err
	}
	dsn, err := withConnectTimeout(rawURL, opts.ConnectTimeout)
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	base, err := pq.NewConnector(dsn)
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	db := sqlx.NewDb(sql.OpenDB(recConnector{base, rec}), "postgres")
	db.SetMaxOpenConns(opts.MaxOpenConns)
	db.SetMaxIdleConns(opts.MaxIdleConns)
	old := s.w
	s.w, s.r = db, db
	_ = old.Close() // nothing ran on it but the migrations
	return s, nil
}

// CopyLogs runs the store's own bulk insert of entries inside tx, for the test that shows
// where Citus sends its rows.
func CopyLogs(ctx context.Context, s *Store, tx *sqlx.Tx, entries []domain.LogEntry) error {
	return s.eng.createLogs(ctx, tx, entries, 0)
}

// recConnector, recConn and recStmt pass everything to lib/pq, telling the recorder each
// statement first.
type recConnector struct {
	base driver.Connector
	rec  *Recorder
}

func (c recConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recConn{Conn: cn, rec: c.rec}, nil
}

func (c recConnector) Driver() driver.Driver { return c.base.Driver() }

type recConn struct {
	driver.Conn
	rec *Recorder
}

func (c *recConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.rec.record(query, args)
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *recConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.rec.record(query, args)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *recConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &recStmt{Stmt: st, query: query, rec: c.rec}, nil
}

func (c *recConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *recConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

func (c *recConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *recConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }

func (c *recConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

type recStmt struct {
	driver.Stmt
	query string
	rec   *Recorder
}

func values(args []driver.NamedValue) []driver.Value {
	v := make([]driver.Value, len(args))
	for i, a := range args {
		v[i] = a.Value
	}
	return v
}

func (s *recStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.rec.record(s.query, args)
	if st, ok := s.Stmt.(driver.StmtExecContext); ok {
		return st.ExecContext(ctx, args)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	//lint:ignore SA1019 lib/pq's COPY statement has only Exec
	return s.Stmt.Exec(values(args))
}

func (s *recStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.rec.record(s.query, args)
	if st, ok := s.Stmt.(driver.StmtQueryContext); ok {
		return st.QueryContext(ctx, args)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	//lint:ignore SA1019 lib/pq's COPY statement has only Query
	return s.Stmt.Query(values(args))
}
