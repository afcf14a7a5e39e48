package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/domain"
)

func getenvFrom(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// listeningAddr waits for the "listening" log line and returns its address.
func listeningAddr(t *testing.T, logs *apitest.SyncBuffer, done <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				return line.Addr
			}
		}
		select {
		case err := <-done:
			t.Fatalf("run returned before listening: %v\nlogs:\n%s", err, logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no listening line in the logs:\n%s", logs)
	return ""
}

func TestRunServesBothAPIsAndStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr apitest.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, getenvFrom(map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "x.db")}), &stdout, &stderr)
	}()
	base := "http://" + listeningAddr(t, &stdout, done)

	resp, err := http.Post(base+"/projects", "application/json", strings.NewReader(`{"name":"boot"}`))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("POST /projects = %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Post(base+"/twirp/rpc.example.haberdasher.Haberdasher/MakeHat", "application/json", strings.NewReader(`{"inches":3}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("MakeHat = %v %v", resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"inches":3`) {
		t.Errorf("MakeHat body %s", body)
	}

	cancel() // what SIGINT/SIGTERM do through signal.NotifyContext
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after shutdown = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	if !strings.Contains(stdout.String(), `"msg":"stopped"`) {
		t.Errorf("no stopped line in logs:\n%s", stdout.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "x.db")); err != nil {
		t.Errorf("the sqlite:PATH store was not created: %v", err)
	}
}

// The log is buffered: a clean shutdown must still write one access log line per request, the
// last ones included, before run returns.
func TestCleanShutdownWritesEveryAccessLogLine(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr apitest.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, getenvFrom(map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "x.db")}), &stdout, &stderr)
	}()
	base := "http://" + listeningAddr(t, &stdout, done)
	const requests = 200
	for i := range requests {
		req, _ := http.NewRequest("GET", base+"/projects/"+server.NewID(), nil)
		req.Header.Set("X-Request-Id", fmt.Sprintf("line-%d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(stdout.String(), "\n") {
		var l struct {
			Msg       string
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "request" {
			seen[l.RequestID] = true
		}
	}
	for i := range requests {
		if !seen[fmt.Sprintf("line-%d", i)] {
			t.Fatalf("no access log line for request %d of %d after a clean shutdown (%d lines)", i, requests, len(seen))
		}
	}
}

func TestRunDefaultStoreIsCreatedUnderData(t *testing.T) {
	t.Chdir(t.TempDir())
	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr apitest.SyncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, getenvFrom(nil), &stdout, &stderr) }()
	listeningAddr(t, &stdout, done)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(defaultSQLitePath); err != nil {
		t.Fatalf("default store not created at %s: %v", defaultSQLitePath, err)
	}
}

func TestHelpListsEverySetting(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"-h"}, getenvFrom(nil), &stdout, &stderr); err != nil {
		t.Fatalf("-h = %v", err)
	}
	c := defaultConfig()
	c.flags().VisitAll(func(f *flag.Flag) {
		if !strings.Contains(stderr.String(), "-"+f.Name) || !strings.Contains(stderr.String(), envName(f.Name)) {
			t.Errorf("-h does not list -%s / %s:\n%s", f.Name, envName(f.Name), stderr.String())
		}
	})
	if !strings.Contains(stderr.String(), `(default ":8080")`) {
		t.Errorf("-h does not show the default address:\n%s", stderr.String())
	}
}

func TestInvalidConfigFailsWithAClearMessage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"bad duration env", nil, map[string]string{"SHUTDOWN_TIMEOUT": "soon"}, "SHUTDOWN_TIMEOUT"},
		{"bad number flag", []string{"-max-body-bytes", "lots"}, nil, "max-body-bytes"},
		{"zero batch", nil, map[string]string{"MAX_BATCH_ENTRIES": "0"}, "MAX_BATCH_ENTRIES"},
		{"bad log level", nil, map[string]string{"LOG_LEVEL": "loud"}, "LOG_LEVEL"},
		{"unknown scheme", nil, map[string]string{"DATABASE_URL": "mysql://x"}, "DATABASE_URL"},
		{"empty sqlite path", nil, map[string]string{"DATABASE_URL": "sqlite:"}, "DATABASE_URL"},
		{"unknown flag", []string{"-colour"}, nil, "colour"},
		{"stray argument", []string{"serve"}, nil, "serve"},
		{"address in use or bad", []string{"-addr", "256.0.0.1:1", "-allow-open-network"}, nil, "listen"},
		{"open on a non-loopback address", []string{"-addr", "0.0.0.0:0"}, nil, "ALLOW_OPEN_NETWORK"},
		{"open on a host name", nil, map[string]string{"ADDR": "example.com:0"}, "not a loopback address"},
		{"key of the empty secret", nil, map[string]string{"API_KEYS": "admin sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}, "empty secret"},
		{"one digest twice", nil, map[string]string{"API_KEYS": apitest.KeyLine("admin", "s") + "\n" + apitest.KeyLine("project "+server.NewID(), "s")}, "same digest"},
		{"bad allow-open value", nil, map[string]string{"ALLOW_OPEN_NETWORK": "maybe"}, "ALLOW_OPEN_NETWORK"},
		{"zero twirp body", nil, map[string]string{"TWIRP_MAX_BODY_BYTES": "0"}, "TWIRP_MAX_BODY_BYTES"},
		{"profiles on every interface", nil, map[string]string{"PPROF_ADDR": ":6060"}, "PPROF_ADDR"},
		{"profiles on a public address", []string{"-pprof-addr", "0.0.0.0:6060"}, nil, "PPROF_ADDR"},
		{"negative tail coalesce", nil, map[string]string{"TAIL_COALESCE": "-1ms"}, "TAIL_COALESCE"},
		{"tail coalesce past the heartbeat", nil, map[string]string{"TAIL_COALESCE": "20s"}, "TAIL_COALESCE"},
		{"alert target pattern with a wildcard inside", nil, map[string]string{"ALERT_TARGETS": "hooks.slack.com,exa*mple.com"}, "ALERT_TARGETS"},
		{"alert target pattern with a bad port", []string{"-alert-targets", "am.internal:0"}, nil, "ALERT_TARGETS"},
		{"relative public URL", nil, map[string]string{"PUBLIC_URL": "logs.example.com"}, "PUBLIC_URL"},
		{"zero alert timeout", nil, map[string]string{"ALERT_TIMEOUT": "0s"}, "ALERT_TIMEOUT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), c.args, getenvFrom(c.env), &stdout, &stderr)
			if err == nil {
				t.Fatal("run accepted an invalid configuration")
			}
			if !strings.Contains(err.Error()+stderr.String(), c.want) {
				t.Errorf("error %q (stderr %q) does not name %q", err, stderr.String(), c.want)
			}
		})
	}
}

func TestFlagsWinOverEnvironment(t *testing.T) {
	var out bytes.Buffer
	c, err := parseConfig([]string{"-addr", ":9000"}, getenvFrom(map[string]string{"ADDR": ":7000", "MAX_BODY_BYTES": "123"}), &out)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":9000" || c.MaxBodyBytes != 123 {
		t.Fatalf("config = %+v, want flag addr :9000 and env body limit 123", c)
	}
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}

func TestOpenServiceListensOnLoopbackAndAnswersLoopbackNamesOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr apitest.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", ":0"}, getenvFrom(map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "x.db")}), &stdout, &stderr)
	}()
	addr := listeningAddr(t, &stdout, done)
	host, port, _ := net.SplitHostPort(addr)
	if host != "127.0.0.1" {
		t.Fatalf("without keys, ADDR :0 listened on %s, want 127.0.0.1", addr)
	}
	for _, c := range []struct {
		host string
		want int
	}{{"localhost:" + port, 200}, {"127.0.0.1:" + port, 200}, {"[::1]:" + port, 200}, {"rebound.example:" + port, 403}, {"rebound.example", 403}} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+addr+"/projects", nil)
		req.Host = c.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Host %q: %d %s, want %d", c.host, resp.StatusCode, body, c.want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestRunSweepsExpiredEntries starts the whole program with a short RETENTION_INTERVAL on a
// database holding expired entries and sees its sweeper delete them, and only them.
func TestRunSweepsExpiredEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	st, err := sqlstore.OpenSQLite(t.Context(), path, sqlstore.DefaultSQLiteOptions())
	if err != nil {
		t.Fatal(err)
	}
	svc := domain.NewService(st, domain.Options{NewID: server.NewID})
	admin := domain.WithPrincipal(t.Context(), domain.Principal{Admin: true})
	one := 1
	p, err := svc.CreateProject(admin, domain.ProjectInput{Name: "p", RetentionDays: domain.Optional[int]{Set: true}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	var in []domain.LogInput
	for i := range 7 {
		in = append(in, domain.LogInput{ProjectID: p.ID, Message: ptr("old"), Time: ptr(now - 2*dayMs - int64(i))})
	}
	in = append(in, domain.LogInput{ProjectID: p.ID, Message: ptr("fresh")})
	if _, err := svc.CreateLogs(admin, in, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.PatchProject(admin, p.ID, domain.ProjectPatch{RetentionDays: domain.Optional[int]{Set: true, Value: &one}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr apitest.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-retention-interval", "50ms", "-retention-batch", "3"},
			getenvFrom(map[string]string{"DATABASE_URL": "sqlite:" + path}), &stdout, &stderr)
	}()
	base := "http://" + listeningAddr(t, &stdout, done)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stdout.String(), `"deleted":7`) {
		if time.Now().After(deadline) {
			t.Fatalf("no sweep deleted the 7 expired entries:\n%s", stdout.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"obsvc_log_entries_expired_total 7", "obsvc_retention_last_sweep_timestamp_seconds", "obsvc_retention_sweep_errors_total 0"} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run = %v", err)
	}
	st, err = sqlstore.OpenSQLite(t.Context(), path, sqlstore.DefaultSQLiteOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := storetest.CountEntries(t, st, p.ID); n != 1 {
		t.Fatalf("%d entries left, want the fresh one", n)
	}
}

func TestSlowHeadersAreCutOff(t *testing.T) {
	var stdout, stderr apitest.SyncBuffer
	ctx, cancel := contextWithCancel(t)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-read-header-timeout", "200ms", "-database-url", "sqlite:" + t.TempDir() + "/s.db"}, getenvFrom(nil), &stdout, &stderr)
	}()
	addr := listeningAddr(t, &stdout, done)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n"); err != nil { // never finished
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	// The server gives up on the request: it closes the connection (possibly after a 408).
	if err == nil && !strings.Contains(line, "408") {
		t.Fatalf("a client that never finished its headers got %q", line)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the server kept a connection with unfinished headers open")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestMetricsOnTheirOwnAddress(t *testing.T) {
	var stdout, stderr apitest.SyncBuffer
	ctx, cancel := contextWithCancel(t)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0", "-database-url", "sqlite:" + t.TempDir() + "/m.db"}, getenvFrom(nil), &stdout, &stderr)
	}()
	base := "http://" + listeningAddr(t, &stdout, done)
	var metricsAddr string
	for _, line := range strings.Split(stdout.String(), "\n") {
		var l struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "metrics listening" {
			metricsAddr = l.Addr
		}
	}
	if metricsAddr == "" {
		t.Fatalf("no metrics listening line:\n%s", stdout.String())
	}
	if resp, _ := apitest.Get(t, base+"/metrics"); resp.StatusCode != 404 {
		t.Errorf("/metrics on the main address = %d, want 404 when it has its own", resp.StatusCode)
	}
	if resp, body := apitest.Get(t, "http://"+metricsAddr+"/metrics"); resp.StatusCode != 200 || !bytes.Contains(body, []byte("obsvc_http_requests_total")) {
		t.Errorf("/metrics on METRICS_ADDR = %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestStartupLogsConfigurationWithoutSecrets(t *testing.T) {
	for _, u := range []string{
		"postgres://app:s3cret@db.internal:5432/logs?sslmode=disable",
		"postgres://app@db.internal:5432/logs?sslmode=disable&password=s3cret",
		"postgresql://db.internal/logs?password=s3cret&sslpassword=s3cret&user=app",
		"postgres://app:s3cret@db.internal:5432/logs?password=s3cret",
		"postgres://db.internal/logs?%zz&password=s3cret", // a query that does not parse
	} {
		var out bytes.Buffer
		c := defaultConfig()
		c.DatabaseURL = u
		c.APIKeys = "admin sha256:not-shown"
		c.logEffective(slog.New(slog.NewJSONHandler(&out, nil)))
		line := out.String()
		if strings.Contains(line, "s3cret") || strings.Contains(line, "not-shown") || !strings.Contains(line, "db.internal") || !strings.Contains(line, `"ADDR":":8080"`) {
			t.Errorf("configuration log of %s = %s", u, line)
		}
	}
}

// TestReadmeConfigurationTableMatchesFlags keeps app/README.md's table and -h from drifting apart.
func TestReadmeConfigurationTableMatchesFlags(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `-([a-z-]+)` \\| `([A-Z_]+)` \\| ([^|]*) \\|")
	documented := map[string][2]string{}
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		documented[m[1]] = [2]string{m[2], strings.Trim(strings.TrimSpace(m[3]), "`")}
	}
	c := defaultConfig()
	n := 0
	c.flags().VisitAll(func(f *flag.Flag) {
		n++
		d, ok := documented[f.Name]
		if !ok {
			t.Errorf("README lacks -%s", f.Name)
			return
		}
		def := f.DefValue
		if def == "" {
			def = "empty"
		}
		if env := envName(f.Name); d[0] != env || d[1] != def {
			t.Errorf("README says -%s is %s default %q; -h says %s default %q", f.Name, d[0], d[1], env, def)
		}
	})
	if len(documented) != n {
		t.Errorf("README documents %d settings, -h has %d", len(documented), n)
	}
}

func TestRetentionDutyMustBeAFraction(t *testing.T) {
	for _, v := range []string{"0", "-0.5", "1.5", "NaN", "half"} {
		var out bytes.Buffer
		_, err := parseConfig(nil, getenvFrom(map[string]string{"RETENTION_DUTY": v}), &out)
		if err == nil || !strings.Contains(err.Error(), "RETENTION_DUTY") {
			t.Errorf("RETENTION_DUTY=%s: %v, want an error naming it", v, err)
		}
	}
	var out bytes.Buffer
	if c, err := parseConfig(nil, getenvFrom(map[string]string{"RETENTION_DUTY": "1"}), &out); err != nil || c.RetentionDuty != 1 {
		t.Errorf("RETENTION_DUTY=1: %v, %v; want accepted", c.RetentionDuty, err)
	}
}

// TestShutdownEndsOpenTails opens 20 live tails and then stops the server the way SIGTERM does
// (run's context ends): every tail ends at once, so run drains and returns nil well within
// SHUTDOWN_TIMEOUT instead of failing the drain.
func TestShutdownEndsOpenTails(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr apitest.SyncBuffer
	done := make(chan error, 1)
	env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "x.db"), "SHUTDOWN_TIMEOUT": "5s", "MAX_TAILS": "20",
		// A tail's start counts against the in-flight limits, and the 20 start at once from one
		// address: room for all of them.
		"MAX_IN_FLIGHT_PER_CLIENT": "40"}
	go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, getenvFrom(env), &stdout, &stderr) }()
	base := "http://" + listeningAddr(t, &stdout, done)

	resp, err := http.Post(base+"/projects", "application/json", strings.NewReader(`{"name":"tails"}`))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /projects = %v %v", resp, err)
	}
	var p struct{ ID string }
	_ = json.NewDecoder(resp.Body).Decode(&p)
	resp.Body.Close()

	const tails = 20
	ended := make(chan error, tails)
	opened := make(chan struct{}, tails)
	for range tails {
		go func() {
			_, err := apitest.ReadEvents(context.Background(), base+"/logs/tail?project_id="+p.ID, "", func(ev apitest.Event) bool {
				if ev.Event == "open" {
					opened <- struct{}{}
				}
				return true
			})
			ended <- err
		}()
	}
	for range tails {
		select {
		case <-opened:
		case <-time.After(30 * time.Second):
			t.Fatal("a tail did not open")
		}
	}

	start := time.Now()
	cancel() // what SIGTERM does through signal.NotifyContext
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after shutdown with %d open tails = %v, want nil", tails, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return")
	}
	if took := time.Since(start); took >= 5*time.Second {
		t.Errorf("shutdown took %v, past SHUTDOWN_TIMEOUT", took)
	}
	for range tails {
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatal("a tail's stream did not end")
		}
	}
}

func ptr[T any](v T) *T { return &v }

const dayMs = int64(24 * time.Hour / time.Millisecond)
