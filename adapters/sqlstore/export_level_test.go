package sqlstore

import (
	"context"
	"database/sql"

	"example.com/obsvc/adapters/sqlstore/migrations"
)

// DistributeSchema distributes the current schema on a Citus coordinator as OpenPostgres does
// after migrating, so that a test can fill an older schema's distributed tables.
func DistributeSchema(ctx context.Context, db *sql.DB) error {
	_, err := distributeSchema(ctx, db)
	return err
}

// LevelMigrationSQL is every per-project statement of the level migration (00009) as it runs on
// PostgreSQL, with arguments for a project.
func LevelMigrationSQL() []Statement {
	var out []Statement
	for _, st := range migrations.LevelStatements() {
		out = append(out, Statement{st.Name, st.Query, st.Args})
	}
	return out
}

// WordsMigrationSQL is every per-project statement of the words migration (00011) as it runs on
// PostgreSQL, with arguments for a project.
func WordsMigrationSQL() []Statement {
	var out []Statement
	for _, st := range migrations.WordsStatements() {
		out = append(out, Statement{st.Name, st.Query, st.Args})
	}
	return out
}
