// Package migrations is the schema history of both engines of sqlstore, in one place: the
// embedded SQL files of each engine (sqlite/, postgres/) and, in Go, the migrations whose
// work SQL cannot do, because it needs a rule of the domain or a function the engine lacks:
//
//	00003  SQLite only: idempotency scopes hashed (SQLite has no SHA-256; PostgreSQL's 00003 is SQL)
//	00006  both: messages folded by domain.FoldCase, the subject index, the per-minute rollup
//	00009  both: levels made canonical by domain.CanonicalLevel
//	00011  both: the words of every message (domain.WordText), indexed
//	00012  SQLite: the terms of every entry's attributes, indexed (PostgreSQL's are in 00011);
//	       PostgreSQL: an ASCII message's words derived, not stored
//	00016  PostgreSQL: words and attribute terms indexed beside the entry's project
//	00017  both: the tail's index keyed by the batch alone
//	00018  both: the per-minute rollup held in the hourly one's rows
//	00019  both: the field filters' indexes end in time, not (time, id), and skip NULLs
//
// A migration, once released, never changes: its version and its text are what databases written
// by earlier releases were migrated with, so they migrate exactly as before. A change to the
// schema is a new version, in both engines where both need it; TestVersions lists them.
package migrations

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"

	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
)

//go:embed sqlite/*.sql
var sqliteMigrations embed.FS

//go:embed postgres/*.sql
var postgresMigrations embed.FS

// leastID sorts before every id the service issues, in text (SQLite) and as a uuid
// (PostgreSQL): where the batched walks of 00006 and 00009 start.
const leastID = "00000000-0000-0000-0000-000000000000"

// SQLite is the SQLite store's migrations on db: the embedded SQL files, and in Go what
// SQLite's SQL cannot do (it has no SHA-256, no Unicode case folding), 00009 among them, which
// makes stored levels canonical by the domain's rule.
func SQLite(db *sql.DB, opts ...goose.ProviderOption) (*goose.Provider, error) {
	files, err := fs.Sub(sqliteMigrations, "sqlite")
	if err != nil {
		return nil, err
	}
	opts = append(opts,
		goose.WithDisableGlobalRegistry(true),
		goose.WithGoMigrations(goose.NewGoMigration(3,
			&goose.GoFunc{RunTx: hashIdempotencyScopes},
			&goose.GoFunc{RunTx: forgetHashedScopes})),
		goose.WithGoMigrations(goose.NewGoMigration(6,
			&goose.GoFunc{RunTx: upSearch(searchUpSQLite, func(q string) string { return q })},
			&goose.GoFunc{RunTx: downSearch})),
		goose.WithGoMigrations(goose.NewGoMigration(levelMigrationVersion,
			&goose.GoFunc{RunTx: upCanonicalLevels(func(q string) string { return q }, writeLevelRows)},
			&goose.GoFunc{RunTx: downCanonicalLevels})),
		goose.WithGoMigrations(goose.NewGoMigration(wordsMigrationVersion,
			&goose.GoFunc{RunTx: upWordsSQLite},
			&goose.GoFunc{RunTx: downWordsSQLite})),
		goose.WithGoMigrations(goose.NewGoMigration(termsMigrationVersion,
			&goose.GoFunc{RunTx: upTermsSQLite},
			&goose.GoFunc{RunTx: downTermsSQLite})),
		goose.WithGoMigrations(goose.NewGoMigration(tailIndexVersion,
			&goose.GoFunc{RunTx: ddlOnly(tailIndexUpSQLite)},
			&goose.GoFunc{RunTx: ddlOnly(tailIndexDownSQLite)})),
		goose.WithGoMigrations(goose.NewGoMigration(minuteCountsVersion,
			&goose.GoFunc{RunTx: ddlOnly(minuteCountsUpSQLite())},
			&goose.GoFunc{RunTx: ddlOnly(minuteCountsDownSQLite())})),
		goose.WithGoMigrations(goose.NewGoMigration(fieldIndexesVersion,
			&goose.GoFunc{RunTx: ddlOnly(fieldIndexesDDL(true, false))},
			&goose.GoFunc{RunTx: ddlOnly(fieldIndexesDDL(false, false))})),
	)
	return goose.NewProvider(goose.DialectSQLite3, db, files, opts...)
}

// Postgres is the PostgreSQL store's migrations on db: the embedded SQL files, and in Go
// 00006, whose backfill folds messages with the domain's own case folding, and 00009, which
// makes stored levels canonical by the domain's rule.
func Postgres(db *sql.DB, opts ...goose.ProviderOption) (*goose.Provider, error) {
	files, err := fs.Sub(postgresMigrations, "postgres")
	if err != nil {
		return nil, err
	}
	opts = append(opts, goose.WithDisableGlobalRegistry(true),
		goose.WithGoMigrations(goose.NewGoMigration(6,
			&goose.GoFunc{RunTx: upSearch(searchUpPostgres, func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) })},
			&goose.GoFunc{RunTx: downSearch})),
		goose.WithGoMigrations(goose.NewGoMigration(levelMigrationVersion,
			&goose.GoFunc{RunTx: upCanonicalLevels(func(q string) string { return sqlx.Rebind(sqlx.DOLLAR, q) }, writeLevelBatch)},
			&goose.GoFunc{RunTx: downCanonicalLevels})),
		goose.WithGoMigrations(goose.NewGoMigration(wordsMigrationVersion,
			&goose.GoFunc{RunTx: upWordsPostgres},
			&goose.GoFunc{RunTx: downWordsPostgres})),
		goose.WithGoMigrations(goose.NewGoMigration(termsMigrationVersion,
			&goose.GoFunc{RunTx: sequentialDDL(derivedWordsUp)},
			&goose.GoFunc{RunTx: sequentialDDL(derivedWordsDown)})),
		goose.WithGoMigrations(goose.NewGoMigration(projectTermsVersion,
			&goose.GoFunc{RunTx: sequentialDDL(projectTermsUp)},
			&goose.GoFunc{RunTx: sequentialDDL(projectTermsDown)})),
		goose.WithGoMigrations(goose.NewGoMigration(tailIndexVersion,
			&goose.GoFunc{RunTx: sequentialDDL(tailIndexUpPostgres)},
			&goose.GoFunc{RunTx: sequentialDDL(tailIndexDownPostgres)})),
		goose.WithGoMigrations(goose.NewGoMigration(minuteCountsVersion,
			&goose.GoFunc{RunTx: sequentialDDL(minuteCountsUpPostgres())},
			&goose.GoFunc{RunTx: sequentialDDL(minuteCountsDownPostgres())})),
		goose.WithGoMigrations(goose.NewGoMigration(fieldIndexesVersion,
			&goose.GoFunc{RunTx: sequentialDDL(fieldIndexesDDL(true, true))},
			&goose.GoFunc{RunTx: sequentialDDL(fieldIndexesDDL(false, true))})))
	return goose.NewProvider(goose.DialectPostgres, db, files, opts...)
}

// Up applies the migrations that newProvider (SQLite or Postgres) gives on db and are not
// applied yet.
func Up(ctx context.Context, db *sql.DB, newProvider func(*sql.DB, ...goose.ProviderOption) (*goose.Provider, error), opts ...goose.ProviderOption) error {
	p, err := newProvider(db, opts...)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}

// scopeBatch is how many idempotency records hashIdempotencyScopes reads at a time.
const scopeBatch = 1000

// hashIdempotencyScopes is SQLite's migration 00003, the twin of
// postgres/00003_hash_idempotency_scope.sql: the first release stored an idempotency
// scope as its text, "KEYID|PROJECT,PROJECT,...", which overflows an index entry for a batch
// naming hundreds of projects; the domain now names a scope by the hex SHA-256 of that same
// text. Hashing the rows written before keeps their keys answering retries after an upgrade.
// Only texts hold '|', so hashed rows are never hashed again; the rows are read in key order,
// a batch at a time, so memory stays bounded however many there are.
func hashIdempotencyScopes(ctx context.Context, tx *sql.Tx) error {
	type row struct{ scope, key string }
	var after row
	for {
		rows, err := tx.QueryContext(ctx, "SELECT scope, key FROM idempotency_keys WHERE instr(scope, '|') > 0 AND (scope, key) > (?, ?) ORDER BY scope, key LIMIT ?", after.scope, after.key, scopeBatch)
		if err != nil {
			return fmt.Errorf("read idempotency scopes: %w", err)
		}
		var batch []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.scope, &r.key); err != nil {
				_ = rows.Close()
				return fmt.Errorf("read idempotency scopes: %w", err)
			}
			batch = append(batch, r)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("read idempotency scopes: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read idempotency scopes: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		for _, r := range batch {
			sum := sha256.Sum256([]byte(r.scope))
			if _, err := tx.ExecContext(ctx, "UPDATE idempotency_keys SET scope = ? WHERE scope = ? AND key = ?", hex.EncodeToString(sum[:]), r.scope, r.key); err != nil {
				return fmt.Errorf("hash idempotency scope: %w", err)
			}
		}
		after = batch[len(batch)-1]
	}
}

// forgetHashedScopes undoes 00003 as far as it can: a hash does not give back its text, so the
// records with hashed scopes, which the previous release could never match, are deleted.
func forgetHashedScopes(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, "DELETE FROM idempotency_keys WHERE instr(scope, '|') = 0"); err != nil {
		return fmt.Errorf("forget hashed idempotency scopes: %w", err)
	}
	return nil
}
