//go:build faults

package faults

// faultStores lists the stores the fault tests run against.
func faultStores() []storeEnv {
	return []storeEnv{{"sqlite", sqliteEnv}}
}
