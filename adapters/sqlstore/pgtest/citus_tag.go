//go:build citus

package pgtest

// CitusTagged reports whether the test binary was built with the citus build tag (make
// test-citus, make bench-citus): only then does WithCitus start a cluster.
const CitusTagged = true
