//go:build faults && citus

package faults

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// workerPort is the port of the worker that holds project's shard of logs.
func workerPort(t *testing.T, db *sql.DB, project string) string {
	t.Helper()
	var port string
	err := db.QueryRowContext(t.Context(), `SELECT nodeport::text FROM citus_shards
WHERE table_name = 'logs'::regclass AND shardid = get_shard_id_for_distribution_column('logs', $1::uuid)`, project).Scan(&port)
	if err != nil {
		t.Fatalf("where is project %s: %v", project, err)
	}
	return port
}

// preparedOn counts the prepared (two-phase, in doubt) transactions of the test database on
// the node listening on port, whose database has the coordinator's name and user.
func preparedOn(t *testing.T, coordinatorURL, port string) int {
	t.Helper()
	u, err := url.Parse(coordinatorURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = "127.0.0.1:" + port
	db, err := sql.Open("postgres", u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()").Scan(&n); err != nil {
		t.Logf("prepared transactions on the worker: %v", err)
		return -1
	}
	return n
}

// snapshot copies a loader's answer counts.
func (l *loader) snapshot() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.statuses)
}

func since(now, before map[string]int) map[string]int {
	d := map[string]int{}
	for k, v := range now {
		if v-before[k] != 0 {
			d[k] = v - before[k]
		}
	}
	return d
}

// activity is what the coordinator's sessions of the test database are doing.
func activity(db *sql.DB) []string {
	rows, err := db.QueryContext(context.Background(), `SELECT pid, coalesce(state, ''), coalesce(wait_event_type || '/' || wait_event, ''),
       coalesce(extract(epoch FROM now() - query_start)::int, 0), left(query, 160)
FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'`)
	if err != nil {
		return []string{err.Error()}
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var pid, secs int
		var state, wait, query string
		if err := rows.Scan(&pid, &state, &wait, &secs, &query); err != nil {
			return append(out, err.Error())
		}
		out = append(out, fmt.Sprintf("%s session %d %s wait=%s for %ds: %s", time.Now().Format("15:04:05"), pid, state, wait, secs, query))
	}
	return out
}

func getStatus(t *testing.T, u string) int {
	t.Helper()
	defer func(start time.Time) { t.Logf("GET %s answered in %v", u, time.Since(start).Round(time.Millisecond)) }(time.Now())
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(u)
	if err != nil {
		t.Errorf("GET %s: %v", u, err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestCitusWorkerStoppedMidLoad drives POST /logs for two projects, one on each worker, through a
// real service process on a Citus coordinator, and stops (as a crash would) the worker holding
// the first project's shards for a few seconds, then starts it again. While it is down, the
// first project's requests are answered 503 (no 500s, no hangs) and the second project's keep
// being answered 201 (and its reads 200); once the worker is back the same process answers 201
// for the first project again, without a restart; afterwards every acknowledged batch of both
// projects is stored whole.
func TestCitusWorkerStoppedMidLoad(t *testing.T) {
	dbURL := citus.NewDatabase(t)
	addr := freeAddr(t)
	srv := start(t, addr, "DATABASE_URL="+dbURL)
	defer func() {
		_ = srv.cmd.Process.Signal(syscall.SIGTERM)
		<-srv.done
	}()
	base := "http://" + addr
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// One project on each worker: new projects until both workers hold one.
	onPort := map[string]string{}
	for len(onPort) < 2 {
		p := createProject(t, base)
		if port := workerPort(t, db, p); onPort[port] == "" {
			onPort[port] = p
		}
	}
	downWorker, upWorker := citus.Worker(0), citus.Worker(1)
	hit := &loader{base: func() string { return base }, projectID: onPort[downWorker.Port()], batches: map[int]*outcome{}, statuses: map[string]int{}}
	spared := &loader{base: func() string { return base }, projectID: onPort[upWorker.Port()], batches: map[int]*outcome{}, statuses: map[string]int{}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wgs []*sync.WaitGroup
	for _, l := range []*loader{hit, spared} {
		wgs = append(wgs, l.run(ctx, 2))
	}
	time.Sleep(time.Second)

	downWorker.Stop(t)
	outage := time.Now()
	// Answers to requests that committed just before the stop may still be on their way.
	time.Sleep(200 * time.Millisecond)
	hitBefore, sparedBefore := hit.snapshot(), spared.snapshot()
	time.Sleep(1300 * time.Millisecond)
	list := func(p string) string { return base + "/logs?limit=10&project_id=" + url.QueryEscape(p) }
	if code := getStatus(t, list(hit.projectID)); code != http.StatusServiceUnavailable {
		t.Errorf("GET /logs of a project on the stopped worker: %d, want 503", code)
	}
	if code := getStatus(t, list(spared.projectID)); code != http.StatusOK {
		t.Errorf("GET /logs of a project on the running worker: %d, want 200", code)
	}
	// A batch with an Idempotency-Key also writes its idempotency record, distributed by its
	// scope (the API key and the batch's projects), not by project: for this client and project
	// it is on one worker or the other, so these are all 201 or all 503. Either is right.
	probe := &loader{base: func() string { return base }, projectID: spared.projectID, idem: true, batches: map[int]*outcome{}, statuses: map[string]int{}}
	client := &http.Client{Timeout: 10 * time.Second}
	for n := 1_000_000; n < 1_000_020; n++ {
		probe.batches[n] = &outcome{}
		probe.send(t.Context(), client, n)
	}
	fmt.Printf("FAULTS citus-worker-down/idempotent: 20 batches with an Idempotency-Key for the project on the running worker answered %v\n", probe.statuses)
	if n := probe.statuses["201"] + probe.statuses["503"]; n != 20 {
		t.Errorf("idempotent batches during the outage answered %v, want 201 or 503 only", probe.statuses)
	}
	time.Sleep(1000 * time.Millisecond)
	hitDuring, sparedDuring := since(hit.snapshot(), hitBefore), since(spared.snapshot(), sparedBefore)
	downWorker.Start(t)
	back := time.Now()
	// Batches whose PREPARE TRANSACTION reached the worker before it stopped are still in
	// doubt there, holding their rows and locks until the coordinator's 2PC recovery.
	inDoubt := preparedOn(t, dbURL, downWorker.Port())
	t.Logf("worker on port %s down for %v", downWorker.Port(), back.Sub(outage).Round(time.Millisecond))

	// What the coordinator does meanwhile, shown if the test fails.
	var sessions []string
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for i := 0; i < 8; i++ {
			sessions = append(sessions, activity(db)...)
			time.Sleep(time.Second)
		}
	}()
	defer func() {
		<-sampled
		if t.Failed() {
			for _, line := range sessions {
				t.Logf("after the restart: %s", line)
			}
			for _, line := range strings.Split(srv.log.String(), "\n") {
				if strings.Contains(line, `"status":500`) || strings.Contains(line, `"level":"ERROR"`) {
					t.Logf("service: %s", line)
				}
			}
		}
	}()

	// The same process serves the first project again once the worker is back.
	hitBack := hit.snapshot()
	for since(hit.snapshot(), hitBack)["201"] == 0 {
		if time.Since(back) > 30*time.Second {
			t.Fatalf("no batch of the project on the restarted worker was acknowledged within 30 s (answers since: %v)", since(hit.snapshot(), hitBack))
		}
		time.Sleep(100 * time.Millisecond)
	}
	recovered := time.Since(back).Round(time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	cancel()
	for _, wg := range wgs {
		waitOrFail(t, wg, 30*time.Second)
	}

	fmt.Printf("FAULTS citus-worker-down: stopped worker's project answered %v during the outage; other worker's project %v; %d transactions in doubt on the restarted worker; recovered %v after the worker was back\n",
		hitDuring, sparedDuring, inDoubt, recovered)
	for _, l := range []*loader{hit, spared} {
		if n := l.statuses["500"] + l.statuses["transport error"]; n != 0 {
			t.Errorf("project %s: %d answers of 500 or transport errors (%q), want none", l.projectID, n, l.errs)
		}
	}
	if hitDuring["503"] == 0 || hitDuring["201"] != 0 {
		t.Errorf("project on the stopped worker answered %v during the outage, want 503s only", hitDuring)
	}
	if sparedDuring["201"] == 0 || len(sparedDuring) != 1 {
		t.Errorf("project on the running worker answered %v during the outage, want 201s only", sparedDuring)
	}
	maps.Copy(spared.batches, probe.batches) // the same project: one census
	verdict(t, "citus-worker-down/stopped-worker", hit, census(t, base, hit.projectID))
	verdict(t, "citus-worker-down/running-worker", spared, census(t, base, spared.projectID))
}
