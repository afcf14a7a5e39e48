package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/adapters/sqlstore/pgtest"
	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
)

// benchTails is how many live tails stay open on the project while the ingest benchmark posts.
const benchTails = 100

// tailSettle is how long, untimed, a tailed round lets its newly opened tails settle: each reads
// on its own once and joins its project's hub, 100 of them a few hundred statements, which
// belong to opening a tail, not to the ingest the round times.
const tailSettle = 500 * time.Millisecond

// BenchmarkTailSQLite: ingest with 100 live tails open on the project beside none, and the
// 201-to-event latency of a tail, on SQLite.
func BenchmarkTailSQLite(b *testing.B) { benchTail(b, benchSQLite(b), "") }

// BenchmarkTailPostgres: the same on PostgreSQL, with what its backends spend per row.
func BenchmarkTailPostgres(b *testing.B) {
	st, dsn := benchPostgres(b)
	benchTail(b, st, pgtest.DatabaseName(dsn))
}

// benchTail runs the tail benchmarks on st; database, when not "", names the PostgreSQL database
// st uses, whose backends' CPU the ingest rounds report.
func benchTail(b *testing.B, st server.Store, database string) {
	// One key opens every tail, at once: room for them under the per-key tail limit, under the
	// three quarters of the total that a key holding tails may take, and under the in-flight
	// limit that each tail's start counts against.
	e := newBenchEnv(b, st, func(c *server.Config) {
		c.MaxTails, c.MaxTailsTotal, c.MaxInFlightPer = benchTails+10, 2*(benchTails+10), 0
	})
	e.database = database
	on := func(project, filter string) func(int) string {
		return func(i int) string {
			return e.url + "/logs/tail?project_id=" + project + strings.ReplaceAll(filter, "{i}", strconv.Itoa(i))
		}
	}
	// Every tail follows every entry: the service sends each entry 100 times.
	b.Run("ingest/all", func(b *testing.B) {
		benchTailIngest(b, e, on(e.project, ""), func(rows int) int { return rows })
	})
	// Each tail follows one user (user_id), as people watching their own requests would: the
	// batches name 1,000 users, so each tail takes one entry in 1,000.
	b.Run("ingest/by-user", func(b *testing.B) {
		benchTailIngest(b, e, on(e.project, "&user_id=user-{i}"), func(rows int) int { return rows / 1000 })
	})
	// Two parts of what by-user costs. no-match: the tails' filter matches no entry, so the
	// project's hub reads every entry back and no event is sent. idle-project: the tails follow
	// a project nobody writes to, so there is nothing to read, only 100 open streams.
	b.Run("ingest/no-match", func(b *testing.B) {
		benchTailIngest(b, e, on(e.project, "&user_id=nobody"), func(int) int { return 0 })
	})
	b.Run("ingest/idle-project", func(b *testing.B) {
		benchTailIngest(b, e, on(e.newProject(b, "idle"), ""), func(int) int { return 0 })
	})
	// The latency of a steady stream (each entry posted as soon as the last reached the tail),
	// which the project's hub reads (and so the tail sends) at most once per TAIL_COALESCE, and
	// of a quiet one (each entry posted after nothing was read for longer than that), read and
	// sent at once.
	b.Run("latency/steady", func(b *testing.B) { benchTailLatency(b, e, 0, tailSamples(200)) })
	b.Run("latency/quiet", func(b *testing.B) { benchTailLatency(b, e, e.cfg.TailCoalesce+10*time.Millisecond, tailSamples(100)) })
}

// tailSamples is BENCH_TAIL_SAMPLES when set, else n: the fewest entries a latency benchmark
// times. Each waits for a poll of the hub (about 100 ms), so the defaults take 20 and 11 s a
// store; CI, which runs the benchmarks only to keep them working, takes 20.
func tailSamples(n int) int { return envCount("BENCH_TAIL_SAMPLES", n) }

// benchTailIngest posts the same kind of batches as BenchmarkCreateLogs* (1,000 entries, 2
// clients) with no tail open and with 100 tails open (tail i on tailURL(i)), in pairs of rounds,
// one of each, their order alternating from pair to pair (so that neither side has the emptier
// table or the same place in PostgreSQL's checkpoint and autovacuum cycles), and reports both
// rates and their ratio (tailed over untailed): the median of the pairs' ratios, which one
// round disturbed by the machine moves little, and the ratio of the totals. The tails are real
// SSE readers over HTTP; after each tailed round the benchmark waits, untimed, until every tail
// has received the entries of the round it matches, want(rows of the round).
func benchTailIngest(b *testing.B, e *benchEnv, tailURL func(i int) string, want func(rows int) int) {
	const pairs = 8
	perRound := max(b.N, 4)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: createClients}}
	seed := 0
	bodies := func() [][]byte {
		out := make([][]byte, perRound)
		for i := range out {
			out[i] = BatchJSON(e.project, Batch(seed, createBatch))
			seed++
		}
		return out
	}
	// What the machine, the process and the database's backends spend while each side posts
	// (see cpuSpent).
	noneCPU, tailedCPU := cpuSpent{database: e.database}, cpuSpent{database: e.database}
	// BENCH_CPUPROFILE=dir writes a CPU profile of each round, per side, into dir, to compare
	// what the process does with tails open against without: go tool pprof -diff_base.
	if dir := os.Getenv("BENCH_CPUPROFILE"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatalf("BENCH_CPUPROFILE: %v", err)
		}
		name := filepath.Join(dir, strings.ReplaceAll(b.Name(), "/", "_"))
		noneCPU.profile, tailedCPU.profile = name+"-untailed", name+"-tailed"
	}
	post := func(bodies [][]byte, spent *cpuSpent) (took time.Duration) {
		spent.measure(func() {
			took = runConcurrent(b, createClients, len(bodies), func(i int) error { return postBatch(client, e.url, bodies[i]) })
		})
		return took
	}
	untailedRound := func() time.Duration {
		b.StopTimer()
		plain := bodies()
		b.StartTimer()
		return post(plain, &noneCPU)
	}
	tailedRound := func() time.Duration {
		b.StopTimer()
		withTails := bodies()
		ctx, cancel := context.WithCancel(context.Background())
		tails := openCountingTails(b, ctx, tailURL, benchTails)
		time.Sleep(tailSettle)
		b.StartTimer()
		took := post(withTails, &tailedCPU)
		b.StopTimer()
		err := tails.waitFor(int64(want(perRound*createBatch)), time.Minute)
		cancel()
		tails.wg.Wait()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		return took
	}
	var none, tailed time.Duration
	ratios := make([]float64, pairs)
	b.ResetTimer()
	for p := range pairs {
		var n, t time.Duration
		if p%2 == 0 {
			n = untailedRound()
			t = tailedRound()
		} else {
			t = tailedRound()
			n = untailedRound()
		}
		none, tailed = none+n, tailed+t
		ratios[p] = n.Seconds() / t.Seconds() // the same rows each side: rates in inverse ratio
	}
	b.StopTimer()
	slices.Sort(ratios)
	rows := pairs * perRound * createBatch
	tailedRate, noneRate := float64(rows)/tailed.Seconds(), float64(rows)/none.Seconds()
	b.ReportMetric(tailedRate, "tailed_rows/s")
	b.ReportMetric(noneRate, "untailed_rows/s")
	b.ReportMetric((ratios[pairs/2-1]+ratios[pairs/2])/2, "ratio")
	b.ReportMetric(tailedRate/noneRate, "ratio_of_totals")
	reportCPU(b, "untailed", noneCPU, rows)
	reportCPU(b, "tailed", tailedCPU, rows)
}

// reportCPU reports, where the machine has the counters, what one side's rounds spent while they
// posted: the busy cores of the machine and of this process (the service and the benchmark's
// clients and tails), and each per row, in microseconds; on PostgreSQL also what the backends
// of the benchmark's database spent per row (the service's statements; the rest of the machine
// is the server's background work and whatever else runs). With every core busy on both sides,
// the ratio is what the tails add per row, not a slower service; the backends' figure shows how
// much of that lands on the database, which runs the same statements on both sides.
func reportCPU(b *testing.B, side string, s cpuSpent, rows int) {
	if !s.known() {
		return
	}
	m, p := s.cores()
	b.ReportMetric(m, side+"_machine_cores")
	b.ReportMetric(p, side+"_process_cores")
	m, p, d := s.perRow(rows)
	b.ReportMetric(m, side+"_machine_us/row")
	b.ReportMetric(p, side+"_process_us/row")
	if s.database != "" && s.backends > 0 { // none found: the server is not on this machine
		b.ReportMetric(d, side+"_database_us/row")
	}
}

// countingTails are open tails that count the log events they read.
type countingTails struct {
	wg     sync.WaitGroup
	counts []atomic.Int64
	errs   chan error
}

// openCountingTails opens n tails, tail i on url(i), and returns once every one has begun its stream.
// Each reads its stream in large chunks and counts the "event: log" lines in it: a consumer as
// cheap as a client can be, so that what the benchmark sees is the cost to the service.
func openCountingTails(b *testing.B, ctx context.Context, url func(i int) string, n int) *countingTails {
	b.Helper()
	t := &countingTails{counts: make([]atomic.Int64, n), errs: make(chan error, n)}
	opened := make(chan struct{}, n)
	transport := &http.Transport{MaxIdleConnsPerHost: n}
	for i := range n {
		t.wg.Go(func() {
			err := countEvents(ctx, transport, url(i), &t.counts[i], opened)
			if err != nil && ctx.Err() == nil {
				t.errs <- err
			}
		})
	}
	for range n {
		select {
		case <-opened:
		case err := <-t.errs:
			b.Fatal(err)
		case <-time.After(time.Minute):
			b.Fatal("a tail did not open")
		}
	}
	return t
}

// waitFor waits until every tail has counted want events.
func (t *countingTails) waitFor(want int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		behind := 0
		for i := range t.counts {
			if t.counts[i].Load() < want {
				behind++
			}
		}
		if behind == 0 {
			return nil
		}
		select {
		case err := <-t.errs:
			return err
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d tails did not receive %d entries within %v", behind, len(t.counts), want, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var logEventLine = []byte("\nevent: log\n")

func countEvents(ctx context.Context, transport http.RoundTripper, url string, count *atomic.Int64, opened chan<- struct{}) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET /logs/tail = %d %.300s", resp.StatusCode, body)
	}
	opened <- struct{}{}
	// A line may straddle two reads: keep the last len(logEventLine)-1 bytes of each read in
	// front of the next.
	buf := make([]byte, 64<<10)
	keep := 0
	for {
		n, err := resp.Body.Read(buf[keep:])
		if n > 0 {
			end := keep + n
			count.Add(int64(bytes.Count(buf[:end], logEventLine)))
			keep = min(len(logEventLine)-1, end)
			copy(buf, buf[end-keep:end])
		}
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("a tail ended")
		}
		if err != nil {
			return err
		}
	}
}

// benchTailLatency posts one entry at a time, gap after the last reached the tail, and times, for
// each, the span from the 201 to its event at a tail open on the same instance; an event that
// comes before the 201 counts as 0.
func benchTailLatency(b *testing.B, e *benchEnv, gap time.Duration, minSamples int) {
	samples := max(b.N, minSamples)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	got := make(chan struct{}, samples)
	opened := make(chan struct{})
	tailDone := make(chan error, 1)
	go func() {
		_, err := apitest.ReadEvents(ctx, e.url+"/logs/tail?project_id="+e.project, "", func(ev apitest.Event) bool {
			if ev.Event == "open" {
				close(opened)
				return true
			}
			if ev.Event != "log" {
				return true
			}
			now := time.Now()
			var le rest.LogEntry
			if json.Unmarshal([]byte(ev.Data), &le) != nil {
				return false
			}
			mu.Lock()
			arrived[le.Message] = now
			mu.Unlock()
			got <- struct{}{}
			return true
		})
		tailDone <- err
	}()
	select {
	case <-opened:
	case err := <-tailDone:
		b.Fatalf("tail ended before it opened: %v", err)
	}
	client := &http.Client{}
	created := make([]time.Time, samples)
	b.ResetTimer()
	for i := range samples {
		time.Sleep(gap)
		body := fmt.Appendf(nil, `[{"project_id":%q,"time":%d,"level":"info","message":"latency %d"}]`, e.project, time.Now().UnixMilli(), i)
		if err := postBatch(client, e.url, body); err != nil {
			b.Fatal(err)
		}
		created[i] = time.Now()
		select {
		case <-got:
		case err := <-tailDone:
			b.Fatalf("tail ended: %v", err)
		case <-time.After(30 * time.Second):
			b.Fatalf("entry %d did not reach the tail within 30s", i)
		}
	}
	b.StopTimer()
	lat := make([]time.Duration, samples)
	mu.Lock()
	for i := range samples {
		at, ok := arrived[fmt.Sprintf("latency %d", i)]
		if !ok {
			b.Fatalf("entry %d never reached the tail", i)
		}
		lat[i] = max(0, at.Sub(created[i]))
	}
	mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
	b.ReportMetric(float64(samples), "samples")
}
