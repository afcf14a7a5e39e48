package bench

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/app/server"
	"example.com/obsvc/domain"
)

// benchBlocks is BENCH_ABBA, the blocks of spans (alone, with, with, alone) of
// BenchmarkAlertsPostgres (default 3).
func benchBlocks() int { return envCount("BENCH_ABBA", 3) }

// benchRules is BENCH_RULES, the alert rules of BenchmarkAlertsPostgres (default 1,000).
func benchRules() int { return envCount("BENCH_RULES", 1000) }

// BenchmarkAlertsPostgres measures alert rules on a table of BENCH_ROWS entries of two projects,
// half each, spread over the 10 minutes before the rules' first evaluation (six levels, every
// sixth entry of a project an error): BENCH_RULES rules of one project (five queries, windows of
// 1 to 5 minutes, every 10 s) evaluated through EvaluateDue, which leases, counts and writes
// each rule's status. It reports the first evaluation of every rule on the instance (each
// query's window counted in SQL once), b.N evaluations of every rule that follow without
// ingest, then POST /logs throughput (1,000-entry batches of entries timed now, 2 clients) with
// no rules and with the rules, in BENCH_ABBA blocks of four spans of 15 s (alone, with, with,
// alone), the evaluation cost per rule during ingest, the ratio of the two throughputs (the
// target: at least 0.95) and the CPU spent per row on each side (reportCPU). A span with the
// rules before the blocks, in which every rule resolves and fires again, is reported apart. A
// span alone writes to the other project, which has no rules (so no query of a rule is matched
// against its batches), while no rule is evaluated; a span with the rules writes to the rules'
// project (its batches counted for their queries) while every rule is evaluated every 10 s.
func BenchmarkAlertsPostgres(b *testing.B) {
	st, _ := benchPostgres(b)
	e := newBenchEnv(b, st, func(c *server.Config) { c.AlertTargets, c.MaxAlerts = "127.0.0.1", benchRules() })
	ctx := context.Background()
	admin := domain.WithPrincipal(ctx, domain.Principal{Admin: true})
	// The rules first, then the entries: each entry's time lies in the 10 minutes before t0,
	// which the first rounds are evaluated at (rounds 10 s apart from t0 + 1 s), however long
	// the table takes to write.
	bare := e.newProject(b, "no rules")
	queries := []string{"level:error", "level:warn OR level:error", "orders", "-level:debug", `"status 500"`}
	nRules := benchRules()
	var ruleIDs []string
	for i := range nRules {
		q := queries[i%len(queries)]
		if r, err := e.svc.Core.CreateAlert(admin, domain.AlertInput{ProjectID: e.project, Name: fmt.Sprint("rule ", i), Query: &q,
			WindowSeconds: 60 * (1 + i%5), IntervalSeconds: 10, Condition: domain.AlertCondition{Op: ">", Threshold: 100},
			Targets: []domain.AlertTarget{{Type: domain.TargetWebhook, URL: "http://127.0.0.1:9/"}}}); err != nil {
			b.Fatal(err)
		} else {
			ruleIDs = append(ruleIDs, r.ID)
		}
	}
	// transitions counts the transitions in the rules' histories.
	transitions := func() int {
		n := 0
		for _, id := range ruleIDs {
			h, err := e.svc.Core.AlertHistory(admin, id)
			if err != nil {
				b.Fatal(err)
			}
			n += len(h)
		}
		return n
	}
	t0 := time.Now().Truncate(time.Second)
	levels := []string{"debug", "info", "info", "info", "warn", "error"}
	rows := benchRows()
	for done := 0; done < rows; {
		n := min(5000, rows-done)
		batch := make([]domain.LogEntry, n)
		for i := range batch {
			k := done + i
			// Every other entry to each project, so that the two projects' parts of the table
			// and of its indexes that lead with the project are of one size.
			project := e.project
			if k%2 == 1 {
				project = bare
			}
			batch[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: project, Time: t0.UnixMilli() - int64(k%600_000),
				Level: levels[(k/2)%len(levels)], Message: Message(k)}
		}
		if _, err := st.CreateLogs(ctx, batch, domain.LogWrite{}); err != nil {
			b.Fatal(err)
		}
		done += n
	}
	// Every round evaluates every rule: each round's time is 10 s after the last one's, the first
	// at t0 + 1 s; once ingest runs beside them, the time it starts when that is later.
	var mu sync.Mutex
	at := t0.Add(time.Second)
	ingesting := false
	// One EvaluateDue takes at most domain.DueAlertsBatch rules: a round calls it until none is
	// left due.
	evaluate := func() (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		began := time.Now()
		now := at
		if ingesting && began.After(now) {
			now = began
		}
		at = now.Add(10 * time.Second)
		var all domain.EvaluateReport
		for {
			rep, err := e.svc.Core.EvaluateDue(ctx, "bench", now)
			all.Evaluated += rep.Evaluated
			all.Failed += rep.Failed
			if err != nil {
				return 0, err
			}
			if rep.Evaluated+rep.Failed == 0 {
				break
			}
		}
		if all.Evaluated != nRules {
			return 0, fmt.Errorf("EvaluateDue = %+v; want %d rules evaluated", all, nRules)
		}
		return time.Since(began), nil
	}
	perRule := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(nRules) }
	first, err := evaluate()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, err := evaluate(); err != nil {
			b.Fatal(err)
		}
	}
	idle := time.Since(start) / time.Duration(b.N)
	b.StopTimer()

	// Ingest alone and with every rule evaluated every 10 s, in spans alone, with, with, alone.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: createClients}}
	var seq atomic.Int64
	ingest := func(project string, d time.Duration) float64 {
		var sent atomic.Int64
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for range createClients {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					rows := Batch(int(seq.Add(1)), createBatch)
					now := time.Now().UnixMilli()
					for i := range rows {
						rows[i].Time = now
					}
					if err := postBatch(client, e.url, BatchJSON(project, rows)); err != nil {
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
	const span = 15 * time.Second
	abbaBlocks := benchBlocks()
	var rounds []time.Duration
	withRules := func() float64 {
		stop := make(chan struct{})
		var evals sync.WaitGroup
		evals.Go(func() {
			for {
				d, err := evaluate()
				if err != nil {
					b.Error(err)
					return
				}
				rounds = append(rounds, d)
				select {
				case <-stop:
					return
				case <-time.After(10*time.Second - d):
				}
			}
		})
		with := ingest(e.project, span)
		close(stop)
		evals.Wait()
		return with
	}
	mu.Lock()
	ingesting = true
	mu.Unlock()
	// First a span with the rules that is not one of the blocks: every rule fired at the first
	// evaluation, on the entries written before t0, and its windows, now minutes later, hold
	// none of them, so each resolves at the span's first round and fires again at its second
	// (once ingest has filled its window), each transition written alone with its history and
	// notification. The blocks then measure the steady state, every rule firing, with no
	// transition.
	before := transitions()
	flipping := withRules()
	flipRounds := rounds
	rounds = nil
	flipped := transitions() - before
	// Blocks of alone, with, with, alone: a checkpoint or a slow second falls on either side
	// about as often. Each span also records the machine's busy CPU time (all processes: this
	// one, PostgreSQL's) per row written, which tells work from waiting: a side that
	// loses its rate to waiting (a lock, the evaluator) keeps its CPU per row and leaves cores
	// idle.
	var alone, with float64
	var aloneCPU, withCPU cpuSpent
	var spans []string
	for range abbaBlocks {
		for _, rules := range []bool{false, true, true, false} {
			side, name := &aloneCPU, "alone"
			if rules {
				side, name = &withCPU, "with"
			}
			machine := side.machine
			var r float64
			side.measure(func() {
				if rules {
					r = withRules()
				} else {
					r = ingest(bare, span)
				}
			})
			if rules {
				with += r
			} else {
				alone += r
			}
			spans = append(spans, fmt.Sprintf("%s %.0f (%.1f µs)", name, r, (side.machine-machine)*1e6/(r*span.Seconds())))
		}
	}
	var busy time.Duration
	for _, d := range rounds {
		busy += d
	}
	during := busy / time.Duration(max(len(rounds), 1))
	b.ReportMetric(perRule(first), "first_ms/rule")
	b.ReportMetric(perRule(idle), "idle_ms/rule")
	b.ReportMetric(perRule(during), "ms/rule")
	b.ReportMetric(alone/float64(2*abbaBlocks), "ingest_rows/s")
	b.ReportMetric(with/float64(2*abbaBlocks), "ingest_with_rules_rows/s")
	b.ReportMetric(with/alone, "ratio")
	aloneRows, withRows := int(alone*span.Seconds()), int(with*span.Seconds())
	reportCPU(b, "alone", aloneCPU, aloneRows)
	reportCPU(b, "with_rules", withCPU, withRows)
	b.Logf("%d rows, %d rules: first evaluation %.3f ms per rule, then %.3f ms without ingest, %.3f ms beside it (%d rounds); ingest %.0f rows/s alone, %.0f with the rules",
		rows, nRules, perRule(first), perRule(idle), perRule(during), len(rounds), alone/float64(2*abbaBlocks), with/float64(2*abbaBlocks))
	if aloneCPU.known() && withCPU.known() {
		a, _, _ := aloneCPU.perRow(aloneRows)
		w, _, _ := withCPU.perRow(withRows)
		b.Logf("the machine's busy CPU per row: %.1f µs alone, %.1f µs with the rules (%.3f)", a, w, w/a)
	}
	b.Logf("rows/s by span (the machine's busy CPU per row): %s", strings.Join(spans, ", "))
	b.Logf("%d transitions before ingest; then a span in which the rules made %d: %.0f rows/s, rounds of %s", before, flipped, flipping, roundTimes(flipRounds))
	steady := transitions() - before - flipped
	b.Logf("during the blocks: %d transitions, rounds of %s", steady, roundTimes(rounds))
	if steady != 0 {
		b.Errorf("the rules made %d transitions during the blocks, which measure evaluations without any", steady)
	}
}

// roundTimes lists the durations of evaluation rounds, in milliseconds.
func roundTimes(ds []time.Duration) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = strconv.FormatInt(d.Milliseconds(), 10)
	}
	return strings.Join(out, ", ") + " ms"
}
