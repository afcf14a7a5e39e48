//go:build !citus

package sqlstore_test

import "example.com/obsvc/adapters/sqlstore/pgtest"

// runOptions: without the citus build tag (make test) no Citus cluster is started; make
// test-citus runs the Citus tests.
func runOptions() []pgtest.Option { return nil }
