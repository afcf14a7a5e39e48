// Package faults holds the fault-injection tests of the service: a real server process is driven
// with concurrent POST /logs batches (createLogs) while it is killed with SIGKILL, while its database goes away, and
// while it drains on SIGTERM; afterwards every batch is counted. They run with `make test-faults`
// (build tag faults), not with `make test`, because they take a minute.
package faults
