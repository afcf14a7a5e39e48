package sqlstore

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"

	"example.com/obsvc/domain"
)

// ListSQL is the exact statement ListLogs runs for q, for plan tests.
func ListSQL(s *Store, q domain.LogQuery) (string, []any) {
	query, args := listQuery(q)
	return s.bind(query), args
}

// DeleteSQL is the exact statement DeleteLogs runs for f.
func DeleteSQL(s *Store, f domain.LogFilter) (string, []any) {
	w, args := where(f)
	return s.bind("DELETE FROM logs" + w), args
}

// ReadDB is the store's read pool.
func ReadDB(s *Store) *sqlx.DB { return s.r }

// WriteDB is the store's write pool (the read pool too on PostgreSQL).
func WriteDB(s *Store) *sqlx.DB { return s.w }

// MigrateTo applies the migrations of engine ("sqlite" or "postgres") to db up to version only,
// leaving the schema as an older release made it.
func MigrateTo(ctx context.Context, db *sql.DB, engine string, version int64) error {
	newProvider := sqliteProvider
	if engine == "postgres" {
		newProvider = postgresProvider
	}
	p, err := newProvider(db)
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}
