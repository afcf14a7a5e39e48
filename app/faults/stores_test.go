//go:build faults

package faults

import "testing"

// faultStores lists the stores the fault tests run against.
func faultStores() []storeEnv {
	return []storeEnv{{"sqlite", sqliteEnv}, {"postgres", postgresEnv}}
}

func postgresEnv(t *testing.T) []string {
	return []string{"DATABASE_URL=" + pg.NewDatabase(t)}
}
