//go:build citus

package bench

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/app/server"
)

func benchCitus(b *testing.B) server.Store { return storetest.OpenPostgres(b, citus.NewDatabase(b)) }

// BenchmarkCitusVersusPostgres runs the same load through the service on a Citus coordinator with
// two workers and on plain PostgreSQL, in the same run: POST /logs (1,000-entry batches from 2
// clients) and GET /logs pages of 100 entries (2 clients). All servers share this machine's
// cores, so the ratio is the coordinator's cost here, not what more machines would give (README,
// Scaling out).
func BenchmarkCitusVersusPostgres(b *testing.B) {
	onCitus := newBenchEnv(b, benchCitus(b), nil)
	pgStore, _ := benchPostgres(b)
	onPostgres := newBenchEnv(b, pgStore, nil)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: createClients}}
	batches := max(b.N, 4) * 4
	bodies := func(e *benchEnv) [][]byte {
		out := make([][]byte, batches)
		for i := range out {
			out[i] = BatchJSON(e.project, Batch(i, createBatch))
		}
		return out
	}
	citusBodies, pgBodies := bodies(onCitus), bodies(onPostgres)
	list := func(e *benchEnv) func(int) error {
		return func(i int) error {
			resp, err := client.Get(fmt.Sprintf("%s/logs?project_id=%s&limit=100&start_time=%d", e.url, e.project, i))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET /logs: %s", resp.Status)
			}
			return nil
		}
	}
	b.ResetTimer()
	ingestCitus := runConcurrent(b, createClients, batches, func(i int) error { return postBatch(client, onCitus.url, citusBodies[i]) })
	ingestPG := runConcurrent(b, createClients, batches, func(i int) error { return postBatch(client, onPostgres.url, pgBodies[i]) })
	reads := batches * 10
	readCitus := runConcurrent(b, createClients, reads, list(onCitus))
	readPG := runConcurrent(b, createClients, reads, list(onPostgres))
	b.StopTimer()
	rate := func(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }
	b.ReportMetric(rate(batches*createBatch, ingestCitus), "citus_rows/s")
	b.ReportMetric(rate(batches*createBatch, ingestPG), "postgres_rows/s")
	b.ReportMetric(ingestPG.Seconds()/ingestCitus.Seconds(), "ingest_ratio")
	b.ReportMetric(rate(reads, readCitus), "citus_pages/s")
	b.ReportMetric(rate(reads, readPG), "postgres_pages/s")
	b.ReportMetric(readPG.Seconds()/readCitus.Seconds(), "read_ratio")
}
