package sqlstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"example.com/obsvc/domain"
)

//go:embed migrations/postgres/*.sql
var postgresMigrations embed.FS

// PostgresOptions size the connection pool.
type PostgresOptions struct {
	MaxOpenConns    int
	MaxIdleConns    int
	ConnMaxLifetime time.Duration
	ConnMaxIdleTime time.Duration
	// ConnectTimeout is put in the URL as connect_timeout when it has none: lib/pq would otherwise
	// wait for a new connection forever while the database is unreachable.
	ConnectTimeout time.Duration
}

// DefaultPostgresOptions suit a 2-core host: enough connections for the two cores and the
// database's own I/O waits, few enough to leave the database headroom.
func DefaultPostgresOptions() PostgresOptions {
	return PostgresOptions{MaxOpenConns: 16, MaxIdleConns: 16, ConnMaxLifetime: 30 * time.Minute, ConnMaxIdleTime: 5 * time.Minute, ConnectTimeout: 5 * time.Second}
}

// OpenPostgres connects to the PostgreSQL database at rawURL (postgres:// or postgresql://),
// applies the migrations under a session advisory lock (so instances starting together take
// turns) and returns a store on it.
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
	s := &Store{w: db, r: db, eng: postgresEngine{}, bind: func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) }}

	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("postgres: connect: %w", s.translate("connect", err))
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	migrations, err := fs.Sub(postgresMigrations, "migrations/postgres")
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := migrate(ctx, db.DB, goose.DialectPostgres, migrations, goose.WithSessionLocker(locker)); err != nil {
		_ = db.Close()
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

type postgresEngine struct{}

func (postgresEngine) timeArg(t time.Time) any { return t.UTC() }

// lockSuffix keeps the checked projects from being deleted until the batch commits.
func (postgresEngine) lockSuffix() string { return " FOR KEY SHARE" }

// insertLogs streams the batch with COPY: one statement, rows sent as they are written.
func (postgresEngine) insertLogs(ctx context.Context, tx *sqlx.Tx, entries []domain.LogEntry) error {
	stmt, err := tx.PrepareContext(ctx, "COPY logs ("+logColumns+") FROM STDIN")
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := writeRows(ctx, stmt, entries); err != nil {
		return err
	}
	_, err = stmt.ExecContext(ctx) // flush
	return err
}

func pqCode(err error) (string, bool) {
	var pe *pq.Error
	if !errors.As(err, &pe) {
		return "", false
	}
	return string(pe.Code), true
}

func (postgresEngine) isForeignKeyViolation(err error) bool {
	code, ok := pqCode(err)
	return ok && code == "23503"
}

func (postgresEngine) isUniqueViolation(err error) bool {
	code, ok := pqCode(err)
	return ok && code == "23505"
}

// isUnavailable covers the server going away or refusing work: connection exceptions (class
// 08), shutdowns (57P01-57P03), too many connections (53300) and read-only recovery (25006).
func (postgresEngine) isUnavailable(err error) bool {
	code, ok := pqCode(err)
	if !ok {
		return false
	}
	switch {
	case code[:2] == "08", code == "57P01", code == "57P02", code == "57P03", code == "53300", code == "25006":
		return true
	}
	return false
}
