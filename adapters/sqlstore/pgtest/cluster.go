package pgtest

import "strings"

// StartCluster starts a cluster of its own for a program that is not a test, such as the outside
// benchmark harness (app/bench/harness), by the steps Run takes for tests: initdb and pg_ctl into
// a new temporary directory, listening on 127.0.0.1 on a free port, with PostgreSQL's durable
// defaults. settings are more server settings, each "name=value" (a later one wins over an
// earlier or built-in one). TEST_DATABASE_URL is not consulted. Close stops the cluster and
// removes its directory; a program killed before it leaves the cluster to the next Run or
// StartCluster, which stops and removes it (its owner is gone).
func StartCluster(settings ...string) (*Server, error) {
	var extra strings.Builder
	for _, s := range settings {
		extra.WriteString(" -c " + s)
	}
	return startOwn(extra.String())
}

// Close stops a cluster of StartCluster (pg_ctl stop -m fast) and removes its directory.
func (s *Server) Close() { s.shutdown() }

// DatabaseURL is the URL of database name on the server, as the superuser of URL.
func (s *Server) DatabaseURL(name string) string { return withDatabase(s.adminURL, name) }
