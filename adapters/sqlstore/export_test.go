package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"

	"example.com/obsvc/adapters/sqlstore/migrations"
	"example.com/obsvc/domain"
)

// ListSQL is the exact statement ListLogs runs for q, for plan tests.
func ListSQL(s *Store, q domain.LogQuery) (string, []any) {
	query, args, err := s.listStatement(context.Background(), q)
	if err != nil {
		panic(err)
	}
	return query, args
}

// DeleteSQL is the exact statement DeleteLogs runs for f.
func DeleteSQL(s *Store, f domain.LogFilter) (string, []any) {
	w, args := where(s.eng, f)
	return s.bind("DELETE FROM logs" + w), args
}

// RollupStatsSQL is the statement LogStats sends, bound for the engine, when the rollup answers
// q, and its arguments.
func RollupStatsSQL(s *Store, q domain.StatsQuery) (string, []any) {
	query, args := s.rollupStatsSQL(q)
	return s.bind(query), args
}

// SetFacetsMemory sets the bytes of distinct values s's Facets counts in the service before
// the store groups them instead: 0 makes the store group every time.
func SetFacetsMemory(s *Store, n int64) { s.facetsMemory = n }

// ReadDB is the store's read pool.
func ReadDB(s *Store) *sqlx.DB { return s.r }

// WriteDB is the store's write pool (the read pool too on PostgreSQL).
func WriteDB(s *Store) *sqlx.DB { return s.w }

// MigrateTo applies the migrations of engine ("sqlite" or "postgres") to db up to version only,
// leaving the schema as an older release made it.
func MigrateTo(ctx context.Context, db *sql.DB, engine string, version int64) error {
	p, err := provider(db, engine)
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}

// MigrateDownTo takes db back to version with the down migrations of engine ("sqlite" or
// "postgres"), as an operator returning to an earlier release would.
func MigrateDownTo(ctx context.Context, db *sql.DB, engine string, version int64) error {
	p, err := provider(db, engine)
	if err != nil {
		return err
	}
	_, err = p.DownTo(ctx, version)
	return err
}

// provider is the migrations of engine on db.
func provider(db *sql.DB, engine string) (*goose.Provider, error) {
	if engine == "postgres" {
		return migrations.Postgres(db)
	}
	return migrations.SQLite(db)
}

// SweepStatements are the statements SweepLogs runs for one project: the batch's bound, then one
// of the two deletes (each returning what it removed, for the stats rollup).
func SweepStatements(s *Store, now int64, limit int) []Statement {
	return []Statement{
		{"retention sweep: bound", s.bind(sweepBound), func(p string) []any { return []any{p, now, limit - 1} }},
		{"retention sweep: up to the bound", s.bind(sweepUpTo + " RETURNING project_id, time, level"), func(p string) []any { return []any{p, now, now, "00000000-0000-0000-0000-000000000000"} }},
		{"retention sweep: all expired", s.bind(sweepAll + " RETURNING project_id, time, level"), func(p string) []any { return []any{p, now} }},
	}
}

// Statement is one statement of the store with the arguments it runs with for a project.
type Statement struct {
	Name  string
	Query string
	Args  func(projectID string) []any
}

// PerProjectSQL is the store's other per-project statements (and the idempotency ones, keyed by
// scope), as the store runs them.
func PerProjectSQL(s *Store) []Statement {
	const scope, key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "k"
	now := time.Now().UTC()
	check, _, _ := sqlx.In("SELECT id, retention_days FROM projects WHERE id IN (?)"+s.eng.lockSuffix(), []string{"x"})
	return []Statement{
		{"project exists", s.bind(projectExists), func(p string) []any { return []any{p} }},
		{"batch project check", s.bind(check), func(p string) []any { return []any{p} }},
		{"get project", s.bind("SELECT " + projectColumns + " FROM projects WHERE id = ?"), func(p string) []any { return []any{p} }},
		{"idempotency look-up", s.bind(idempotencyLookup), func(string) []any { return []any{scope, key, now} }},
		{"idempotency expiry", s.bind(idempotencyExpire), func(string) []any { return []any{scope, key, now} }},
		{"idempotency insert", s.bind(idempotencyInsert), func(string) []any { return []any{scope, key, "f", 1, now} }},
	}
}

// ReadTailSQL is the statement ReadTail sends for q, bound for the engine, and its arguments.
func ReadTailSQL(s *Store, q domain.TailQuery) (string, []any) {
	query, args := s.readTailSQL(q)
	return s.bind(query), args
}

// Distribute makes the schema of db distributed as a Citus coordinator's store makes it when it
// opens, without migrating it: the schema as an earlier release left it on Citus.
func Distribute(ctx context.Context, db *sql.DB) error {
	_, err := distributeSchema(ctx, db)
	return err
}

// ContextSQL is the statements LogContext runs for q with its anchor at (t, id): the anchor's,
// the side before's and the side after's, with their arguments.
func ContextSQL(s *Store, q domain.ContextQuery, t int64, id string) (queries []string, args [][]any) {
	before, bargs := contextSide(s.eng, q, t, id, true, *q.Before)
	after, aargs := contextSide(s.eng, q, t, id, false, *q.After)
	return []string{s.bind(contextEntry), s.bind(before), s.bind(after)}, [][]any{contextArgs(q), bargs, aargs}
}

// ContextNearSQL is the statement LogContext tries first for q, whose id is a UUIDv7 of moment
// ms: the anchor within a range of time around it.
func ContextNearSQL(s *Store, q domain.ContextQuery, ms int64) (string, []any) {
	return s.bind(contextNear), contextNearArgs(q, ms)
}
