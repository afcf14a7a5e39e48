//go:build faults

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"example.com/obsvc/adapters/sqlstore/pgtest"
)

// pg is the PostgreSQL server of the fault tests.
var pg *pgtest.Server

// citus is the Citus cluster of the fault tests under the citus build tag (make test-citus): a
// coordinator and two workers.
var citus *pgtest.Citus

// batchSize is the entries per batch; every entry of batch n carries user_id "batch-n".
const batchSize = 50

// serverBin is the service binary built once for the package.
var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "obsvc-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "obsvc")
	build := exec.Command("go", "build", "-o", serverBin, "example.com/obsvc/app")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build server:", err)
		os.Exit(1)
	}
	code := pgtest.Run(m, &pg, pgtest.WithCitus(&citus))
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// server is one running server process.
type server struct {
	t    *testing.T
	cmd  *exec.Cmd
	addr string
	log  *bytes.Buffer
	done chan error
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs the server on addr with the given environment and waits until it is ready.
func start(t *testing.T, addr string, env ...string) *server {
	t.Helper()
	cmd := exec.Command(serverBin)
	cmd.Env = append(os.Environ(), append([]string{"ADDR=" + addr, "LOG_LEVEL=warn", "SHUTDOWN_TIMEOUT=10s", "MAX_IN_FLIGHT=0"}, env...)...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, addr: addr, log: &log, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		select {
		case err := <-s.done:
			t.Fatalf("server exited during start: %v\n%s", err, log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("server not ready in time:\n%s", log.String())
	return nil
}

func (s *server) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// outcome is what the client learnt of one batch.
type outcome struct {
	acked    bool // answered 201
	attempts int
}

// loader sends batches from several workers until stopped.
type loader struct {
	base      func() string // the server's current base URL
	projectID string
	idem      bool // send Idempotency-Key and retry until answered

	mu       sync.Mutex
	errs     []string // the first transport errors, for the report
	batches  map[int]*outcome
	next     int
	statuses map[string]int
}

func (l *loader) record(n int, acked bool, status string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.batches[n]
	o.attempts++
	o.acked = o.acked || acked
	l.statuses[status]++
}

func (l *loader) body(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range batchSize {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"project_id":%q,"message":"entry %d of batch %d","user_id":"batch-%d","time":%d}`, l.projectID, i, n, n, n*batchSize+i)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// send posts batch n once and reports whether it was acknowledged.
func (l *loader) send(ctx context.Context, client *http.Client, n int) bool {
	req, _ := http.NewRequestWithContext(ctx, "POST", l.base()+"/logs", bytes.NewReader(l.body(n)))
	req.Header.Set("Content-Type", "application/json")
	if l.idem {
		req.Header.Set("Idempotency-Key", fmt.Sprintf("batch-%d", n))
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			l.record(n, false, "cancelled by the test")
			return false
		}
		l.record(n, false, "transport error")
		l.mu.Lock()
		if len(l.errs) < 5 {
			l.errs = append(l.errs, err.Error())
		}
		l.mu.Unlock()
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	l.record(n, resp.StatusCode == 201, fmt.Sprint(resp.StatusCode))
	return resp.StatusCode == 201
}

func (l *loader) run(ctx context.Context, workers int) *sync.WaitGroup {
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				l.mu.Lock()
				n := l.next
				l.next++
				l.batches[n] = &outcome{}
				l.mu.Unlock()
				for !l.send(ctx, client, n) && ctx.Err() == nil {
					time.Sleep(20 * time.Millisecond) // the server may be down: back off a little
					if !l.idem {
						break // without an idempotency key a retry could store the batch twice
					}
				}
			}
		}()
	}
	return &wg
}

// census counts the stored entries of every batch by reading the project's whole listing.
func census(t *testing.T, base, projectID string) map[int]int {
	t.Helper()
	counts := map[int]int{}
	next := base + "/logs?project_id=" + url.QueryEscape(projectID) + "&limit=10000"
	for next != "" {
		resp, err := http.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		var page []struct {
			UserID string `json:"user_id"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("census page: %d %v", resp.StatusCode, err)
		}
		for _, e := range page {
			var n int
			if _, err := fmt.Sscanf(e.UserID, "batch-%d", &n); err != nil {
				t.Fatalf("entry with user_id %q", e.UserID)
			}
			counts[n]++
		}
		next = ""
		if link := resp.Header.Get("Link"); link != "" {
			next = base + link[1:strings.Index(link, ">")] // a relative reference: /logs?…
		}
	}
	return counts
}

// verdict compares what the clients were told with what is stored, prints the counts and fails
// on any loss, partial batch or (with retries) duplicate.
func verdict(t *testing.T, name string, l *loader, counts map[int]int) {
	t.Helper()
	var acked, complete, partial, lost, dupes, absent int
	for n, o := range l.batches {
		c := counts[n]
		switch {
		case c == batchSize:
			complete++
		case c == 0:
			absent++
		case c > batchSize:
			dupes++
		default:
			partial++
		}
		if o.acked {
			acked++
			if c < batchSize {
				lost++
			}
		}
	}
	for n := range counts {
		if _, ok := l.batches[n]; !ok {
			t.Errorf("%s: stored batch %d was never sent", name, n)
		}
	}
	t.Logf("%s: batches sent %d, acknowledged %d, found complete %d, absent %d, partial %d (must be 0), acknowledged missing %d (must be 0), duplicated %d (must be 0); answers %v",
		name, len(l.batches), acked, complete, absent, partial, lost, dupes, l.statuses)
	fmt.Printf("FAULTS %s: acknowledged=%d complete=%d partial=%d acknowledged_missing=%d duplicates=%d\n", name, acked, complete, partial, lost, dupes)
	if partial != 0 || lost != 0 || dupes != 0 {
		t.Errorf("%s: %d partial, %d acknowledged but missing, %d duplicated batches", name, partial, lost, dupes)
	}
	if acked == 0 {
		t.Errorf("%s: no batch was acknowledged: the test proved nothing", name)
	}
}

func createProject(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Post(base+"/projects", "application/json", strings.NewReader(`{"name":"faults"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&struct {
		ID *string `json:"id"`
	}{&p.ID}); err != nil || resp.StatusCode != 201 {
		t.Fatalf("create project: %d %v", resp.StatusCode, err)
	}
	return p.ID
}

// killRounds drives createLogs and kill -9s the server at random moments, restarting it each time.
func killRounds(t *testing.T, name string, env []string, idem bool) {
	addr := freeAddr(t)
	srv := start(t, addr, env...)
	base := "http://" + addr
	l := &loader{base: func() string { return base }, projectID: createProject(t, base), idem: idem, batches: map[int]*outcome{}, statuses: map[string]int{}}
	ctx, cancel := context.WithCancel(t.Context())
	wg := l.run(ctx, 4)
	for round := range 4 {
		time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
		srv.kill()
		t.Logf("%s: killed the server (round %d)", name, round+1)
		time.Sleep(100 * time.Millisecond)
		srv = start(t, addr, env...)
	}
	time.Sleep(500 * time.Millisecond)
	cancel()
	waitOrFail(t, wg, 30*time.Second)
	if idem {
		// The retrying client keeps at every batch it was never answered for, until it is.
		client := &http.Client{Timeout: 10 * time.Second}
		for n, o := range l.batches {
			for tries := 0; !o.acked; tries++ {
				if tries > 100 {
					t.Fatalf("batch %d never answered 201", n)
				}
				if !l.send(t.Context(), client, n) {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}
	}
	counts := census(t, base, l.projectID)
	verdict(t, name, l, counts)
	if idem {
		for n := range l.batches {
			if counts[n] != batchSize {
				t.Errorf("%s: batch %d stored %d times its size / %d entries; want exactly once", name, n, counts[n]/batchSize, counts[n])
			}
		}
	}
	_ = srv.cmd.Process.Signal(syscall.SIGTERM)
	<-srv.done
}

func waitOrFail(t *testing.T, wg *sync.WaitGroup, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatal("load workers did not stop")
	}
}

// stores lists the stores the fault tests run against: SQLite always, PostgreSQL when the test
// set-up can start one (see postgres_test.go).
type storeEnv struct {
	name string
	env  func(t *testing.T) []string
}

func sqliteEnv(t *testing.T) []string {
	return []string{"DATABASE_URL=sqlite:" + filepath.Join(t.TempDir(), "faults.db")}
}

func TestKillNineLosesNoAcknowledgedBatch(t *testing.T) {
	for _, s := range faultStores() {
		t.Run(s.name, func(t *testing.T) { killRounds(t, "kill-9/"+s.name, s.env(t), false) })
	}
}

// TestKillNineWithRetriesStoresEveryBatchOnce retries every unanswered batch with its
// Idempotency-Key until it is answered: afterwards every batch is stored exactly once.
func TestKillNineWithRetriesStoresEveryBatchOnce(t *testing.T) {
	for _, s := range faultStores() {
		t.Run(s.name, func(t *testing.T) { killRounds(t, "kill-9+retries/"+s.name, s.env(t), true) })
	}
}

func TestDrainCompletesInFlightRequests(t *testing.T) {
	for _, s := range faultStores() {
		t.Run(s.name, func(t *testing.T) { drain(t, s.name, s.env(t)) })
	}
}

// drain starts slow requests, sends SIGTERM while they are in flight, and checks that each of
// them completes, that new connections are refused and that the process exits 0 in time.
func drain(t *testing.T, name string, env []string) {
	addr := freeAddr(t)
	srv := start(t, addr, env...)
	base := "http://" + addr
	l := &loader{base: func() string { return base }, projectID: createProject(t, base), batches: map[int]*outcome{}, statuses: map[string]int{}}

	const inFlight = 8
	type result struct {
		status int
		err    error
	}
	results := make(chan result, inFlight)
	writers := make([]*io.PipeWriter, inFlight)
	for i := range inFlight {
		pr, pw := io.Pipe()
		writers[i] = pw
		body := l.body(i)
		req, _ := http.NewRequest("POST", base+"/logs", pr)
		req.Header.Set("Content-Type", "application/json")
		go func() {
			resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
			if err != nil {
				results <- result{err: err}
				return
			}
			resp.Body.Close()
			results <- result{status: resp.StatusCode}
		}()
		// Half the body now, after 8 KiB of white space (more than the client transport buffers,
		// so it really leaves): the request is accepted and its handler is reading.
		go func() {
			_, _ = pw.Write(bytes.Repeat([]byte(" "), 8192))
			_, _ = pw.Write(body[:len(body)/2])
		}()
		l.batches[i] = &outcome{}
	}
	time.Sleep(500 * time.Millisecond)
	signalled := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	// New connections are refused once draining starts.
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s: a new connection was accepted while draining", name)
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Logf("%s: dial while draining: %v", name, err)
	}
	// The in-flight requests finish their bodies and must all succeed.
	for i, pw := range writers {
		body := l.body(i)
		_, _ = pw.Write(body[len(body)/2:])
		_ = pw.Close()
	}
	failed := 0
	for range inFlight {
		r := <-results
		if r.err != nil || r.status != 201 {
			failed++
			t.Logf("%s: in-flight request: %d %v", name, r.status, r.err)
		}
	}
	var exitErr error
	select {
	case exitErr = <-srv.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: the server did not exit within its drain timeout", name)
	}
	fmt.Printf("FAULTS drain/%s: in_flight=%d failed_in_flight=%d exit=%v after=%s\n", name, inFlight, failed, exitErr, time.Since(signalled).Round(time.Millisecond))
	if failed != 0 {
		t.Errorf("%s: %d of %d in-flight requests failed during the drain", name, failed, inFlight)
	}
	if exitErr != nil {
		t.Errorf("%s: exit after SIGTERM = %v, want status 0\n%s", name, exitErr, srv.log.String())
	}
}

// TestDatabaseOutageLosesNothing stops PostgreSQL for a few seconds under load: requests during
// the outage must fail fast with 503 (no hangs, no 500s), the server must recover without a
// restart, and no acknowledged batch may be lost.
func TestDatabaseOutageLosesNothing(t *testing.T) {
	env := []string{"DATABASE_URL=" + pg.NewDatabase(t)}
	addr := freeAddr(t)
	srv := start(t, addr, env...)
	defer func() {
		_ = srv.cmd.Process.Signal(syscall.SIGTERM)
		<-srv.done
	}()
	base := "http://" + addr
	l := &loader{base: func() string { return base }, projectID: createProject(t, base), batches: map[int]*outcome{}, statuses: map[string]int{}}
	ctx, cancel := context.WithCancel(t.Context())
	wg := l.run(ctx, 4)
	time.Sleep(time.Second)
	pg.Stop(t)
	outage := time.Now()
	l.mu.Lock()
	before := map[string]int{}
	for k, v := range l.statuses {
		before[k] = v
	}
	l.mu.Unlock()
	time.Sleep(3 * time.Second)
	pg.Start(t)
	t.Logf("outage: database down for %v", time.Since(outage).Round(time.Millisecond))
	// Keep loading until the service answers 201 again, without restarting it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		l.mu.Lock()
		recovered := l.statuses["201"] > before["201"]
		l.mu.Unlock()
		if recovered && time.Since(outage) > 4*time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the service did not recover after the database came back")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	cancel()
	waitOrFail(t, wg, 30*time.Second)
	during := map[string]int{}
	for k, v := range l.statuses {
		during[k] = v - before[k]
	}
	fmt.Printf("FAULTS outage/postgres: answers since the outage began %v; 500s=%d transport_errors=%d %q\n", during, l.statuses["500"], l.statuses["transport error"], l.errs)
	if l.statuses["500"] != 0 {
		for _, line := range strings.Split(srv.log.String(), "\n") {
			if strings.Contains(line, `"status":500`) {
				t.Logf("server: %s", line)
			}
		}
	}
	if l.statuses["500"] != 0 || l.statuses["transport error"] != 0 {
		t.Errorf("during the outage: %d answers of 500 and %d timeouts or transport errors, want only 503s", l.statuses["500"], l.statuses["transport error"])
	}
	if during["503"] == 0 {
		t.Errorf("no request was answered 503 during the outage: the test proved nothing")
	}
	verdict(t, "outage/postgres", l, census(t, base, l.projectID))
}
