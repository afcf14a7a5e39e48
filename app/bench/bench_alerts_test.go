package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/app/server"
	"example.com/obsvc/domain"
)

// benchRules is BENCH_RULES, the alert rules of BenchmarkAlertsPostgres (default 1,000).
func benchRules() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_RULES")); err == nil && n > 0 {
		return n
	}
	return 1000
}

// BenchmarkAlertsPostgres measures alert rules on a table of BENCH_ROWS entries of one project
// spread over the last 10 minutes (six levels, every sixth an error): BENCH_RULES rules (five
// queries, windows of 1 to 5 minutes, every 10 s) evaluated through EvaluateDue, which leases,
// counts through the stats path and writes each rule's status. It reports the evaluation cost
// per rule, then POST /logs throughput (1,000-entry batches, 2 clients, for 10 s) alone and with
// every rule evaluated every 10 s beside it, and their ratio (the target: at least 0.95).
func BenchmarkAlertsPostgres(b *testing.B) {
	st, _ := benchPostgres(b)
	e := newBenchEnv(b, st, func(c *server.Config) { c.AlertTargets, c.MaxAlerts = "127.0.0.1", benchRules() })
	ctx := context.Background()
	admin := domain.WithPrincipal(ctx, domain.Principal{Admin: true})
	t0 := time.Now().Truncate(time.Second)
	levels := []string{"debug", "info", "info", "info", "warn", "error"}
	rows := benchRows()
	for done := 0; done < rows; {
		n := min(5000, rows-done)
		batch := make([]domain.LogEntry, n)
		for i := range batch {
			k := done + i
			batch[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: e.project, Time: t0.UnixMilli() - int64(k%600_000),
				Level: levels[k%len(levels)], Message: Message(k)}
		}
		if _, err := st.CreateLogs(ctx, batch, domain.LogWrite{}); err != nil {
			b.Fatal(err)
		}
		done += n
	}
	queries := []string{"level:error", "level:warn OR level:error", "orders", "-level:debug", `"status 500"`}
	nRules := benchRules()
	for i := range nRules {
		q := queries[i%len(queries)]
		if _, err := e.svc.Core.CreateAlert(admin, domain.AlertInput{ProjectID: e.project, Name: fmt.Sprint("rule ", i), Query: &q,
			WindowSeconds: 60 * (1 + i%5), IntervalSeconds: 10, Condition: domain.AlertCondition{Op: ">", Threshold: 100},
			Targets: []domain.AlertTarget{{Type: domain.TargetWebhook, URL: "http://127.0.0.1:9/"}}}); err != nil {
			b.Fatal(err)
		}
	}
	// Every round evaluates every rule: each round's time is 10 s after the last one's, the first
	// when the rules were made.
	round := 0
	first := time.Now()
	// One EvaluateDue takes at most domain.DueAlertsBatch rules: a round calls it until none is
	// left due.
	evaluate := func() (domain.EvaluateReport, error) {
		defer func() { round++ }()
		var all domain.EvaluateReport
		for {
			rep, err := e.svc.Core.EvaluateDue(ctx, "bench", first.Add(time.Duration(round)*10*time.Second))
			all.Evaluated += rep.Evaluated
			all.Failed += rep.Failed
			if err != nil || rep.Evaluated+rep.Failed == 0 {
				return all, err
			}
		}
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		rep, err := evaluate()
		if err != nil || rep.Evaluated != nRules {
			b.Fatalf("EvaluateDue = %+v, %v; want %d rules evaluated", rep, err, nRules)
		}
	}
	perRule := time.Since(start) / time.Duration(b.N*nRules)
	b.StopTimer()
	b.ReportMetric(float64(perRule.Microseconds())/1000, "ms/rule")

	// Ingest alone, then with every rule evaluated every 10 s.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: createClients}}
	ingest := func(d time.Duration) float64 {
		var sent atomic.Int64
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for w := range createClients {
			wg.Go(func() {
				for i := 0; time.Now().Before(deadline); i++ {
					body := BatchJSON(e.project, Batch(w*1_000_000+i, createBatch))
					if err := postBatch(client, e.url, body); err != nil {
						b.Error(err)
						return
					}
					sent.Add(createBatch)
				}
			})
		}
		wg.Wait()
		return float64(sent.Load()) / d.Seconds()
	}
	const span = 10 * time.Second
	alone := ingest(span)
	stop := make(chan struct{})
	var evals sync.WaitGroup
	var rounds atomic.Int64
	evals.Go(func() {
		for {
			began := time.Now()
			if _, err := evaluate(); err != nil {
				b.Error(err)
				return
			}
			rounds.Add(1)
			select {
			case <-stop:
				return
			case <-time.After(10*time.Second - time.Since(began)):
			}
		}
	})
	with := ingest(span)
	close(stop)
	evals.Wait()
	b.ReportMetric(alone, "ingest_rows/s")
	b.ReportMetric(with, "ingest_with_rules_rows/s")
	b.ReportMetric(with/alone, "ratio")
	b.Logf("%d rows, %d rules: %.2f ms per rule evaluation; ingest %.0f rows/s alone, %.0f with the rules (%d rounds of evaluation)",
		rows, nRules, float64(perRule.Microseconds())/1000, alone, with, rounds.Load())
}
