// Package bench measures the service. Its tests are the in-process benchmarks (make bench, make
// bench-citus); harness/ is the outside harness (make bench-e2e), which runs the service binary and
// its load as separate processes. Both send the rows this file makes, so that their figures are
// of the same entries.
package bench

import (
	"bytes"
	"fmt"
	"strconv"
)

// Row is one realistic log entry of a benchmark.
type Row struct {
	Time           int64
	Level, Message string
	Subject, User  string
}

// Batch makes batch number seed of n entries; every benchmark and every ingest mode of the
// outside harness sends the same rows for the same seed.
func Batch(seed, n int) []Row {
	levels := []string{"debug", "info", "info", "info", "warn", "error"}
	out := make([]Row, n)
	for i := range out {
		k := seed*n + i
		out[i] = Row{
			Time:    1_795_000_000_000 + int64(k),
			Level:   levels[k%len(levels)],
			Message: Message(k),
			Subject: "checkout",
			User:    "user-" + strconv.Itoa(k%1000),
		}
	}
	return out
}

// Message is the message of entry k: an access log line.
func Message(k int) string {
	return fmt.Sprintf("GET /api/v1/orders/%d completed in %d ms with status %d for tenant %d", k, k%900, 200+k%5, k%37)
}

// BatchJSON is the body of POST /logs for rows.
func BatchJSON(projectID string, rows []Row) []byte {
	return jsonArray(rows, func(buf *bytes.Buffer, r Row) {
		fmt.Fprintf(buf, `{"project_id":%q,"time":%d,"level":%q,"message":%q,"subject":%q,"user_id":%q}`, projectID, r.Time, r.Level, r.Message, r.Subject, r.User)
	})
}

// jsonArray is a JSON array of one element per row, each written by entry.
func jsonArray(rows []Row, entry func(buf *bytes.Buffer, r Row)) []byte {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, r := range rows {
		if i > 0 {
			buf.WriteByte(',')
		}
		entry(&buf, r)
	}
	buf.WriteByte(']')
	return buf.Bytes()
}
