package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"

	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
)

// sdkExporter is the OpenTelemetry Go SDK's OTLP/HTTP log exporter pointed at url, gzip on, with
// the given headers and retry policy.
func sdkExporter(t *testing.T, url string, headers map[string]string, retry otlploghttp.RetryConfig) *otlploghttp.Exporter {
	t.Helper()
	exp, err := otlploghttp.New(t.Context(),
		otlploghttp.WithEndpointURL(url+"/v1/logs"),
		otlploghttp.WithCompression(otlploghttp.GzipCompression),
		otlploghttp.WithHeaders(headers),
		otlploghttp.WithRetry(retry),
	)
	if err != nil {
		t.Fatal(err)
	}
	return exp
}

// emitSDKRecords emits the record kinds through a provider over exp and flushes them in
// one export; it returns the provider's flush error.
func emitSDKRecords(t *testing.T, exp sdklog.Exporter) error {
	t.Helper()
	res := resource.NewSchemaless(attribute.String("service.name", "sdk-svc"))
	lp := sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)))
	defer func() { _ = lp.Shutdown(context.WithoutCancel(t.Context())) }()
	lg := lp.Logger("sdk-test", otellog.WithInstrumentationVersion("0.1"))

	var r otellog.Record
	r.SetTimestamp(time.UnixMilli(1_700_000_000_001))
	r.SetSeverity(otellog.SeverityInfo)
	r.SetBody(attribute.StringValue("string body"))
	lg.Emit(t.Context(), r)

	r = otellog.Record{}
	r.SetTimestamp(time.UnixMilli(1_700_000_000_002))
	r.SetSeverity(otellog.SeverityError)
	r.SetBody(attribute.MapValue(attribute.String("order", "o-1"), attribute.Int("qty", 3)))
	r.AddAttributes(attribute.String("user.id", "u-7"))
	lg.Emit(t.Context(), r)

	r = otellog.Record{}
	r.SetObservedTimestamp(time.UnixMilli(1_700_000_000_003))
	r.SetSeverityText("WARN")
	r.SetBody(attribute.StringValue("observed only"))
	lg.Emit(t.Context(), r)

	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(t.Context(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	r = otellog.Record{}
	r.SetTimestamp(time.UnixMilli(1_700_000_000_004))
	r.SetSeverity(otellog.SeverityDebug)
	r.SetBody(attribute.StringValue("in a span"))
	lg.Emit(ctx, r)

	return lp.ForceFlush(t.Context())
}

// TestOTLPGoSDK: the OpenTelemetry Go SDK's exporter, gzip on, a project key in its headers;
// every record kind reads back through GET /logs as the README's mapping says.
func TestOTLPGoSDK(t *testing.T) {
	e := newEnv(t, openSQLiteStore, nil)
	p := e.project("sdk")
	exp := sdkExporter(t, e.url, map[string]string{"X-Project-Id": p.Id}, otlploghttp.RetryConfig{Enabled: false})
	if err := emitSDKRecords(t, exp); err != nil {
		t.Fatalf("export: %v", err)
	}
	got := listAll(t, e, p.Id)
	if len(got) != 4 {
		t.Fatalf("%d entries, want 4: %+v", len(got), got)
	}
	byMsg := map[string]rest.LogEntry{}
	for _, le := range got {
		byMsg[le.Message] = le
		if le.Subject == nil || *le.Subject != "sdk-svc" {
			t.Errorf("%q: subject %v", le.Message, le.Subject)
		}
		if !strings.Contains(string(le.Attributes), `"otel.scope.name":"sdk-test"`) || !strings.Contains(string(le.Attributes), `"otel.scope.version":"0.1"`) {
			t.Errorf("%q: attributes %s", le.Message, le.Attributes)
		}
	}
	if s := byMsg["string body"]; s.Time != 1_700_000_000_001 || s.Level != "info" || s.TraceId != nil {
		t.Errorf("string body: %+v", s)
	}
	if m, ok := byMsg[`{"order":"o-1","qty":3}`]; !ok || m.Level != "error" || m.UserId == nil || *m.UserId != "u-7" || m.Time != 1_700_000_000_002 {
		t.Errorf("map body: %+v (present %v); got %v", m, ok, messages(got))
	}
	if o := byMsg["observed only"]; o.Time != 1_700_000_000_003 || o.Level != "warn" {
		t.Errorf("observed only: %+v", o)
	}
	if s := byMsg["in a span"]; s.TraceId == nil || *s.TraceId != "4bf92f3577b34da6a3ce929d0e0e4736" || s.SpanId == nil || *s.SpanId != "00f067aa0ba902b7" || s.Level != "debug" {
		t.Errorf("in a span: %+v", s)
	}
}

// TestOTLPGoSDKRetries: a 503 with Retry-After is retried by the exporter and the records are
// stored once; a 400 is not retried.
func TestOTLPGoSDKRetries(t *testing.T) {
	st := openSQLiteStore(t)
	a, _ := seedProjects(t, st)
	cfg := server.DefaultConfig()
	svc, _ := servetest.Serve(t, cfg, st, nil)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		svc.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	retry := otlploghttp.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: 20 * time.Second}
	if err := emitSDKRecords(t, sdkExporter(t, srv.URL, map[string]string{"X-Project-Id": a.ID}, retry)); err != nil {
		t.Fatalf("export after a 503: %v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d requests, want 2 (one 503, one retry)", n)
	}
	if n := storetest.CountEntries(t, st, a.ID); n != 4 {
		t.Errorf("stored %d entries, want 4 exactly once", n)
	}

	calls.Store(1) // the next request passes through, and is refused: no X-Project-Id
	if err := emitSDKRecords(t, sdkExporter(t, srv.URL, nil, retry)); err == nil {
		t.Error("export answered 400 reported no error")
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d requests after a 400, want 1 (not retried)", n-1)
	}
}
