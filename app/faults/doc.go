// Package faults holds the fault-injection tests of the service: a real server process is driven
// with concurrent POST /logs batches (createLogs) while it is killed with SIGKILL, while its database goes away, and
// while it drains on SIGTERM; afterwards every batch is counted. The retention tests kill a server
// with SIGKILL in the middle of sweeping 1,000,000 entries and run two sweeping servers on one
// PostgreSQL database. The hostile-load test lets one project key attack the service (OTLP
// count, attribute and gzip bombs, stats over 100,000 subjects, pathological searches and tails)
// and measures from outside the process the server's peak RSS and another project's page latency,
// against bounds stated as sizes and ratios. They run with `make test-faults` (build tag faults), not with `make test`,
// because they take minutes. With the citus build tag as well (make test-citus) the kill -9,
// drain and hostile-load tests also run on a Citus coordinator with two workers, and a worker is
// stopped and started under load (citus_test.go).
package faults
