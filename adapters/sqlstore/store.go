// Package sqlstore implements the domain's storage ports on SQL databases with sqlx: an embedded
// SQLite store (the zero-set-up default) and a PostgreSQL store. Both share the queries that are
// truly the same and differ where the engines do (DDL, bulk insert, error codes, time columns).
//
// What differs sits behind two seams, each implemented once per engine:
//
//   - engine (this file; sqlite.go, postgres.go): time columns, the bulk insert, the locks of a
//     batch, a retention change and the sweep, text search, and what a driver error means;
//   - tailSQL (tail.go; tail_sqlite.go, tail_postgres.go): how a batch's rows are tied to its
//     number in the live tail's order, and how a tail read leaves batches out.
//
// The schema's history, the SQL and the Go migrations of both engines, is the migrations
// package; on a Citus coordinator the migrated schema is then distributed (citus.go).
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"example.com/obsvc/domain"
)

// engine is what differs between the SQL engines, but for the live tail's SQL, which has a
// seam of its own (tailSQL in tail.go, one file per engine).
type engine interface {
	// timeArg converts a timestamp to what the engine's time columns store.
	timeArg(t time.Time) any
	// createLogs writes entries inside tx as fast as the engine allows; tailTx is the rows'
	// tail_tx where the store numbers batches itself (tailSQL.clock), else 0 and unused.
	createLogs(ctx context.Context, tx *sqlx.Tx, entries []domain.LogEntry, tailTx uint64) error
	// lockSuffix is appended to the project existence check of a batch so that no project can
	// be deleted between that check and the insert.
	lockSuffix() string
	// projectLock is a statement that takes, for the rest of a transaction, a lock on one
	// project (its id the one parameter) that a batch (shared) and a retention change
	// (exclusive) exclude each other by, where lockSuffix cannot; "" where lockSuffix does.
	projectLock(exclusive bool) string
	// searchLock is a statement that takes, for the rest of a transaction, a lock on the saved
	// searches of one project (its id the one parameter) that creates take one at a time; ""
	// where the engine's one writer already serialises them.
	searchLock() string
	// trySweepLock takes, for the rest of tx, the lock that lets one instance at a time sweep
	// expired entries; false when another holds it.
	trySweepLock(ctx context.Context, tx *sqlx.Tx) (bool, error)
	// containsText renders "column contains term" (term already folded) as a condition with one
	// ? placeholder and its argument, at a cost linear in the column's bytes, or bounded by the
	// term's length times them (see README, the "Listing" row: the cost of q).
	containsText(column, term string) (string, any)
	// greatest renders the greater of two expressions of the same type.
	greatest(a, b string) string
	// lowerASCII renders column with A to Z lowered and every other character kept, whatever
	// the database's locale (see foldedMessage).
	lowerASCII(column string) string
	// forProject is the engine that renders the query language's terms of a filter of project
	// id (where): PostgreSQL's indexes look a term up beside the project (migration 00016).
	forProject(id string) engine
	// queryWords renders a QueryWords of the query language (words folded, at least one) as a
	// condition that is never NULL, with its arguments (query.go).
	queryWords(words []string, prefix bool) (string, []any)
	// queryAttribute renders a test of one top-level attribute as a condition that is never
	// NULL, with its arguments (query.go).
	queryAttribute(key string, t attrTest) (string, []any)
	// listTable is the table a listing matching f reads in listing order: logs, or on SQLite
	// logs INDEXED BY the index of a field filter of f (see sqliteEngine.listTable).
	listTable(f domain.LogFilter) string
	// minuteCounts renders the minutes of the row of log_counts_hour aliased table, one row
	// each: what joins them to the table in a FROM clause, the minute's offset in the hour
	// (0 to 59) and its count.
	minuteCounts(table string) (join, index, count string)
	// hasPrefix renders "column begins with the value" with one ? placeholder.
	hasPrefix(column string) string
	// attributeText renders the member of the attributes object in column whose key is the one
	// ? placeholder, as its JSON text exactly as stored (numbers keep their text, strings their
	// escapes, nesting its bytes): NULL when the key is absent, the text null when the value is.
	attributeText(column string) string
	// attributeKeys renders the keys of the attributes of each row of alias row as a table
	// joined to it, and the expression of one key (NULL attributes: no keys).
	attributeKeys(row string) (table, key string)
	// bytewise is the collation clause that orders text by its bytes (UTF-8 in code point
	// order), as Go's strings.Compare does, appended to an ORDER BY term.
	bytewise() string
	// singleWriter says whether every write queues for one lock (see Store.SingleWriter).
	singleWriter() bool
	// classify says what a driver error means by the engine's codes, for translate.
	classify(err error) dbError
}

// dbError is what an engine makes of a driver error.
type dbError uint8

const (
	errOther       dbError = iota
	errForeignKey          // a foreign key violated: a project that does not exist
	errUnique              // a primary or unique key violated
	errUnavailable         // the database refused or lost the work; a retry later may succeed
)

// Store is a domain.Store on a SQL database. It is safe for concurrent use.
type Store struct {
	// w takes writes, r reads; they are the same pool except on SQLite, where one writer
	// connection avoids lock upgrades and readers never wait for it (WAL).
	w, r *sqlx.DB
	// ping is a pool of one connection that only Ping uses, so that readiness never queues
	// behind slow readers or a long write holding every connection of w and r.
	ping *sql.DB
	eng  engine
	tail tailSQL
	bind func(query string) string
	// rollup is the rollup's write statements, rendered and bound once (newRollupRows).
	rollup rollupRows
	// indexedTerms: SQLiteOptions.IndexedTerms (SQLite only).
	indexedTerms int
	// facetsMemory bounds the distinct values Facets counts in the service (defaultFacetsMemory).
	facetsMemory int64

	// listings caches a prepared statement per listing shape (filters x order x cursor, at most
	// 64): PostgreSQL then plans each shape once per connection instead of once per request,
	// which was most of a small page's time in the database. A statement shaped by a tree of
	// the query language is never cached (queryRows): those texts are unbounded.
	listings sync.Map // query text -> *sqlx.Stmt

	// alertParsed caches the registered alert queries a batch is matched against, parsed
	// (alertQuery); alertParsedN counts what it holds.
	alertParsed  sync.Map // query text -> domain.Query
	alertParsedN atomic.Int64
}

var (
	_ domain.Store     = (*Store)(nil)
	_ domain.TailStore = (*Store)(nil)
)

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
