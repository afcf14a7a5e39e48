package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"example.com/obsvc/adapters/edge"
	"example.com/obsvc/api/haberdasher"
	"example.com/obsvc/app/server"
)

// bootForOps starts the real wiring with a JSON logger writing to logs.
func bootForOps(t *testing.T, open storeOpener, logs io.Writer, tweak func(*server.Config)) (string, server.Store) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.LogLevel = "debug"
	if tweak != nil {
		tweak(&cfg)
	}
	st := open(t)
	_, srv := serve(t, cfg, st, edge.NewLogger(logs, cfg.Level()))
	return srv.URL, st
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func send(t *testing.T, method, url, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// sample reads one sample of a scrape: the metric with exactly these labels, 0 when absent.
func sample(t *testing.T, scrape, name string, labels map[string]string) float64 {
	t.Helper()
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q", k, labels[k]))
	}
	prefix := name
	if len(parts) > 0 {
		prefix += "{" + strings.Join(parts, ",") + "}"
	}
	sc := bufio.NewScanner(strings.NewReader(scrape))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, prefix+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("sample %q: %v", line, err)
			}
			return v
		}
	}
	return 0
}

func scrape(t *testing.T, base string) string {
	t.Helper()
	resp, body := get(t, base+"/metrics")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return string(body)
}

func TestMetricsCountRequestsByRouteStatusAndTwirpCode(t *testing.T) {
	base, _ := bootForOps(t, openSQLiteStore, io.Discard, nil)
	before := scrape(t, base)

	// A known sequence: 2 creates, 1 bad create, 1 get of an unknown id, 1 batch of 3, 1 unknown
	// project batch, 1 delete, 2 good hats and 1 bad hat in JSON, 1 good hat in protobuf.
	var created struct{ ID string }
	for i := range 2 {
		resp, err := http.Post(base+"/projects", "application/json", strings.NewReader(fmt.Sprintf(`{"name":"p%d"}`, i)))
		if err != nil || resp.StatusCode != 201 {
			t.Fatal(err)
		}
		_ = json.NewDecoder(resp.Body).Decode(&struct {
			ID *string `json:"id"`
		}{&created.ID})
		resp.Body.Close()
	}
	send(t, "POST", base+"/projects", `{"name":""}`)
	get(t, base+"/projects/"+server.NewID())
	send(t, "POST", base+"/logs", fmt.Sprintf(`[{"project_id":%[1]q,"message":"a"},{"project_id":%[1]q,"message":"b"},{"project_id":%[1]q,"message":"c"}]`, created.ID))
	send(t, "POST", base+"/logs", fmt.Sprintf(`[{"project_id":%q,"message":"a"}]`, server.NewID()))
	send(t, "DELETE", base+"/logs?project_id="+created.ID+"&log_level=info", "")
	js := haberdasher.NewHaberdasherJSONClient(base, http.DefaultClient)
	pb := haberdasher.NewHaberdasherProtobufClient(base, http.DefaultClient)
	for _, in := range []int32{5, 6, 0} {
		_, _ = js.MakeHat(t.Context(), &haberdasher.Size{Inches: in})
	}
	if _, err := pb.MakeHat(t.Context(), &haberdasher.Size{Inches: 7}); err != nil {
		t.Fatal(err)
	}

	after := scrape(t, base)
	delta := func(name string, labels map[string]string) float64 {
		return sample(t, after, name, labels) - sample(t, before, name, labels)
	}
	cases := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"obsvc_http_requests_total", map[string]string{"route": "POST /projects", "method": "POST", "code": "201"}, 2},
		{"obsvc_http_requests_total", map[string]string{"route": "POST /projects", "method": "POST", "code": "400"}, 1},
		{"obsvc_http_requests_total", map[string]string{"route": "GET /projects/{id}", "method": "GET", "code": "404"}, 1},
		{"obsvc_http_requests_total", map[string]string{"route": "POST /logs", "method": "POST", "code": "201"}, 1},
		{"obsvc_http_requests_total", map[string]string{"route": "POST /logs", "method": "POST", "code": "422"}, 1},
		{"obsvc_http_requests_total", map[string]string{"route": "DELETE /logs", "method": "DELETE", "code": "200"}, 1},
		{"obsvc_http_request_duration_seconds_count", map[string]string{"route": "POST /projects", "method": "POST"}, 3},
		{"obsvc_twirp_requests_total", map[string]string{"method": "MakeHat", "code": "ok"}, 3},
		{"obsvc_twirp_requests_total", map[string]string{"method": "MakeHat", "code": "invalid_argument"}, 1},
		{"obsvc_twirp_request_duration_seconds_count", map[string]string{"method": "MakeHat"}, 4},
		{"obsvc_log_entries_created_total", nil, 3},
		{"obsvc_log_entries_deleted_total", nil, 3},
		{"obsvc_log_batch_entries_count", nil, 1},
		{"obsvc_log_batch_entries_sum", nil, 3},
	}
	for _, c := range cases {
		if got := delta(c.name, c.labels); got != c.want {
			t.Errorf("%s%v increased by %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// The raw path never becomes a label; the pool, runtime and process collectors are there.
	if strings.Contains(after, created.ID) {
		t.Error("a raw path with an id became a metric label")
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "go_sql_open_connections"} {
		if !regexp.MustCompile(`(?m)^` + name + `[{ ]`).MatchString(after) {
			t.Errorf("scrape lacks %s", name)
		}
	}
}

func TestMetricsOnTheirOwnAddress(t *testing.T) {
	var stdout, stderr syncBuffer
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
	if resp, _ := get(t, base+"/metrics"); resp.StatusCode != 404 {
		t.Errorf("/metrics on the main address = %d, want 404 when it has its own", resp.StatusCode)
	}
	if resp, body := get(t, "http://"+metricsAddr+"/metrics"); resp.StatusCode != 200 || !bytes.Contains(body, []byte("obsvc_http_requests_total")) {
		t.Errorf("/metrics on METRICS_ADDR = %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestHealthAndReadinessOnSQLite(t *testing.T) {
	base, _ := bootForOps(t, openSQLiteStore, io.Discard, nil)
	for path, want := range map[string]string{"/healthz": `{"status":"ok"}`, "/readyz": `{"status":"ready"}`} {
		resp, body := get(t, base+path)
		if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != want || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s = %d %s", path, resp.StatusCode, body)
		}
	}
}

func TestReadinessFailsWhenTheStoreIsGone(t *testing.T) {
	base, st := bootForOps(t, openSQLiteStore, io.Discard, nil)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	resp, body := get(t, base+"/readyz")
	if resp.StatusCode != 503 || !strings.Contains(string(body), "unavailable") {
		t.Errorf("/readyz with a closed store = %d %s, want 503", resp.StatusCode, body)
	}
	if resp, _ := get(t, base+"/healthz"); resp.StatusCode != 200 {
		t.Errorf("/healthz = %d: liveness does not depend on the store", resp.StatusCode)
	}
}

func TestAccessLogAndRequestID(t *testing.T) {
	var logs syncBuffer
	base, _ := bootForOps(t, openSQLiteStore, &logs, func(c *server.Config) { c.LogLevel = "info" })

	req, _ := http.NewRequest("GET", base+"/projects/"+server.NewID(), nil)
	req.Header.Set("X-Request-Id", "trace-42.a_b:c")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got != "trace-42.a_b:c" {
		t.Errorf("echoed request id = %q", got)
	}
	var prob struct {
		RequestID string `json:"request_id"`
	}
	_ = json.Unmarshal(body, &prob)
	if prob.RequestID != "trace-42.a_b:c" {
		t.Errorf("problem %s does not carry the request id", body)
	}

	// An unusable id is replaced, not echoed.
	for _, bad := range []string{strings.Repeat("x", 129), "has space", "ünï"} {
		req, _ := http.NewRequest("GET", base+"/healthz", nil)
		req.Header.Set("X-Request-Id", bad)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Request-Id"); got == bad || !edge.ValidRequestID(got) {
			t.Errorf("bad request id %q answered with %q", bad, got)
		}
	}
	get(t, base+"/healthz") // debug level: not in an info log

	var found bool
	for _, line := range strings.Split(logs.String(), "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) != nil || l["msg"] != "request" {
			continue
		}
		if l["route"] == "GET /healthz" {
			t.Errorf("a health check reached the info-level access log: %s", line)
		}
		if l["request_id"] == "trace-42.a_b:c" {
			found = true
			if l["method"] != "GET" || l["route"] != "GET /projects/{id}" || l["status"] != float64(404) || l["bytes"] != float64(len(body)) || l["duration_ms"] == nil || l["level"] != "INFO" {
				t.Errorf("access log line = %s", line)
			}
			if strings.Contains(line, "body") || strings.Contains(line, "Authorization") {
				t.Errorf("access log line holds more than it should: %s", line)
			}
		}
	}
	if !found {
		t.Fatalf("no access log line with the request id:\n%s", logs.String())
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

// TestReadmeConfigurationTableMatchesFlags keeps README's table and -h from drifting apart.
func TestReadmeConfigurationTableMatchesFlags(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
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

// TestReadinessFollowsPostgres stops the shared PostgreSQL server, so it is not parallel: the
// tests before it have finished, the ones after it have not started.
func TestReadinessFollowsPostgres(t *testing.T) {
	base, _ := bootForOps(t, openPostgresStore, io.Discard, nil)
	if resp, _ := get(t, base+"/readyz"); resp.StatusCode != 200 {
		t.Fatalf("/readyz before the outage = %d", resp.StatusCode)
	}
	pg.Stop(t)
	started := false
	defer func() {
		if !started {
			pg.Start(t)
		}
	}()
	asked := time.Now()
	resp, body := get(t, base+"/readyz")
	if resp.StatusCode != 503 {
		t.Errorf("/readyz with the database stopped = %d %s, want 503", resp.StatusCode, body)
	}
	if took := time.Since(asked); took > edge.ReadyTimeout+2*time.Second {
		t.Errorf("/readyz took %v with the database down, want about its %v timeout at most", took, edge.ReadyTimeout)
	}
	if resp, _ := get(t, base+"/healthz"); resp.StatusCode != 200 {
		t.Errorf("/healthz = %d during the outage", resp.StatusCode)
	}
	pg.Start(t)
	started = true
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, _ := get(t, base+"/readyz")
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d after the database came back", resp.StatusCode)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
