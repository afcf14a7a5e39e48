package sqlstore

import (
	"fmt"
	"testing"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"
)

// TestCitusWorkerErrorsAreUnavailable: the errors a Citus coordinator gives when a worker goes
// away are KindUnavailable (503), whatever SQLSTATE Citus chose for them, and the same codes
// with other texts are not. The messages are the ones seen from Citus 13.2 with a worker
// stopped under load (make test-citus, TestCitusWorkerStoppedMidLoad).
func TestCitusWorkerErrorsAreUnavailable(t *testing.T) {
	for _, c := range []struct {
		code, msg string
		want      bool
	}{
		{"XX000", "connection to the remote node postgres@127.0.0.1:5433 failed with the following error: Connection refused", true},
		{"58030", "failed to COPY to shard 102034 on 127.0.0.1:44077", true},
		{"XX000", "server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally", true},
		// A statement the deadline cancelled, on the coordinator or relayed from a worker.
		{"57014", "canceling statement due to user request", true},
		{"57014", "canceling statement due to statement timeout", true},
		{"XX000", "canceling statement due to user request", true},
		{"58030", "could not read file \"base/1/2\": read only 0 of 8192 bytes", false},
		{"XX000", "cache lookup failed for relation 1", false},
	} {
		err := fmt.Errorf("create logs: %w", &pq.Error{Code: pqerror.Code(c.code), Message: c.msg})
		if got := (postgresEngine{citus: true}).isUnavailable(err); got != c.want {
			t.Errorf("%s %q: unavailable = %v, want %v", c.code, c.msg, got, c.want)
		}
	}
}
