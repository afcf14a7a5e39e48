//go:build faults

package faults

import "testing"

// faultStores lists the stores the fault tests run against (with the citus build tag, a Citus
// cluster too: citus_test.go).
func faultStores() []storeEnv {
	return append([]storeEnv{{"sqlite", sqliteEnv}, {"postgres", postgresEnv}}, citusStores()...)
}

func postgresEnv(t *testing.T) []string {
	return []string{"DATABASE_URL=" + pg.NewDatabase(t)}
}
