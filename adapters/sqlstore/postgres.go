package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"example.com/obsvc/adapters/sqlstore/migrations"
	"example.com/obsvc/domain"
)

// PostgresOptions size the connection pool and bound how long a new connection may take.
type PostgresOptions struct {
	// MaxOpenConns bounds the pool; requests beyond it wait for a free connection.
	MaxOpenConns int
	// MaxIdleConns is how many open connections the pool keeps when idle.
	MaxIdleConns int
	// ConnMaxLifetime retires connections after this long, releasing their server-side memory
	// and following a DNS change or failover.
	ConnMaxLifetime time.Duration
	// ConnMaxIdleTime closes connections unused for this long.
	ConnMaxIdleTime time.Duration
	// ConnectTimeout is put in the URL as connect_timeout when it has none: lib/pq would otherwise
	// wait for a new connection forever while the database is unreachable. Whole seconds, at
	// least one; zero adds nothing.
	ConnectTimeout time.Duration
}

// DefaultPostgresOptions suit a 2-core host: enough connections for the two cores and the
// database's own I/O waits, few enough to leave the database headroom.
func DefaultPostgresOptions() PostgresOptions {
	return PostgresOptions{MaxOpenConns: 16, MaxIdleConns: 16, ConnMaxLifetime: 30 * time.Minute, ConnMaxIdleTime: 5 * time.Minute, ConnectTimeout: 5 * time.Second}
}

// OpenPostgres connects to the PostgreSQL database at rawURL, applies the migrations under a
// session advisory lock (so instances starting together take turns) and returns a store on it.
//
// rawURL must be a URL (postgres:// or postgresql://); lib/pq's key=value form is refused, because
// the defaults below are added as URL query parameters. Unless the URL sets them, OpenPostgres adds
// connect_timeout (from opts) and binary_parameters=yes. A database that cannot be reached is
// KindUnavailable.
func OpenPostgres(ctx context.Context, rawURL string, opts PostgresOptions) (*Store, error) {
	dsn, err := withConnectTimeout(rawURL, opts.ConnectTimeout)
	if err != nil {
		return nil, err
	}
	db, err := sqlx.Open("postgres", dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	db.SetMaxOpenConns(opts.MaxOpenConns)
	db.SetMaxIdleConns(opts.MaxIdleConns)
	db.SetConnMaxLifetime(opts.ConnMaxLifetime)
	db.SetConnMaxIdleTime(opts.ConnMaxIdleTime)
	s := &Store{w: db, r: db, eng: postgresEngine{}, tail: postgresTail{}, bind: func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) }, facetsMemory: defaultFacetsMemory}
	s.rollup = newRollupRows(s.bind)
	// Readiness has a connection of its own (one more per instance on the server), retired like
	// the pool's so that it follows a failover too.
	if s.ping, err = pingPool("postgres", dsn); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	s.ping.SetConnMaxLifetime(opts.ConnMaxLifetime)

	if err := db.PingContext(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("postgres: connect: %w", s.translate("connect", err))
	}
	// Retry the advisory lock every second (goose's default is every 5 s) for up to 5 minutes: an
	// instance that starts beside another waits about as long as the other's migrations take.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	citus, err := hasCitus(ctx, db.DB)
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("postgres: %w", s.translate("detect citus", err))
	}
	s.eng = postgresEngine{citus: citus}
	if !citus {
		if err := migrations.Up(ctx, db.DB, migrations.Postgres, goose.WithSessionLocker(locker)); err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("postgres: %w", err)
		}
		return s, nil
	}
	// On a Citus coordinator the migrations and the distribution of what they made run under one
	// more lock, so that no instance distributes while another migrates.
	err = withCitusLock(ctx, db.DB, 5*time.Minute, func() error {
		if err := migrations.Up(ctx, db.DB, migrations.Postgres, goose.WithSessionLocker(locker)); err != nil {
			return err
		}
		left, err := distributeSchema(ctx, db.DB)
		if len(left) > 0 {
			slog.WarnContext(ctx, "citus: tables left on the coordinator: neither per-project nor known", "tables", left)
		}
		return err
	})
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return s, nil
}

// withConnectTimeout adds connect_timeout and binary_parameters to a postgres:// URL that does
// not set them.
func withConnectTimeout(rawURL string, d time.Duration) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("postgres: want a postgres:// or postgresql:// URL")
	}
	q := u.Query()
	if q.Get("connect_timeout") == "" && d > 0 {
		q.Set("connect_timeout", fmt.Sprint(max(int(d.Seconds()), 1)))
	}
	// With binary_parameters lib/pq sends a statement with its parameters in one round trip
	// instead of preparing it first (two): half the latency of every small query.
	if q.Get("binary_parameters") == "" {
		q.Set("binary_parameters", "yes")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// postgresEngine is PostgreSQL, or a Citus coordinator when citus is set.
type postgresEngine struct {
	citus   bool
	project string // the project whose filter is rendered (forProject), for the GIN indexes' terms
}

// listTable: PostgreSQL's planner, which has statistics of the values, chooses the index.
func (postgresEngine) listTable(domain.LogFilter) string { return "logs" }

// attributeText: the json operator returns the stored text of a member.
func (postgresEngine) attributeText(column string) string {
	return "CAST(" + column + " -> CAST(? AS TEXT) AS TEXT)"
}

func (postgresEngine) attributeKeys(row string) (table, key string) {
	return "json_object_keys(" + row + ".attributes) AS j (key)", "j.key"
}

// bytewise: the "C" collation; the database's own may order by its locale.
func (postgresEngine) bytewise() string { return ` COLLATE "C"` }

// singleWriter: a sweep and inserts of other rows run side by side.
func (postgresEngine) singleWriter() bool { return false }

func (e postgresEngine) forProject(id string) engine {
	e.project = id
	return e
}

func (postgresEngine) timeArg(t time.Time) any { return t.UTC() }

// lockSuffix keeps the checked projects from being deleted or changed until the batch commits:
// FOR SHARE (not FOR KEY SHARE) also makes an UPDATE of the retention wait, so a batch never
// commits an entry under a retention that a change committed meanwhile has shortened. Batches
// share the lock with each other; only project writes wait, and only for batches in flight.
// Not on Citus: projects is a reference table there, and a row lock on it is taken on every
// node's copy, so every batch would touch every worker and one worker down would stop ingest for
// all projects. There the foreign key from the project's shard to its node's copy of projects
// does the deletion half of the job at insert time (a project deleted meanwhile fails the batch
// as an unknown project), and projectLock the retention half.
func (e postgresEngine) lockSuffix() string {
	if e.citus {
		return ""
	}
	return " FOR SHARE"
}

// projectLockKey is the first key of the per-project advisory locks ("obpl" in ASCII); the
// second is a hash of the project id (two ids that collide only wait for each other).
const projectLockKey = 0x6f62706c

// projectLock is, on Citus, a transaction-level advisory lock on the coordinator, which every
// statement of the service passes through: batches and the sweep take it shared before they
// read a project's retention, a retention change exclusive before it writes one. It names no
// table, so it reaches no worker, and one worker down stops nothing else.
func (e postgresEngine) projectLock(exclusive bool) string {
	switch {
	case !e.citus:
		return ""
	case exclusive:
		return "SELECT pg_advisory_xact_lock(" + fmt.Sprint(projectLockKey) + ", hashtext(?))"
	}
	return "SELECT pg_advisory_xact_lock_shared(" + fmt.Sprint(projectLockKey) + ", hashtext(?))"
}

// searchLockKey is the first key of the advisory locks of a project's saved searches ("obss" in
// ASCII); the second is a hash of the project id.
const searchLockKey = 0x6f627373

// searchLock is a transaction-level advisory lock on the coordinator (or the one server) that
// the creates of one project's saved searches take one at a time, so that two concurrent
// creates never take the project past its bound. It names no table, so on Citus it reaches no
// worker, and it leaves the project's row (a reference table's, on every node) alone.
func (postgresEngine) searchLock() string {
	return "SELECT pg_advisory_xact_lock(" + fmt.Sprint(searchLockKey) + ", hashtext(?))"
}

// lockProjects takes the shared project lock of each id inside tx, in order (no two
// transactions wait for each other in a cycle), where the engine needs it.
func (s *Store) lockProjects(ctx context.Context, tx *sqlx.Tx, ids []string) error {
	q := s.eng.projectLock(false)
	if q == "" {
		return nil
	}
	sorted := slices.Sorted(slices.Values(ids))
	for _, id := range slices.Compact(sorted) {
		if _, err := tx.ExecContext(ctx, s.bind(q), id); err != nil {
			return s.translate("lock project", err)
		}
	}
	return nil
}

// sweepLockKey names the advisory lock of the retention sweep ("obsvcrs" in ASCII): goose's
// migration lock uses another key.
const sweepLockKey = 0x6f627376637273

// trySweepLock takes a transaction-level advisory lock, released at commit or rollback, so that
// of several instances on one database one sweeps at a time and none waits for it.
func (postgresEngine) trySweepLock(ctx context.Context, tx *sqlx.Tx) (bool, error) {
	var ok bool
	err := tx.GetContext(ctx, &ok, "SELECT pg_try_advisory_xact_lock($1)", int64(sweepLockKey))
	return ok, err
}

// createLogs streams the batch with COPY inside tx: one prepared COPY statement, one Exec per row
// (lib/pq buffers them into CopyData messages), a final Exec without arguments to flush. A row the
// server rejects fails the whole COPY, and the caller rolls tx back. Each row carries its
// message's words and its attributes' terms (migration 00011) in the same COPY. tail_tx is left to the
// column's default, the writing transaction's id (see migration 00007), which the coordinator
// fills in on Citus too, so tailTx is unused. (pq.CopyIn only builds this statement text and is
// deprecated in lib/pq 1.12.)
func (postgresEngine) createLogs(ctx context.Context, tx *sqlx.Tx, entries []domain.LogEntry, _ uint64) error {
	stmt, err := tx.PrepareContext(ctx, "COPY logs ("+logColumns+", words, attr_terms) FROM STDIN")
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := writeRows(ctx, stmt, entries, true, nil); err != nil {
		return err
	}
	_, err = stmt.ExecContext(ctx) // flush
	return err
}

// strposBytes is the longest term (in bytes) PostgreSQL matches with strpos; longer ones go
// through a regular expression.
const strposBytes = 32

// containsText matches a term of up to strposBytes with strpos, Boyer-Moore-Horspool: it skips
// through typical text faster than LIKE, and at worst compares the term's length at each
// position. A longer term is a literal regular expression (***= makes the rest of the pattern
// literal), which PostgreSQL runs as a DFA: linear in the text whatever the term, though a few
// times slower than strpos on typical text. LIKE backtracked at every position where the
// term's first character occurs: a 255-character term over 64 KiB of its own prefix took 19 ms
// a message, against 0.6 ms as a regular expression.
func (postgresEngine) containsText(column, term string) (string, any) {
	if len(term) <= strposBytes {
		return "strpos(" + column + ", ?) > 0", term
	}
	return column + " ~ ?", "***=" + term
}

func (postgresEngine) minuteCounts(table string) (join, index, count string) {
	return " CROSS JOIN LATERAL unnest(ARRAY[" + minuteColumnsOf(table) + "]) WITH ORDINALITY AS u(n, o)", "(u.o - 1)", "u.n"
}

func (postgresEngine) greatest(a, b string) string { return "GREATEST(" + a + ", " + b + ")" }

// lowerASCII: lower under the "C" collation changes ASCII letters only, whatever the database's
// own locale.
func (postgresEngine) lowerASCII(column string) string { return "lower(" + column + ` COLLATE "C")` }

// pqCode is the SQLSTATE of a server error, or "" for any other error.
func pqCode(err error) pqerror.Code {
	var pe *pq.Error
	if !errors.As(err, &pe) {
		return ""
	}
	return pe.Code
}

// classify reads the SQLSTATE of a server error.
func (e postgresEngine) classify(err error) dbError {
	switch code := pqCode(err); {
	case code == "23503": // foreign_key_violation
		return errForeignKey
	case code == "23505": // unique_violation
		return errUnique
	case e.isUnavailable(err):
		return errUnavailable
	}
	return errOther
}

// isUnavailable covers the server going away or refusing work: connection exceptions (class
// 08), shutdowns (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now), too
// many connections (53300), read-only recovery (25006) and a statement cancelled (57014
// query_canceled: lib/pq cancels the statement when the request's deadline passes, and the
// server's statement_timeout ends one the same way); a retry later may well succeed. Network errors and lib/pq's
// driver.ErrBadConn are caught by isConnectionError whatever the engine.
//
// A Citus coordinator reports most failures to reach a worker as class 08, but some as an
// internal error (XX000) or, when a worker goes away in the middle of a COPY, as an I/O error
// (58030), whose text is all that tells them apart; those are matched by text.
func (postgresEngine) isUnavailable(err error) bool {
	code := pqCode(err)
	switch {
	case len(code) != 5: // not a server error (Class would panic on a short code)
		return false
	case code.Class() == "08", code == "57P01", code == "57P02", code == "57P03", code == "53300", code == "25006", code == "57014":
		return true
	case code == "XX000", code == "58030":
		var pe *pq.Error
		return errors.As(err, &pe) && isCitusWorkerUnreachable(pe.Message)
	}
	return false
}

// citusUnreachable are the beginnings of the Citus messages (SQLSTATE XX000) that say a worker
// could not be reached or its connection broke.
var citusUnreachable = []string{
	"failure on connection marked as essential",
	"connection to the remote node",
	"could not establish any connections to the node",
	"connection not open",
	"failed to COPY to shard",                   // the worker's connection broke while the rows were sent
	"server closed the connection unexpectedly", // libpq's words, relayed when a worker dies at commit
	"canceling statement due to",                // a worker's statement cancelled (57014 there), relayed
}

func isCitusWorkerUnreachable(msg string) bool {
	for _, p := range citusUnreachable {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
