package sqlstore_test

import (
	"os"
	"testing"

	"example.com/obsvc/adapters/sqlstore/pgtest"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

var pg *pgtest.Server

// TestMain starts the PostgreSQL server, and the Citus cluster too under the citus build tag.
func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &pg, runOptions()...)) }

func openPostgres(t *testing.T) domain.Store { return storetest.OpenPostgres(t, pg.NewDatabase(t)) }

func TestPostgresStore(t *testing.T) {
	storetest.Run(t, openPostgres)
}
