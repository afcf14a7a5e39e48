package bench

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
	"example.com/obsvc/domain"
)

// BenchmarkIngestDuringSweep: POST /logs throughput (1,000-entry batches from 2 clients) while the
// retention sweep deletes 500,000 expired entries of another project (BENCH_ROWS when smaller;
// BENCH_SWEEP_ROWS sets the number itself),
// beside the same ingest with no sweep, in the same run. The two alternate in windows of
// sweepWindow until the sweep is done: a window with the sweep running, then one without, so
// that the table ingest grows, the cache and the machine's load weigh on both sides alike. The
// sweep is the server's own (domain SweepRetention), paced for the store as the background
// sweeper paces it; a window ends it through its context, as a shutdown would, and the next
// sweep window starts a new sweep, which goes on where the last stopped. One measurement per
// run, whatever b.N: each measurement needs a fresh set of expired entries. Target: ratio >= 0.9.
func BenchmarkIngestDuringSweep(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { ingestDuringSweep(b, benchSQLite(b)) })
	b.Run("postgres", func(b *testing.B) {
		st, _ := benchPostgres(b)
		ingestDuringSweep(b, st)
	})
}

// sweepRows is how many expired entries BenchmarkIngestDuringSweep sweeps: BENCH_SWEEP_ROWS, else
// BENCH_ROWS up to 500,000. SQLite's sweep is paced (under a thousand entries a second), so each
// entry costs the benchmark a millisecond or more; CI, which runs it only to keep it working,
// sweeps fewer than it loads elsewhere.
func sweepRows() int { return envCount("BENCH_SWEEP_ROWS", min(benchRows(), 500_000)) }

// sweepWindow is how long each window of the benchmark ingests, with the sweep or without it.
const sweepWindow = 2 * time.Second

func ingestDuringSweep(b *testing.B, st server.Store) {
	expired := sweepRows()
	cfg := server.DefaultConfig()
	cfg.MaxInFlight = 0
	cfg.LogLevel = "warn"
	svc, srv := servetest.Serve(b, cfg, st, nil)
	admin := domain.WithPrincipal(context.Background(), domain.Principal{Admin: true})
	ingest, err := svc.Core.CreateProject(admin, domain.ProjectInput{Name: "ingest"})
	if err != nil {
		b.Fatal(err)
	}
	old, err := svc.Core.CreateProject(admin, domain.ProjectInput{Name: "old"})
	if err != nil {
		b.Fatal(err)
	}
	// The expired entries go in through the store, 50,000 per transaction, a year old; then the
	// retention that expires them.
	year := time.Now().Add(-365 * 24 * time.Hour).UnixMilli()
	chunk := make([]domain.LogEntry, 0, 50_000)
	for i := range expired {
		chunk = append(chunk, domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: old.ID, Time: year + int64(i), Level: "info",
			Message: "GET /api/v1/orders completed in 12 ms with status 200"})
		if len(chunk) == cap(chunk) || i == expired-1 {
			if _, err := st.CreateLogs(context.Background(), chunk, domain.LogWrite{}); err != nil {
				b.Fatal(err)
			}
			chunk = chunk[:0]
		}
	}
	seven := 7
	if _, err := svc.Core.PatchProject(admin, old.ID, domain.ProjectPatch{RetentionDays: domain.Optional[int]{Set: true, Value: &seven}}); err != nil {
		b.Fatal(err)
	}
	// A ring of recent batches, reused: the server gives every entry its own id.
	bodies := make([][]byte, 64)
	now := time.Now().UnixMilli()
	for i := range bodies {
		rows := Batch(i, createBatch)
		for j := range rows {
			rows[j].Time = now - int64(len(bodies)*createBatch) + int64(i*createBatch+j)
		}
		bodies[i] = BatchJSON(ingest.ID, rows)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: createClients}}
	// ingestUntil posts batches from 2 clients until stop closes, and says how many rows went in.
	ingestUntil := func(stop <-chan struct{}) (int, time.Duration) {
		var sent atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, createClients)
		start := time.Now()
		for w := range createClients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; ; i += createClients {
					select {
					case <-stop:
						return
					default:
					}
					if err := postBatch(client, srv.URL, bodies[i%len(bodies)]); err != nil {
						errs <- err
						return
					}
					sent.Add(createBatch)
				}
			}()
		}
		wg.Wait()
		took := time.Since(start)
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		return int(sent.Load()), took
	}
	timed := func(d time.Duration) (int, time.Duration) {
		stop := make(chan struct{})
		time.AfterFunc(d, func() { close(stop) })
		return ingestUntil(stop)
	}

	var (
		withRows, withoutRows int
		with, without         time.Duration
		sweepTook             time.Duration
		deleted               int64
		windows               int
	)
	b.ResetTimer()
	for deleted < int64(expired) {
		windows++
		ctx, cancel := context.WithCancel(context.Background())
		stop := make(chan struct{})
		var res domain.SweepResult
		var sweepErr error
		go func() {
			defer close(stop)
			start := time.Now()
			res, sweepErr = svc.Core.SweepRetention(ctx, svc.SweepPace, nil)
			sweepTook += time.Since(start)
		}()
		end := time.AfterFunc(sweepWindow, cancel)
		n, took := ingestUntil(stop)
		end.Stop()
		cancel()
		withRows, with = withRows+n, with+took
		deleted += res.Deleted
		if sweepErr != nil && !errors.Is(sweepErr, context.Canceled) {
			b.Fatalf("sweep: %v", sweepErr)
		}
		n, took = timed(sweepWindow)
		withoutRows, without = withoutRows+n, without+took
	}
	b.StopTimer()
	if deleted != int64(expired) {
		b.Fatalf("the sweep deleted %d of %d", deleted, expired)
	}
	during, base := float64(withRows)/with.Seconds(), float64(withoutRows)/without.Seconds()
	b.ReportMetric(during, "sweep_rows/s")
	b.ReportMetric(base, "nosweep_rows/s")
	b.ReportMetric(during/base, "ratio")
	b.ReportMetric(float64(expired)/sweepTook.Seconds(), "swept_rows/s")
	b.Logf("swept %d expired entries in %v (%d per transaction, duty %v, %d windows) while ingesting %d rows; without a sweep %d rows in %v",
		expired, sweepTook.Round(time.Millisecond), svc.SweepPace.Batch, svc.SweepPace.Duty, windows, withRows, withoutRows, without.Round(time.Millisecond))
}
