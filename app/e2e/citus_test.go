//go:build citus

package e2e

import (
	"testing"

	"example.com/obsvc/adapters/sqlstore/pgtest"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/app/server"
)

// citus is the Citus cluster of this test binary (make test-citus).
var citus *pgtest.Citus

func runOptions() []pgtest.Option { return []pgtest.Option{pgtest.WithCitus(&citus)} }

// citusStores adds a Citus coordinator with two workers to the end-to-end stores; the service
// distributes the schema itself when it opens the store.
func citusStores() []namedStore { return []namedStore{{"citus", openCitusStore}} }

func openCitusStore(t *testing.T) server.Store {
	return storetest.OpenPostgres(t, citus.NewDatabase(t))
}
