//go:build !citus

package e2e

import "example.com/obsvc/adapters/sqlstore/pgtest"

// runOptions: without the citus build tag (make test) no Citus cluster is started.
func runOptions() []pgtest.Option { return nil }

func citusStores() []namedStore { return nil }
