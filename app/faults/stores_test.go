//go:build faults

package faults

import (
	"testing"

	"example.com/obsvc/adapters/sqlstore/pgtest"
)

// faultStores lists the stores the fault tests run against (with the citus build tag, the
// coordinator of a Citus cluster too; the service distributes the schema itself when it starts).
func faultStores() []storeEnv {
	stores := []storeEnv{{"sqlite", sqliteEnv}, {"postgres", postgresEnv}}
	if pgtest.CitusTagged {
		stores = append(stores, storeEnv{"citus", citusEnv})
	}
	return stores
}

func postgresEnv(t *testing.T) []string {
	return []string{"DATABASE_URL=" + pg.NewDatabase(t)}
}

func citusEnv(t *testing.T) []string {
	return []string{"DATABASE_URL=" + citus.NewDatabase(t)}
}
