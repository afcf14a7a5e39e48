// Command benchharness measures the service from outside, as a user runs it (make bench-e2e): it
// builds the service binary, starts a PostgreSQL cluster of its own on loopback, starts the
// service with its default settings (only the address and DATABASE_URL given), drives load from a
// separate process (./load) and prints each figure beside a baseline measured in the same run:
//
//   - ingest: POST /logs 1,000-entry batches from 2 clients against the same rows written by the
//     load process itself (COPY on PostgreSQL, a prepared INSERT on SQLite), 1,000 per
//     transaction, 2 workers;
//   - reads: p50 of GET /logs shapes against ./thin, the thinnest handler of the same SQL and JSON,
//     on one seeded table (ROWS entries, 10 projects, 30 days);
//   - MakeHat: calls per second over 50 connections against ./stock, the generated Twirp server
//     with no middleware, each server pinned to one core (wrk when installed, else ./load).
//   - search: the query-language questions beside VictoriaLogs (search.go);
//   - migrate: the in-place upgrade of a database the previous schema holds (migrate.go): time
//     to ready and peak RSS beside the same service started again on the migrated database.
//
// Everything it starts it stops, on failure and on Ctrl-C too; its children die with it
// (Pdeathsig). With -perf DIR it also records CPU profiles of the service under the ingest, read
// and MakeHat loads with perf(1) and writes their reports there; with -pprof DIR it starts the
// service with PPROF_ADDR and saves Go's CPU and allocation profiles of the same loads there.
//
//	go run ./app/bench/harness -rows 1000000
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/pgtest"
	"example.com/obsvc/domain"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchharness:", err)
		os.Exit(1)
	}
}

// options are the harness's settings.
type options struct {
	rows     int
	batches  int
	rounds   int
	hatTime  time.Duration
	perfDir  string
	pprofDir string
	pprofFor time.Duration
	keep     bool
	timeout  time.Duration
	// searchRows is the size of the query-language corpus (0: no search figures);
	// victoriaLogs the path of VictoriaLogs' binary, their baseline.
	searchRows   int
	victoriaLogs string
	// migrateRows is the size of the database the upgrade figures migrate (0: none).
	migrateRows int
	only        string // the stages to run, comma-separated; empty: all
}

// harness is one run: its directory, binaries, database cluster and processes.
type harness struct {
	opts   options
	dir    string
	ps     *procs
	pg     *pgtest.Server
	log    io.Writer
	figs   []figure
	pinned bool   // servers on core 0, load on core 1
	wrk    string // wrk's path, "" when not installed
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("benchharness", flag.ContinueOnError)
	fs.IntVar(&o.rows, "rows", 1_000_000, "entries in the read table")
	fs.IntVar(&o.batches, "batches", 200, "1,000-entry batches per ingest round, each side")
	fs.IntVar(&o.rounds, "rounds", 2, "ingest and MakeHat rounds, alternating ours and the baseline")
	fs.DurationVar(&o.hatTime, "hat-time", 5*time.Second, "length of one MakeHat round")
	fs.StringVar(&o.perfDir, "perf", "", "record CPU profiles of the service with perf(1) and write the reports to this `directory`")
	fs.StringVar(&o.pprofDir, "pprof", "", "start the service with PPROF_ADDR and save Go CPU and allocation profiles of each load, with their top entries, to this `directory`")
	fs.DurationVar(&o.pprofFor, "pprof-time", 10*time.Second, "length of each Go profile (-pprof)")
	fs.IntVar(&o.searchRows, "search-rows", 1_000_000, "entries in the query-language corpus, written to the service on PostgreSQL and SQLite and to VictoriaLogs (0: no search figures)")
	fs.StringVar(&o.victoriaLogs, "victorialogs", "", "VictoriaLogs' `binary`, the search figures' baseline (default: victoria-logs on PATH)")
	fs.IntVar(&o.migrateRows, "migrate-rows", 1_000_000, "entries in the database of the previous schema that the service upgrades at start-up, on PostgreSQL and SQLite (0: no upgrade figures)")
	fs.StringVar(&o.only, "only", "", "run only these stages, comma-separated: ingest, reads, makehat, search, migrate (default: all)")
	fs.BoolVar(&o.keep, "keep", false, "keep the run's directory (binaries, logs, databases) afterwards")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "stop everything and fail after this long")
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.rows < seedProjects {
		return fmt.Errorf("-rows must be at least %d", seedProjects)
	}
	if o.migrateRows != 0 && o.migrateRows < 1000 {
		return errors.New("-migrate-rows must be 0 or at least 1000")
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	dir, err := os.MkdirTemp("", "obsvc-bench-")
	if err != nil {
		return err
	}
	h := &harness{opts: o, dir: dir, ps: &procs{}, log: stderr}
	defer func() {
		h.ps.stopAll()
		if h.pg != nil {
			h.pg.Close()
		}
		if o.keep {
			h.logf("kept %s", dir)
		} else {
			_ = os.RemoveAll(dir)
		}
	}()
	if err := h.setUp(ctx); err != nil {
		return err
	}
	started := time.Now()
	run := func(stage string) bool { return o.only == "" || slices.Contains(strings.Split(o.only, ","), stage) }
	if run("ingest") {
		h.measureIngestPostgres(ctx)
		h.measureIngestSQLite(ctx)
	}
	if run("reads") {
		if err := h.measureReads(ctx); err != nil {
			return err
		}
	}
	if run("makehat") {
		h.measureMakeHat(ctx)
	}
	if run("search") && o.searchRows > 0 {
		if err := h.measureSearch(ctx); err != nil {
			return fmt.Errorf("search: %w", err)
		}
	}
	if run("migrate") && o.migrateRows > 0 {
		if err := h.measureMigrate(ctx); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("stopped: %w", context.Cause(ctx))
	}

	fmt.Fprintf(stdout, "\nobsvc outside harness, %s: %s rows (%d projects, %d days; search corpus %s; upgrade %s), %d vCPUs, %s, PostgreSQL %s, MakeHat load: %s; %s\n\n",
		time.Now().UTC().Format("2006-01-02"), thousands(int64(o.rows)), seedProjects, seedDays, thousands(int64(o.searchRows)), thousands(int64(o.migrateRows)), runtime.NumCPU(), runtime.Version(),
		serverVersion(ctx, h.pg), map[bool]string{true: "wrk", false: "Go (./load hat)"}[h.wrk != ""], map[bool]string{true: "servers pinned to core 0, load to core 1", false: "not pinned"}[h.pinned])
	writeTable(stdout, h.figs)
	h.logf("measured in %v", time.Since(started).Round(time.Second))
	for _, f := range h.figs {
		if f.Err != nil {
			return errors.New("some figures failed; see above")
		}
	}
	return nil
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.log, "bench-e2e: "+format+"\n", args...)
}

func (h *harness) bin(name string) string { return filepath.Join(h.dir, "bin", name) }

// setUp builds the binaries and starts the cluster.
func (h *harness) setUp(ctx context.Context) error {
	goTool := cmp(os.Getenv("GO"), "go")
	gomod, err := exec.CommandContext(ctx, goTool, "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
		return fmt.Errorf("run inside the repository: go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	h.logf("building into %s", h.dir)
	for _, argv := range [][]string{
		{goTool, "build", "-o", h.bin("obsvc"), "./app"},
		{goTool, "build", "-o", h.bin("") + "/", "./app/bench/harness/load", "./app/bench/harness/thin", "./app/bench/harness/stock"},
	} {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, out)
		}
	}
	if runtime.NumCPU() >= 2 {
		if _, err := exec.LookPath("taskset"); err == nil {
			h.pinned = true
		}
	}
	h.wrk, _ = exec.LookPath("wrk")
	if h.opts.perfDir != "" {
		if _, err := exec.LookPath("perf"); err != nil {
			return fmt.Errorf("-perf: perf(1) is not installed (apt-get install linux-perf)")
		}
		if err := os.MkdirAll(h.opts.perfDir, 0o755); err != nil {
			return err
		}
	}
	if h.opts.pprofDir != "" {
		if err := os.MkdirAll(h.opts.pprofDir, 0o755); err != nil {
			return err
		}
	}
	h.logf("starting PostgreSQL")
	if h.pg, err = startCluster(); err != nil {
		return err
	}
	return execAdmin(ctx, h.pg, "CREATE DATABASE ingest_api", "CREATE DATABASE ingest_raw", "CREATE DATABASE reads", "CREATE DATABASE search")
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// pin prefixes argv with taskset to run it on core when pinning is on.
func (h *harness) pin(core string, argv ...string) []string {
	if !h.pinned {
		return argv
	}
	return append([]string{"taskset", "-c", core}, argv...)
}

// startService starts the service binary as a user would: default settings, the address and
// DATABASE_URL given, its log (the access log at info) in a file of the run.
func (h *harness) startService(ctx context.Context, name, dbURL string, pinned bool) (*proc, string, error) {
	return h.start(ctx, name, dbURL, pinned, time.Minute)
}

// startServiceWithin is startService, unpinned, waiting up to within for the service to be
// ready (it migrates its database first).
func (h *harness) startServiceWithin(ctx context.Context, name, dbURL string, within time.Duration) (*proc, string, error) {
	return h.start(ctx, name, dbURL, false, within)
}

func (h *harness) start(ctx context.Context, name, dbURL string, pinned bool, within time.Duration) (*proc, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	argv := []string{h.bin("obsvc"), "-addr", addr}
	if pinned {
		argv = h.pin("0", argv...)
	}
	env := []string{"DATABASE_URL=" + dbURL}
	var pprofAddr string
	if h.opts.pprofDir != "" {
		if pprofAddr, err = freeAddr(); err != nil {
			return nil, "", err
		}
		env = append(env, "PPROF_ADDR="+pprofAddr)
	}
	p, err := h.ps.start("obsvc ("+name+")", filepath.Join(h.dir, "obsvc-"+name+".log"), nil, env, syscall.SIGTERM, argv...)
	if err != nil {
		return nil, "", err
	}
	p.pprof = pprofAddr
	base := "http://" + addr
	if err := waitHTTP(ctx, p, base+"/readyz", within); err != nil {
		p.halt(30 * time.Second)
		return nil, "", err
	}
	return p, base, nil
}

// createProject creates a project through the API and returns its id.
func createProject(ctx context.Context, base string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/projects", strings.NewReader(`{"name":"bench"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var p struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("POST /projects = %d %v", resp.StatusCode, err)
	}
	return p.ID, nil
}

// load runs the load generator once and decodes its answer into v.
func (h *harness) load(ctx context.Context, limit time.Duration, v any, args ...string) error {
	out, err := runOut(ctx, limit, h.pin("1", append([]string{h.bin("load")}, args...)...)...)
	if err != nil {
		return err
	}
	return json.Unmarshal(out, v)
}

// ingestResult is the answer of load post, copy and sqlite.
type ingestResult struct {
	Rows    int     `json:"rows"`
	Seconds float64 `json:"seconds"`
}

// ingestVersus alternates rounds of ours and raw (each given the round's seed) after a small
// warm-up round of each, and returns the total rates.
func (h *harness) ingestVersus(ctx context.Context, ours, raw func(seed, batches int) (ingestResult, error)) (oursRate, rawRate float64, err error) {
	var o, r ingestResult
	for round := -1; round < h.opts.rounds; round++ {
		batches, seed := h.opts.batches, round*h.opts.batches
		if round < 0 {
			batches, seed = 10, 1_000_000 // warm-up: connections, prepared statements, caches
		}
		a, err := ours(seed, batches)
		if err != nil {
			return 0, 0, err
		}
		b, err := raw(seed, batches)
		if err != nil {
			return 0, 0, err
		}
		if round >= 0 {
			o.Rows, o.Seconds = o.Rows+a.Rows, o.Seconds+a.Seconds
			r.Rows, r.Seconds = r.Rows+b.Rows, r.Seconds+b.Seconds
		}
	}
	return float64(o.Rows) / o.Seconds, float64(r.Rows) / r.Seconds, nil
}

func ingestArgs(mode, target, project string, seed, batches int) []string {
	flag := "-url"
	if mode != "post" {
		flag = "-db"
	}
	return []string{mode, flag, target, "-project", project, "-seed", strconv.Itoa(seed), "-batches", strconv.Itoa(batches), "-batch", "1000", "-clients", "2"}
}

// measureIngestPostgres: figure 1.
func (h *harness) measureIngestPostgres(ctx context.Context) {
	f := figure{Name: "Ingest, PostgreSQL: `POST /logs` 1,000-entry batches, 2 clients, vs COPY, 1,000 rows per transaction, 2 workers", Unit: "rows/s", Target: 0.8}
	h.logf("ingest on PostgreSQL")
	f.Ours, f.Baseline, f.Err = h.ingest(ctx, "postgres", h.pg.DatabaseURL("ingest_api"), func() (string, error) {
		return rawProject(ctx, h.pg.DatabaseURL("ingest_raw"), "")
	}, "copy", h.pg.DatabaseURL("ingest_raw"))
	h.figs = append(h.figs, f)
}

// measureIngestSQLite: figure 2.
func (h *harness) measureIngestSQLite(ctx context.Context) {
	f := figure{Name: "Ingest, SQLite: `POST /logs` 1,000-entry batches, 2 clients, vs a prepared INSERT, 1,000 rows per transaction, 2 workers", Unit: "rows/s", Target: 0.8}
	h.logf("ingest on SQLite")
	rawPath := filepath.Join(h.dir, "raw.db")
	f.Ours, f.Baseline, f.Err = h.ingest(ctx, "sqlite", "sqlite:"+filepath.Join(h.dir, "api.db"), func() (string, error) {
		return rawProject(ctx, "", rawPath)
	}, "sqlite", rawPath)
	h.figs = append(h.figs, f)
}

// ingest starts the service on dbURL, creates its project through the API and the baseline's
// with the store (the same migrations, so the same schema), and measures both.
func (h *harness) ingest(ctx context.Context, name, dbURL string, rawSetup func() (string, error), rawMode, rawTarget string) (float64, float64, error) {
	svc, base, err := h.startService(ctx, "ingest-"+name, dbURL, false)
	if err != nil {
		return 0, 0, err
	}
	defer svc.halt(30 * time.Second)
	project, err := createProject(ctx, base)
	if err != nil {
		return 0, 0, err
	}
	rawID, err := rawSetup()
	if err != nil {
		return 0, 0, err
	}
	stopPerf := h.profile(svc, "ingest-"+name)
	defer stopPerf()
	limit := 5 * time.Minute
	return h.ingestVersus(ctx,
		func(seed, batches int) (res ingestResult, err error) {
			return res, h.load(ctx, limit, &res, ingestArgs("post", base, project, seed, batches)...)
		},
		func(seed, batches int) (res ingestResult, err error) {
			return res, h.load(ctx, limit, &res, ingestArgs(rawMode, rawTarget, rawID, seed, batches)...)
		})
}

// rawProject migrates the baseline's database (a PostgreSQL URL, or else a SQLite file) with the
// service's own migrations and creates one project in it.
func rawProject(ctx context.Context, pgURL, sqlitePath string) (string, error) {
	var st interface {
		CreateProject(context.Context, domain.Project) error
		Close() error
	}
	var err error
	if pgURL != "" {
		st, err = sqlstore.OpenPostgres(ctx, pgURL, sqlstore.DefaultPostgresOptions())
	} else {
		st, err = sqlstore.OpenSQLite(ctx, sqlitePath, sqlstore.DefaultSQLiteOptions())
	}
	if err != nil {
		return "", err
	}
	id := "0196a000-0000-7000-8000-0000000000ff"
	now := time.Now().UTC()
	if err := st.CreateProject(ctx, domain.Project{ID: id, Name: "raw", CreatedAt: now, UpdatedAt: now}); err != nil {
		_ = st.Close()
		return "", err
	}
	return id, st.Close()
}

// latencyResult is the answer of load get.
type latencyResult struct {
	P50ms    []float64 `json:"p50_ms"`
	P90ms    []float64 `json:"p90_ms"`
	Bytes    []int     `json:"bytes"`
	SameBody bool      `json:"same_body"`
}

// measureReads: figures 3, 4 and 6 (the table's size is -rows).
func (h *harness) measureReads(ctx context.Context) error {
	h.logf("seeding %s entries by COPY", thousands(int64(h.opts.rows)))
	start := time.Now()
	t, err := seedRead(ctx, h.pg.DatabaseURL("reads"), h.opts.rows)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	h.logf("seeded in %v", time.Since(start).Round(time.Second))
	svc, base, err := h.startService(ctx, "reads", h.pg.DatabaseURL("reads"), false)
	if err != nil {
		return err
	}
	defer svc.halt(30 * time.Second)
	thinAddr, err := freeAddr()
	if err != nil {
		return err
	}
	thin, err := h.ps.start("thin", filepath.Join(h.dir, "thin.log"), nil, nil, syscall.SIGTERM, h.bin("thin"), "-addr", thinAddr, "-database-url", h.pg.DatabaseURL("reads"))
	if err != nil {
		return err
	}
	defer thin.halt(30 * time.Second)
	if err := waitTCP(ctx, thin, thinAddr, time.Minute); err != nil {
		return err
	}
	stopPerf := h.profile(svc, "reads")
	defer stopPerf()

	p := t.projects[3]
	from := seedStart + 10*day
	rows := thousands(int64(t.rows))
	shapes := []struct {
		name, path string
		next       bool
	}{
		{"Read p50, " + rows + " rows: 1,000-entry page of a project", "/logs?project_id=" + p + "&limit=1000", false},
		{"… its next page by cursor", "/logs?project_id=" + p + "&limit=1000", true},
		{"… 100-entry page, user + 7-day range", fmt.Sprintf("/logs?project_id=%s&user_id=user-7&start_time=%d&end_time=%d&limit=100", p, from, from+7*day-1), false},
		{"… 100-entry page, level, newest first", "/logs?project_id=" + p + "&log_level=error&order=desc&limit=100", false},
	}
	for _, s := range shapes {
		h.logf("read: %s", s.path)
		f := figure{Name: s.name, Unit: "ms", Target: 1.2}
		args := []string{"get", "-base", base + "," + "http://" + thinAddr, "-path", s.path, "-warm", "30", "-n", "300"}
		if s.next {
			args = append(args, "-next")
		}
		var res latencyResult
		if f.Err = h.load(ctx, 5*time.Minute, &res, args...); f.Err == nil {
			f.Ours, f.Baseline = res.P50ms[0], res.P50ms[1]
			f.Note = fmt.Sprintf("p90 %.2f / %.2f ms", res.P90ms[0], res.P90ms[1])
			if !res.SameBody {
				f.Err = fmt.Errorf("the service and the thin handler answered different bodies (%d and %d bytes)", res.Bytes[0], res.Bytes[1])
			}
		}
		h.figs = append(h.figs, f)
	}
	return nil
}

// hatResult is the answer of load hat.
type hatResult struct {
	Calls     int64   `json:"calls"`
	Non2xx    int64   `json:"non2xx"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"per_second"`
}

// measureMakeHat: figure 5, in protobuf and in JSON.
func (h *harness) measureMakeHat(ctx context.Context) {
	h.logf("MakeHat")
	svc, base, err := h.startService(ctx, "makehat", h.pg.DatabaseURL("reads"), true)
	if err != nil {
		h.figs = append(h.figs, figure{Name: "MakeHat", Unit: "calls/s", Target: 0.95, Err: err})
		return
	}
	defer svc.halt(30 * time.Second)
	stopPerf := h.profile(svc, "makehat")
	defer stopPerf()
	stockAddr, err := freeAddr()
	if err == nil {
		var stock *proc
		stock, err = h.ps.start("stock", filepath.Join(h.dir, "stock.log"), nil, nil, syscall.SIGTERM, h.pin("0", h.bin("stock"), "-addr", stockAddr)...)
		if err == nil {
			defer stock.halt(30 * time.Second)
			err = waitTCP(ctx, stock, stockAddr, time.Minute)
		}
	}
	for _, enc := range []string{"protobuf", "json"} {
		f := figure{Name: "MakeHat " + enc + ", default settings vs stock Twirp server, 50 connections, server on one core", Unit: "calls/s", Target: 0.95, Err: err}
		if err == nil {
			var ours, stock hatResult
			for round := -1; round < h.opts.rounds && f.Err == nil; round++ {
				d := h.opts.hatTime
				if round < 0 {
					d = 2 * time.Second // warm-up
				}
				var o, s hatResult
				if s, f.Err = h.hats(ctx, "http://"+stockAddr, enc, d); f.Err != nil {
					break
				}
				if o, f.Err = h.hats(ctx, base, enc, d); f.Err != nil {
					break
				}
				if round >= 0 {
					ours.Calls, ours.Non2xx, ours.Seconds = ours.Calls+o.Calls, ours.Non2xx+o.Non2xx, ours.Seconds+o.Seconds
					stock.Calls, stock.Non2xx, stock.Seconds = stock.Calls+s.Calls, stock.Non2xx+s.Non2xx, stock.Seconds+s.Seconds
				}
			}
			if f.Err == nil {
				f.Ours, f.Baseline = float64(ours.Calls)/ours.Seconds, float64(stock.Calls)/stock.Seconds
				if ours.Non2xx+stock.Non2xx > 0 {
					f.Note = fmt.Sprintf("refused (not counted): %d ours, %d stock", ours.Non2xx, stock.Non2xx)
				}
			}
		}
		h.figs = append(h.figs, f)
	}
}

// hats runs one MakeHat load of d against base with wrk when installed, else with load hat.
func (h *harness) hats(ctx context.Context, base, enc string, d time.Duration) (hatResult, error) {
	limit := d + time.Minute
	if h.wrk == "" {
		var res hatResult
		err := h.load(ctx, limit, &res, "hat", "-url", base, "-enc", enc, "-conns", "50", "-duration", d.String())
		return res, err
	}
	script := filepath.Join(h.dir, "makehat-"+enc+".lua")
	body, ctype := `\8\12`, "application/protobuf" // Size{inches: 12}
	if enc == "json" {
		body, ctype = `{"inches":12}`, "application/json"
	}
	lua := fmt.Sprintf("wrk.method = \"POST\"\nwrk.body = \"%s\"\nwrk.headers[\"Content-Type\"] = \"%s\"\n", strings.ReplaceAll(body, `"`, `\"`), ctype)
	if err := os.WriteFile(script, []byte(lua), 0o644); err != nil {
		return hatResult{}, err
	}
	out, err := runOut(ctx, limit, h.pin("1", h.wrk, "-t", "2", "-c", "50", "-d", strconv.Itoa(int(d.Seconds()))+"s", "-s", script, base+"/twirp/rpc.example.haberdasher.Haberdasher/MakeHat")...)
	if err != nil {
		return hatResult{}, err
	}
	return parseWrk(string(out))
}

// parseWrk reads the totals of wrk's report: "N requests in 5.00s, …" and, when some were not
// answered 2xx, "Non-2xx or 3xx responses: M".
func parseWrk(out string) (hatResult, error) {
	var res hatResult
	var total int64
	found := false
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if f := strings.Fields(line); len(f) >= 4 && f[1] == "requests" && f[2] == "in" {
			n, errN := strconv.ParseInt(f[0], 10, 64)
			d, errD := time.ParseDuration(strings.TrimSuffix(f[3], ","))
			if errN != nil || errD != nil {
				return res, fmt.Errorf("wrk: cannot read %q", line)
			}
			total, res.Seconds, found = n, d.Seconds(), true
		}
		if v, ok := strings.CutPrefix(line, "Non-2xx or 3xx responses:"); ok {
			res.Non2xx, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
		if strings.HasPrefix(line, "Socket errors:") {
			return res, fmt.Errorf("wrk: %s", line)
		}
	}
	if !found || res.Seconds == 0 {
		return res, fmt.Errorf("wrk: no totals in its report:\n%s", out)
	}
	res.Calls = total - res.Non2xx
	res.PerSecond = float64(res.Calls) / res.Seconds
	return res, nil
}

// profile records the CPU of p with perf until the returned func is called, which then writes
// the report to the -perf directory. Without -perf it does nothing. Only the service's own
// process is recorded; the baselines and the load are not.
func (h *harness) profile(p *proc, name string) func() {
	stopGo := h.goProfile(p, name)
	stopPerf := h.perfProfile(p, name)
	return func() {
		stopPerf()
		stopGo()
	}
}

// goProfile takes Go's CPU and allocation profiles of p (started with PPROF_ADDR under -pprof)
// over the first -pprof-time of a load; the returned func waits for them and saves each with
// the top entries of `go tool pprof`. Without -pprof it does nothing.
func (h *harness) goProfile(p *proc, name string) func() {
	if h.opts.pprofDir == "" || p.pprof == "" {
		return func() {}
	}
	secs := strconv.Itoa(max(1, int(h.opts.pprofFor.Seconds())))
	kinds := []struct{ kind, path, sample string }{
		{"cpu", "/debug/pprof/profile?seconds=" + secs, ""},
		{"allocs", "/debug/pprof/allocs?seconds=" + secs, "-sample_index=alloc_space"},
	}
	done := make(chan struct{}, len(kinds))
	for _, k := range kinds {
		go func() {
			defer func() { done <- struct{}{} }()
			file := filepath.Join(h.opts.pprofDir, name+"."+k.kind+".pb.gz")
			if err := fetchTo(file, "http://"+p.pprof+k.path, h.opts.pprofFor+30*time.Second); err != nil {
				h.logf("pprof %s: %v", k.kind, err)
				return
			}
			args := []string{"tool", "pprof", "-top", "-nodecount=40"}
			if k.sample != "" {
				args = append(args, k.sample)
			}
			out, err := exec.Command(cmp(os.Getenv("GO"), "go"), append(args, h.bin("obsvc"), file)...).Output()
			if err != nil {
				h.logf("pprof %s: go tool pprof: %v", k.kind, err)
				return
			}
			top := strings.TrimSuffix(file, ".pb.gz") + ".top.txt"
			if err := os.WriteFile(top, out, 0o644); err != nil {
				h.logf("pprof %s: %v", k.kind, err)
				return
			}
			h.logf("profile: %s", top)
		}()
	}
	return func() {
		for range kinds {
			<-done
		}
	}
}

// fetchTo saves what url answers to file.
func fetchTo(file, url string, limit time.Duration) error {
	c := http.Client{Timeout: limit}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}

// perfProfile records the CPU of p with perf(1) until the returned func is called (see profile).
func (h *harness) perfProfile(p *proc, name string) func() {
	if h.opts.perfDir == "" {
		return func() {}
	}
	data := filepath.Join(h.dir, name+".perf.data")
	rec, err := h.ps.start("perf record", filepath.Join(h.dir, name+".perf.log"), nil, nil, syscall.SIGINT,
		"perf", "record", "-F", "499", "-g", "-p", strconv.Itoa(p.cmd.Process.Pid), "-o", data)
	if err != nil {
		h.logf("perf: %v", err)
		return func() {}
	}
	time.Sleep(500 * time.Millisecond) // perf attaches
	return func() {
		rec.halt(30 * time.Second)
		for _, r := range []struct{ suffix, mode string }{{"self", "--no-children"}, {"cumulative", "--children"}} {
			out, err := exec.Command("perf", "report", "-i", data, "--stdio", r.mode, "--sort", "dso,symbol", "-g", "none", "--percent-limit", "0.5").Output()
			if err != nil {
				h.logf("perf report: %v", err)
				return
			}
			file := filepath.Join(h.opts.perfDir, name+"."+r.suffix+".txt")
			if err := os.WriteFile(file, out, 0o644); err != nil {
				h.logf("perf report: %v", err)
				return
			}
			h.logf("profile: %s", file)
		}
	}
}
