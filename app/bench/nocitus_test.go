//go:build !citus

package bench

import "example.com/obsvc/adapters/sqlstore/pgtest"

func runOptions() []pgtest.Option { return nil }
