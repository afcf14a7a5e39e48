package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
)

var otlpNode = nodePackage{dir: "testdata/otlp-node", what: "OpenTelemetry JS exporter"}

// emitNode runs emit.mjs: exporter "http" (OTLP JSON) or "proto" (protobuf) to url with key.
func emitNode(t *testing.T, url, exporter, compression, key, service string) ([]byte, error) {
	t.Helper()
	node, dir := otlpNode.install(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "emit.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"OTLP_LOGS_URL="+url+"/v1/logs",
		"OTLP_EXPORTER="+exporter,
		"OTLP_COMPRESSION="+compression,
		"OTLP_API_KEY="+key,
		"SERVICE_NAME="+service,
	)
	return cmd.CombinedOutput()
}

// TestOTLPNodeExporters: the OpenTelemetry JS SDK (@opentelemetry/sdk-logs) with its OTLP/HTTP
// exporters, @opentelemetry/exporter-logs-otlp-http (OTLP JSON, gzip) and
// @opentelemetry/exporter-logs-otlp-proto (protobuf, identity), pinned by
// testdata/otlp-node/package-lock.json, run by node against the live service on each store with
// a project key: every field of every record reads back through GET /logs as the README's
// mapping says, and an export the service refuses makes the script fail.
//
// Cost: one npm ci per checkout (cached in testdata/otlp-node/node_modules), then a node process
// of about half a second per exporter and store.
func TestOTLPNodeExporters(t *testing.T) {
	otlpNode.install(t) // skip before a PostgreSQL database is made for nothing
	forEachStore(t, testOTLPNodeExporters)
}

func testOTLPNodeExporters(t *testing.T, open storeOpener) {
	st := open(t)
	a, b := seedProjects(t, st)
	cfg := server.DefaultConfig()
	cfg.APIKeys = strings.Join([]string{apitest.KeyLine("project "+a.ID, "node-key-a"), apitest.KeyLine("project "+b.ID, "node-key-b")}, ",")
	_, srv := servetest.Serve(t, cfg, st, nil)

	for _, c := range []struct {
		exporter, compression, project, key string
	}{
		{"http", "gzip", a.ID, "node-key-a"},
		{"proto", "none", b.ID, "node-key-b"},
	} {
		t.Run(c.exporter, func(t *testing.T) {
			service := "node-" + c.exporter
			out, err := emitNode(t, srv.URL, c.exporter, c.compression, c.key, service)
			if err != nil {
				t.Fatalf("emit.mjs (%s): %v\n%s", c.exporter, err, out)
			}
			t.Logf("%s", out)
			checkNodeRecords(t, srv.URL, c.key, c.project, service)
		})
	}

	t.Run("a refused export fails the script", func(t *testing.T) {
		out, err := emitNode(t, srv.URL, "proto", "none", "not-a-key", "node-refused")
		if err == nil || !strings.Contains(string(out), "failed") {
			t.Fatalf("emit.mjs with an unknown key: %v, want a failure\n%s", err, out)
		}
	})
}

// checkNodeRecords reads the project's entries through GET /logs with key and compares every
// field with what emit.mjs sent, mapped as the README says.
func checkNodeRecords(t *testing.T, url, key, projectID, service string) {
	t.Helper()
	c, err := rest.NewClientWithResponses(url, rest.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+key)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	lr, err := c.ListLogsWithResponse(t.Context(), &rest.ListLogsParams{ProjectId: projectID})
	if err != nil || lr.JSON200 == nil {
		t.Fatalf("GET /logs = %v %d %s", err, lr.StatusCode(), lr.Body)
	}
	got := map[string]rest.LogEntry{}
	for _, e := range *lr.JSON200 {
		got[e.Message] = e
	}
	if len(*lr.JSON200) != 4 || len(got) != 4 {
		t.Fatalf("%d entries, want the 4 records once each: %v", len(*lr.JSON200), messages(*lr.JSON200))
	}

	// Resource attributes and the scope come first; the record's own attributes after them.
	common := map[string]any{
		"service.name":           service,
		"deployment.environment": "test",
		"otel.scope.name":        "node-test",
		"otel.scope.version":     "0.2",
	}
	with := func(extra map[string]any) map[string]any {
		m := map[string]any{}
		for k, v := range common {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	ptr := func(s string) *string { return &s }
	want := []struct {
		message    string
		time       int64
		level      string
		userID     *string
		traceID    *string
		spanID     *string
		attributes map[string]any
	}{
		// The SDK sends severity texts INFO and WARN: they differ from the stored levels only in
		// case, so no severity_text attribute is kept (the level rule, domain.KeepsSeverityText).
		{"string body", 1_700_000_000_001, "info", nil, nil, nil,
			with(map[string]any{"http.route": "/orders", "retries": 2.0, "cached": true})},
		{`{"order":"o-1","qty":3}`, 1_700_000_000_002, "error", ptr("u-7"), nil, nil,
			with(map[string]any{"user.id": "u-7"})},
		{"severity text only", 1_700_000_000_003, "warn", ptr("u-8"), nil, nil,
			with(map[string]any{"enduser.id": "u-8", "event_name": "cache.miss"})},
		{"in a span", 1_700_000_000_004, "debug", nil, ptr("4bf92f3577b34da6a3ce929d0e0e4736"), ptr("00f067aa0ba902b7"),
			with(nil)},
	}
	for _, w := range want {
		e, ok := got[w.message]
		if !ok {
			t.Errorf("no entry with message %q; got %v", w.message, messages(*lr.JSON200))
			continue
		}
		if e.ProjectId != projectID || e.Time != w.time || e.Level != w.level {
			t.Errorf("%q: project %s time %d level %q, want %s %d %q", w.message, e.ProjectId, e.Time, e.Level, projectID, w.time, w.level)
		}
		if e.Subject == nil || *e.Subject != service {
			t.Errorf("%q: subject %v, want %q", w.message, e.Subject, service)
		}
		if !reflect.DeepEqual(e.UserId, w.userID) || !reflect.DeepEqual(e.TraceId, w.traceID) || !reflect.DeepEqual(e.SpanId, w.spanID) {
			t.Errorf("%q: user_id %v trace_id %v span_id %v, want %v %v %v", w.message, deref(e.UserId), deref(e.TraceId), deref(e.SpanId), deref(w.userID), deref(w.traceID), deref(w.spanID))
		}
		var attrs map[string]any
		if err := json.Unmarshal(e.Attributes, &attrs); err != nil {
			t.Errorf("%q: attributes %s: %v", w.message, e.Attributes, err)
			continue
		}
		if !reflect.DeepEqual(attrs, w.attributes) {
			t.Errorf("%q: attributes\n got %s\nwant %v", w.message, e.Attributes, w.attributes)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
