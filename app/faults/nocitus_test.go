//go:build faults && !citus

package faults

import "example.com/obsvc/adapters/sqlstore/pgtest"

// runOptions: without the citus build tag (make test-faults) no Citus cluster is started; make
// test-citus runs the fault tests on Citus.
func runOptions() []pgtest.Option { return nil }

func citusStores() []storeEnv { return nil }
