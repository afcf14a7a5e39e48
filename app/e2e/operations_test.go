package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"example.com/obsvc/adapters/edge"
	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/api/haberdasher"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
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
	_, srv := servetest.Serve(t, cfg, st, edge.NewLogger(logs, cfg.Level()))
	return srv.URL, st
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
	apitest.Get(t, base+"/projects/"+server.NewID())
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

func TestHealthAndReadinessOnSQLite(t *testing.T) {
	base, _ := bootForOps(t, openSQLiteStore, io.Discard, nil)
	for path, want := range map[string]string{"/healthz": `{"status":"ok"}`, "/readyz": `{"status":"ready"}`} {
		resp, body := apitest.Get(t, base+path)
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
	resp, body := apitest.Get(t, base+"/readyz")
	if resp.StatusCode != 503 || !strings.Contains(string(body), "unavailable") {
		t.Errorf("/readyz with a closed store = %d %s, want 503", resp.StatusCode, body)
	}
	if resp, _ := apitest.Get(t, base+"/healthz"); resp.StatusCode != 200 {
		t.Errorf("/healthz = %d: liveness does not depend on the store", resp.StatusCode)
	}
}

func TestAccessLogAndRequestID(t *testing.T) {
	var logs apitest.SyncBuffer
	base, _ := bootForOps(t, openSQLiteStore, &logs, func(c *server.Config) { c.LogLevel = "info" })

	req, _ := http.NewRequest("GET", base+"/projects/"+server.NewID(), nil)
	req.Header.Set("X-Request-Id", "trace-42.a_b:c")
	resp, body := roundTrip(t, http.DefaultClient, req)
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
	apitest.Get(t, base+"/healthz") // debug level: not in an info log

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

// TestReadinessFollowsPostgres stops the shared PostgreSQL server, so it is not parallel: the
// tests before it have finished, the ones after it have not started.
func TestReadinessFollowsPostgres(t *testing.T) {
	base, _ := bootForOps(t, openPostgresStore, io.Discard, nil)
	if resp, _ := apitest.Get(t, base+"/readyz"); resp.StatusCode != 200 {
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
	resp, body := apitest.Get(t, base+"/readyz")
	if resp.StatusCode != 503 {
		t.Errorf("/readyz with the database stopped = %d %s, want 503", resp.StatusCode, body)
	}
	if took := time.Since(asked); took > edge.ReadyTimeout+2*time.Second {
		t.Errorf("/readyz took %v with the database down, want about its %v timeout at most", took, edge.ReadyTimeout)
	}
	if resp, _ := apitest.Get(t, base+"/healthz"); resp.StatusCode != 200 {
		t.Errorf("/healthz = %d during the outage", resp.StatusCode)
	}
	pg.Start(t)
	started = true
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, _ := apitest.Get(t, base+"/readyz")
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d after the database came back", resp.StatusCode)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
