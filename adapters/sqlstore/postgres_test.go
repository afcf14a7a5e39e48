package sqlstore_test

import (
	"os"
	"testing"

	"example.com/obsvc/adapters/sqlstore/pgtest"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

var pg *pgtest.Server

// citus is the Citus cluster of this test binary under the citus build tag (make test-citus).
var citus *pgtest.Citus

// TestMain starts the PostgreSQL server, and the Citus cluster too under the citus build tag.
func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &pg, pgtest.WithCitus(&citus))) }

func openPostgres(t *testing.T) domain.Store { return storetest.OpenPostgres(t, pg.NewDatabase(t)) }

func TestPostgresStore(t *testing.T) {
	storetest.Run(t, openPostgres)
}
