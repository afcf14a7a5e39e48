package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"example.com/obsvc/adapters/sqlstore/migrations"
	"example.com/obsvc/domain"
)

// SQLiteOptions tune the embedded store.
type SQLiteOptions struct {
	// BusyTimeout is how long a statement waits for a lock before failing.
	BusyTimeout time.Duration
	// MaxReaders bounds the read connections.
	MaxReaders int
	// IndexedTerms is the most entries (of all projects) a word, a phrase or an attribute's
	// value may be in for a query to be read from the entries holding it, by the FTS5 tables;
	// a query term in more is tested on each entry read instead (see sqlitePlan). Negative:
	// every term is tested on each entry read.
	IndexedTerms int
}

// DefaultSQLiteOptions are the settings `go run ./app` uses.
func DefaultSQLiteOptions() SQLiteOptions {
	return SQLiteOptions{BusyTimeout: 10 * time.Second, MaxReaders: 4, IndexedTerms: 5000}
}

// OpenSQLite opens (creating if missing) the SQLite database at path, applies the migrations and
// returns a store on it. The database runs in WAL mode with synchronous=FULL, so a write that
// returned has reached the disk, and with foreign keys enforced.
func OpenSQLite(ctx context.Context, path string, opts SQLiteOptions) (*Store, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("sqlite: create directory: %w", err)
		}
	}
	q := url.Values{}
	for _, p := range []string{
		"foreign_keys(1)",
		"journal_mode(WAL)",
		"synchronous(FULL)",
		fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds()),
	} {
		q.Add("_pragma", p)
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()

	// One writer connection whose transactions take the write lock up front (no deadlocking
	// upgrades), and a few readers that WAL lets run beside it.
	drv, err := sqliteDriver()
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	w := sqlx.NewDb(sql.OpenDB(sqliteConnector{drv, dsn + "&_txlock=immediate"}), "sqlite")
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	r := sqlx.NewDb(sql.OpenDB(sqliteConnector{drv, dsn + "&_pragma=query_only(1)"}), "sqlite")
	r.SetMaxOpenConns(max(opts.MaxReaders, 1))
	s := &Store{w: w, r: r, eng: sqliteEngine{}, tail: sqliteTail{}, bind: func(q string) string { return q }, indexedTerms: opts.IndexedTerms, facetsMemory: defaultFacetsMemory}
	s.rollup = newRollupRows(s.bind)
	if s.ping, err = pingPool("sqlite", dsn+"&_pragma=query_only(1)"); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}

	if err := migrations.Up(ctx, w.DB, migrations.SQLite); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	return s, nil
}

// sqliteWordsFunc is the SQL function sqliteDriver adds: obsvc_words(message) is " " +
// domain.WordText(message) + " " (NULL for NULL), what a words term is looked for in when it is
// tested entry by entry rather than read from logs_words (see queryWords).
const sqliteWordsFunc = "obsvc_words"

// sqliteDriver is the driver of a store's connections: modernc's SQLite with sqliteWordsFunc,
// registered on this driver alone (a driver of its own, not the process-wide "sqlite" one, so
// nothing outside the store changes).
func sqliteDriver() (*sqlite.Driver, error) {
	drv := &sqlite.Driver{}
	err := drv.RegisterDeterministicScalarFunction(sqliteWordsFunc, 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		switch m := args[0].(type) {
		case nil:
			return nil, nil
		case string:
			return " " + domain.WordText(m) + " ", nil
		case []byte:
			return " " + domain.WordText(string(m)) + " ", nil
		default:
			return nil, fmt.Errorf("%s: a message of type %T", sqliteWordsFunc, m)
		}
	})
	return drv, err
}

// sqliteConnector opens the connections of one pool of a store: drv's, on dsn.
type sqliteConnector struct {
	drv *sqlite.Driver
	dsn string
}

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c sqliteConnector) Driver() driver.Driver                        { return c.drv }

// sqliteEngine renders SQLite's SQL. indexed holds the FTS5 MATCH expressions of a query's
// terms that few enough entries hold to be read from logs_words or logs_terms (sqlitePlan); a
// term whose expression is not in it is tested on each entry read. The store's own engine has
// none: a statement that was not planned (a tail read, over a few new entries) reads no list.
type sqliteEngine struct {
	indexed map[string]bool
}

func (sqliteEngine) timeArg(t time.Time) any { return t.UnixMicro() }

// listTable: on SQLite a listing filtered by a field's one value reads that field's index, named:
// logs_trace, logs_user, logs_subject or logs_level (in that order, the rarer values first).
// Its range of (project_id, value) holds only the entries of the value, in time order (the
// entries of one time put in id order as they are read, migration 00019), so the page is that
// range's first entries that pass the rest of the filter. SQLite's planner, which has no
// statistics of the values, took the primary key instead in 19 of the 24 shapes of
// TestSQLiteFieldListingsReadTheirIndex that filter by user, level or subject (every one with a
// cursor or a time range among them), and in all 32 once the indexes ended in time: the
// project's entries in order, each read from the table to test the value, so a page of a rare
// value read the project up to its 100th match. logs when no field filter has one value.
func (sqliteEngine) listTable(f domain.LogFilter) string {
	switch {
	case f.TraceID != nil:
		return "logs INDEXED BY logs_trace"
	case f.UserID != nil:
		return "logs INDEXED BY logs_user"
	case f.Subject != nil:
		return "logs INDEXED BY logs_subject"
	case f.Level != nil && len(f.Levels) == 0, f.Level == nil && len(f.Levels) == 1:
		return "logs INDEXED BY logs_level"
	}
	return "logs"
}

// forProject: SQLite's term lists (logs_words, logs_terms) are per row, read only for terms few
// entries hold (sqlitePlan), and joined to the project's rows by rowid.
func (e sqliteEngine) forProject(string) engine { return e }

// attributeText quotes the key with json_quote, which the path parser reads back whatever the
// key holds (dots, quotes, backslashes, brackets); -> renders the member as stored (numbers
// keep their text). A third of the time of finding the member by json_each and its fullkey
// (0.45 s against 1.45 s for the facets of 100,000 entries).
func (sqliteEngine) attributeText(column string) string {
	return column + " -> ('$.' || json_quote(?))"
}

func (sqliteEngine) attributeKeys(row string) (table, key string) {
	return "json_each(" + row + ".attributes) AS j", "j.key"
}

// bytewise: SQLite's default collation, BINARY, already compares bytes.
func (sqliteEngine) bytewise() string { return "" }

// singleWriter: the writer holds the database's write lock for every transaction.
func (sqliteEngine) singleWriter() bool { return true }

func (sqliteEngine) lockSuffix() string      { return "" } // the writer holds the database's write lock
func (sqliteEngine) projectLock(bool) string { return "" } // likewise
func (sqliteEngine) searchLock() string      { return "" } // likewise

// trySweepLock: the one writer connection, whose transactions take the write lock up front,
// already lets one sweep at a time.
func (sqliteEngine) trySweepLock(context.Context, *sqlx.Tx) (bool, error) { return true, nil }

// createLogs uses one prepared statement for every row: with the statement compiled once and one
// transaction, SQLite's cost is the B-tree work itself. The rows carry the batch's tail_clock
// number as tail_tx (see tail_sqlite.go), and each row's words go into logs_words beside it.
func (sqliteEngine) createLogs(ctx context.Context, tx *sqlx.Tx, entries []domain.LogEntry, tailTx uint64) error {
	stmt, err := tx.PrepareContext(ctx, "INSERT INTO logs ("+logColumns+", tail_tx) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
	if err != nil {
		return err
	}
	defer stmt.Close()
	words, err := tx.PrepareContext(ctx, wordsInsert)
	if err != nil {
		return err
	}
	defer words.Close()
	terms, err := tx.PrepareContext(ctx, termsInsert)
	if err != nil {
		return err
	}
	defer terms.Close()
	return writeRows(ctx, stmt, entries, false, func(e domain.LogEntry) error {
		if w := domain.WordText(e.Message); w != "" {
			if _, err := words.ExecContext(ctx, w); err != nil {
				return err
			}
		}
		if t := migrations.TermTokens(e.Attributes); t != "" {
			if _, err := terms.ExecContext(ctx, t); err != nil {
				return err
			}
		}
		return nil
	}, int64(tailTx))
}

// wordsInsert and termsInsert index the words of the message (logs_words, migration 00011) and
// the terms of the attributes (logs_terms, 00012) of the row just inserted on the same
// connection; a trigger removes them with the row. An insert into an FTS5 table leaves
// last_insert_rowid() at the rowid it was given, which is the row's, so the second insert
// indexes the same row as the first.
const (
	wordsInsert = "INSERT INTO logs_words (rowid, words) VALUES (last_insert_rowid(), ?)"
	termsInsert = "INSERT INTO logs_terms (rowid, terms) VALUES (last_insert_rowid(), ?)"
)

// containsText uses instr, which at each start position whose first byte matches compares the
// rest with memcmp: LIKE's pattern matcher instead decodes and compares character by character
// from every such position, 2 ns a character, so a 255-character term over 64 KiB messages of
// the term's own prefix took 33 ms a message, against 0.5 ms with instr. Folded text has no
// ASCII capitals, so instr's case-sensitive comparison is the search's.
func (sqliteEngine) containsText(column, term string) (string, any) {
	return "instr(" + column + ", ?) > 0", term
}

func (sqliteEngine) minuteCounts(table string) (join, index, count string) {
	return ", json_each(json_array(" + minuteColumnsOf(table) + ")) AS u", "u.key", "u.value"
}

func (sqliteEngine) greatest(a, b string) string { return "max(" + a + ", " + b + ")" }

// lowerASCII: SQLite's lower, without the ICU extension (which this build has not), changes
// ASCII letters only.
func (sqliteEngine) lowerASCII(column string) string { return "lower(" + column + ")" }

// classify reads SQLite's extended result code: the constraint that failed, or a primary code
// that says the database is busy, locked, full or unreadable.
func (sqliteEngine) classify(err error) dbError {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return errOther
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return errForeignKey
	case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
		return errUnique
	}
	switch se.Code() & 0xff { // primary result code
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR:
		return errUnavailable
	}
	return errOther
}
