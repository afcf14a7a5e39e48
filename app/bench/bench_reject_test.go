package bench

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"example.com/obsvc/app/server"
)

// BenchmarkRejectedBatch compares what refusing a bad POST /logs body costs with storing a valid
// batch of the same size (10 MiB, the default body limit), on SQLite: time per request and bytes
// answered. Two bad bodies: `[{},{},…]` (3.5 million elements, refused by counting), and 10,000
// entries that each lack both required fields (refused by the per-entry check, with the error list
// capped). Targets: each costs no more than the valid batch, and answers under 64 KiB.
func BenchmarkRejectedBatch(b *testing.B) {
	e := newBenchEnv(b, benchSQLite(b), nil)
	cfg := server.DefaultConfig()
	size := int(cfg.MaxBodyBytes) - 64

	empties := padArray(size, func(int) string { return "{}" })
	n := cfg.MaxBatchEntries
	per := size / n
	entryOf := func(pad int) func(int) string {
		return func(int) string { return `{"pad":"` + strings.Repeat("p", pad) + `"}` }
	}
	badEntries := padArrayN(n, entryOf(per-len(`{"pad":""},`)))
	valid := padArrayN(n, func(int) string {
		head := fmt.Sprintf(`{"project_id":%q,"message":"`, e.project)
		return head + strings.Repeat("m", per-len(head)-len(`"},`)) + `"}`
	})
	bodies := []struct {
		name, body string
		status     int
	}{
		{"empty", empties, 413},
		{"bad_entries", badEntries, 400},
		{"valid", valid, 201},
	}
	for _, bd := range bodies {
		if len(bd.body) > int(cfg.MaxBodyBytes) || len(bd.body) < size*99/100 {
			b.Fatalf("%s body is %d bytes, want about %d", bd.name, len(bd.body), size)
		}
	}

	took := make([]time.Duration, len(bodies))
	answered := make([]int, len(bodies))
	b.ResetTimer()
	for range b.N {
		for i, bd := range bodies {
			start := time.Now()
			resp, err := http.Post(e.url+"/logs", "application/json", strings.NewReader(bd.body))
			if err != nil {
				b.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			took[i] += time.Since(start)
			if err != nil || resp.StatusCode != bd.status {
				b.Fatalf("%s: %d %v, want %d: %.300s", bd.name, resp.StatusCode, err, bd.status, got)
			}
			answered[i] = len(got)
		}
	}
	b.StopTimer()
	validTook := took[len(bodies)-1]
	for i, bd := range bodies {
		b.ReportMetric(float64(took[i].Milliseconds())/float64(b.N), bd.name+"_ms/op")
		b.ReportMetric(float64(answered[i]), bd.name+"_B_answered")
		if i < len(bodies)-1 {
			b.ReportMetric(float64(took[i])/float64(validTook), bd.name+"/valid")
		}
	}
}

// padArray is a JSON array of elements made by elem, as many as fit in size bytes.
func padArray(size int, elem func(int) string) string {
	var buf bytes.Buffer
	buf.Grow(size)
	buf.WriteByte('[')
	for i := 0; ; i++ {
		s := elem(i)
		if buf.Len()+len(s)+2 > size {
			break
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(s)
	}
	buf.WriteByte(']')
	return buf.String()
}

// padArrayN is a JSON array of n elements made by elem.
func padArrayN(n int, elem func(int) string) string {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i := range n {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(elem(i))
	}
	buf.WriteByte(']')
	return buf.String()
}
