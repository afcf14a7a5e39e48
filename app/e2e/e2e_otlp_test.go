package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
)

func TestOTLPIngest(t *testing.T) {
	forEachStore(t, testOTLPIngest)
}

// testOTLPIngest: both encodings, gzip and identity, the mapping, partial success, the
// project rules, exactly-once and every failure status, on one store.
func testOTLPIngest(t *testing.T, open storeOpener) {
	e := newEnv(t, open, func(c *server.Config) { c.OTLPMaxBody = 1 << 20 })
	p := e.project("otlp")
	hc := http.DefaultClient
	hdr := map[string]string{"X-Project-Id": p.Id}

	t.Run("mapping, both encodings", func(t *testing.T) {
		for _, enc := range []struct {
			ct   string
			gzip bool
		}{{ctProto, false}, {ctProto, true}, {ctJSON, false}, {ctJSON, true}} {
			q := e.project(fmt.Sprintf("map-%s-%v", enc.ct, enc.gzip))
			rec := &logspb.LogRecord{
				TimeUnixNano:   1_700_000_000_123_999_999,
				SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_WARN2,
				SeverityText:   "Warning",
				EventName:      "payment.retry",
				Body:           &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{kv("a", str("b"))}}}},
				Attributes:     []*commonpb.KeyValue{kv("user.id", str("u-1")), kv("host.name", str("record wins")), kv("n", &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 7}})},
			}
			observed := &logspb.LogRecord{ObservedTimeUnixNano: 5_000_000, SeverityText: "NOTICE", Body: str("observed only"), Attributes: []*commonpb.KeyValue{kv("enduser.id", str("u-2"))}}
			bare := &logspb.LogRecord{}
			a := postOTLP(t, hc, e.url, otlpCall{contentType: enc.ct, gzip: enc.gzip, body: encodeOTLP(t, enc.ct, otlpRequest(rec, observed, bare)), headers: map[string]string{"X-Project-Id": q.Id}})
			if a.status != 200 || a.contentType != enc.ct || a.resp.GetPartialSuccess() != nil {
				t.Fatalf("%s gzip=%v: %d %s %v", enc.ct, enc.gzip, a.status, a.contentType, a.resp)
			}
			got := listAll(t, e, q.Id)
			if len(got) != 3 {
				t.Fatalf("%d entries, want 3", len(got))
			}
			byMsg := map[string]rest.LogEntry{}
			for _, le := range got {
				byMsg[le.Message] = le
			}
			r := byMsg[`{"a":"b"}`]
			if r.Time != 1_700_000_000_123 || r.Level != "warn" || *r.Subject != "checkout" || *r.UserId != "u-1" {
				t.Errorf("record = %+v", r)
			}
			wantAttrs := `{"event_name":"payment.retry","host.name":"record wins","n":7,"otel.scope.name":"lib","otel.scope.version":"1.2","service.name":"checkout","severity_text":"Warning","user.id":"u-1"}`
			if string(r.Attributes) != wantAttrs {
				t.Errorf("attributes = %s\nwant %s", r.Attributes, wantAttrs)
			}
			o := byMsg["observed only"]
			// syslog's notice is info; the text as sent stays in severity_text.
			if o.Time != 5 || o.Level != "info" || *o.UserId != "u-2" {
				t.Errorf("observed-only record = %+v", o)
			}
			if want := `{"enduser.id":"u-2","host.name":"h1","otel.scope.name":"lib","otel.scope.version":"1.2","service.name":"checkout","severity_text":"NOTICE"}`; string(o.Attributes) != want {
				t.Errorf("observed-only attributes = %s\nwant %s", o.Attributes, want)
			}
			b, ok := byMsg[""]
			if !ok || b.Level != "info" || b.Time < 1_700_000_000_000 {
				t.Errorf("bare record = %+v (present %v)", b, ok)
			}
		}
	})

	t.Run("the specification's example JSON keeps its hex ids", func(t *testing.T) {
		q := e.project("spec-example")
		a := postOTLP(t, hc, e.url, otlpCall{contentType: ctJSON, body: []byte(specExampleJSON), headers: map[string]string{"X-Project-Id": q.Id}})
		if a.status != 200 {
			t.Fatalf("%d %s", a.status, a.raw)
		}
		got := listAll(t, e, q.Id)
		if len(got) != 1 {
			t.Fatalf("%d entries", len(got))
		}
		g := got[0]
		if *g.TraceId != "5b8efff798038103d269b633813fc60c" || *g.SpanId != "eee19b7ec3c1b174" || g.Message != "Example log record" || g.Level != "info" || g.Time != 1544712660300 || *g.Subject != "my.service" {
			t.Errorf("entry = %+v trace %v span %v", g, *g.TraceId, *g.SpanId)
		}
		for _, want := range []string{`"int.attribute":10`, `"double.attribute":637.704`, `"array.attribute":["many","values"]`, `"map.attribute":{"some.map.key":"some value"}`, `"boolean.attribute":true`} {
			if !strings.Contains(string(g.Attributes), want) {
				t.Errorf("attributes %s lack %s", g.Attributes, want)
			}
		}
		// By trace, as a user would find it.
		tr, err := e.client.ListLogsWithResponse(t.Context(), &rest.ListLogsParams{ProjectId: q.Id, TraceId: ptr("5B8EFFF798038103D269B633813FC60C")})
		if err != nil || tr.JSON200 == nil || len(*tr.JSON200) != 1 {
			t.Errorf("by trace = %v %d %s", err, tr.StatusCode(), tr.Body)
		}
	})

	t.Run("partial success and dropped ids", func(t *testing.T) {
		q := e.project("partial")
		big := strings.Repeat("x", 64<<10+1)
		req := otlpRequest(
			&logspb.LogRecord{Body: str("ok 1"), TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8)},
			&logspb.LogRecord{Body: str(big)},
			&logspb.LogRecord{Body: str("short ids"), TraceId: []byte{1, 2, 3}, SpanId: bytes.Repeat([]byte{2}, 9)},
			&logspb.LogRecord{Body: str("nul \x00")},
		)
		for _, ct := range []string{ctProto} {
			a := postOTLP(t, hc, e.url, otlpCall{contentType: ct, body: encodeOTLP(t, ct, req), headers: map[string]string{"X-Project-Id": q.Id}})
			ps := a.resp.GetPartialSuccess()
			if a.status != 200 || ps.GetRejectedLogRecords() != 2 {
				t.Fatalf("%d %v", a.status, a.resp)
			}
			for _, want := range []string{"resourceLogs[0].scopeLogs[0].logRecords[1]: body must be at most 65536 bytes", "logRecords[3]: body", "logRecords[2]: traceId dropped", "logRecords[2]: spanId dropped"} {
				if !strings.Contains(ps.GetErrorMessage(), want) {
					t.Errorf("error_message %q lacks %q", ps.GetErrorMessage(), want)
				}
			}
		}
		got := listAll(t, e, q.Id)
		if len(got) != 2 || got[0].Message != "ok 1" || *got[0].TraceId != strings.Repeat("01", 16) || got[1].Message != "short ids" || got[1].TraceId != nil || got[1].SpanId != nil {
			t.Errorf("stored %+v", got)
		}
	})

	t.Run("an empty request succeeds", func(t *testing.T) {
		for _, ct := range []string{ctProto, ctJSON} {
			body := []byte{}
			if ct == ctJSON {
				body = []byte(`{}`)
			}
			a := postOTLP(t, hc, e.url, otlpCall{contentType: ct, body: body, headers: hdr})
			if a.status != 200 || a.resp.GetPartialSuccess() != nil {
				t.Errorf("%s: %d %v", ct, a.status, a.resp)
			}
		}
	})

	t.Run("exactly once", func(t *testing.T) {
		q := e.project("once")
		h := map[string]string{"X-Project-Id": q.Id}
		body := encodeOTLP(t, ctProto, otlpRequest(&logspb.LogRecord{Body: str("once")}, &logspb.LogRecord{Body: str(strings.Repeat("y", 64<<10+1))}))
		for i := range 3 {
			a := postOTLP(t, hc, e.url, otlpCall{contentType: ctProto, gzip: i == 1, body: body, headers: h})
			if a.status != 200 || a.resp.GetPartialSuccess().GetRejectedLogRecords() != 1 {
				t.Fatalf("send %d: %d %v", i, a.status, a.resp)
			}
		}
		if n := e.logCount(q.Id); n != 1 {
			t.Errorf("stored %d entries from three identical requests, want 1", n)
		}
		// With an Idempotency-Key: another body under it is refused, and stores nothing.
		h["Idempotency-Key"] = "k-1"
		if a := postOTLP(t, hc, e.url, otlpCall{contentType: ctProto, body: encodeOTLP(t, ctProto, otlpRequest(&logspb.LogRecord{Body: str("keyed")})), headers: h}); a.status != 200 {
			t.Fatalf("keyed: %d", a.status)
		}
		a := postOTLP(t, hc, e.url, otlpCall{contentType: ctProto, body: encodeOTLP(t, ctProto, otlpRequest(&logspb.LogRecord{Body: str("other")})), headers: h})
		if a.status != 422 || a.st.GetCode() != 9 {
			t.Errorf("same key, other body: %d %v", a.status, a.st)
		}
		if n := e.logCount(q.Id); n != 2 {
			t.Errorf("stored %d entries, want 2", n)
		}
	})

	t.Run("failures", func(t *testing.T) {
		ok := encodeOTLP(t, ctProto, otlpRequest(&logspb.LogRecord{Body: str("m")}))
		var bomb bytes.Buffer
		zw := gzip.NewWriter(&bomb)
		_, _ = zw.Write(make([]byte, 8<<20)) // 8 MiB of zeros: about 8 KiB compressed
		_ = zw.Close()
		cases := []struct {
			name string
			call otlpCall
			want int
			code int32
		}{
			{"garbage protobuf", otlpCall{contentType: ctProto, body: []byte{0xff, 0xff, 0xff}, headers: hdr}, 400, 3},
			{"garbage JSON", otlpCall{contentType: ctJSON, body: []byte(`{"resourceLogs":7}`), headers: hdr}, 400, 3},
			// The decoder's error quotes the byte; the answer still has to be valid UTF-8.
			{"JSON that is not UTF-8", otlpCall{contentType: ctJSON, body: []byte{0x96}, headers: hdr}, 400, 3},
			{"bad gzip", otlpCall{contentType: ctJSON, body: []byte(`not gzip`), headers: map[string]string{"X-Project-Id": p.Id, "Content-Encoding": "gzip"}}, 400, 3},
			{"no X-Project-Id with the open default", otlpCall{contentType: ctProto, body: ok}, 400, 3},
			{"unknown project", otlpCall{contentType: ctJSON, body: []byte(`{}`), headers: map[string]string{"X-Project-Id": "01936f0e-8c2a-7b3e-9d4f-2a6b8c0d1e2f"}}, 404, 5},
			{"malformed project", otlpCall{contentType: ctProto, body: ok, headers: map[string]string{"X-Project-Id": "nope"}}, 404, 5},
			{"too large", otlpCall{contentType: ctProto, body: make([]byte, 1<<20+1), headers: hdr}, 413, 8},
			{"gzip bomb", otlpCall{contentType: ctProto, body: bomb.Bytes(), headers: map[string]string{"X-Project-Id": p.Id, "Content-Encoding": "gzip"}}, 413, 8},
			{"text/plain", otlpCall{contentType: "text/plain", body: ok, headers: hdr}, 415, 3},
			{"brotli", otlpCall{contentType: ctProto, body: ok, headers: map[string]string{"X-Project-Id": p.Id, "Content-Encoding": "br"}}, 415, 3},
			{"bad Idempotency-Key", otlpCall{contentType: ctProto, body: ok, headers: map[string]string{"X-Project-Id": p.Id, "Idempotency-Key": strings.Repeat("k", 256)}}, 400, 3},
		}
		for _, c := range cases {
			a := postOTLP(t, hc, e.url, c.call)
			wantCT := c.call.contentType
			if wantCT != ctJSON {
				wantCT = ctProto
			}
			if a.status != c.want || a.st.GetCode() != c.code || a.contentType != wantCT || a.st.GetMessage() == "" {
				t.Errorf("%s: %d %s %v, want %d code %d", c.name, a.status, a.contentType, a.st, c.want, c.code)
			}
		}
		if n := e.logCount(p.Id); n != 0 {
			t.Errorf("failed requests stored %d entries", n)
		}
	})
}

// TestOTLPKeysAndEdgeRefusals: the project rules under API keys, and the edge's refusals of
// /v1/logs (401, 429) answered as google.rpc.Status in the request's content type.
func TestOTLPKeysAndEdgeRefusals(t *testing.T) {
	st := openSQLiteStore(t)
	a, b := seedProjects(t, st)
	cfg := server.DefaultConfig()
	cfg.APIKeys = strings.Join([]string{apitest.KeyLine("admin", "admin-secret"), apitest.KeyLine("project "+a.ID, "key-a"), apitest.KeyLine("project "+b.ID, "key-b")}, ",")
	cfg.WriteRate, cfg.WriteBurst = 0.001, 2 // the third write of one key is refused
	_, srv := servetest.Serve(t, cfg, st, nil)
	body := encodeOTLP(t, ctProto, otlpRequest(&logspb.LogRecord{Body: str("m")}))
	cases := []struct {
		name    string
		ct      string
		headers map[string]string
		want    int
		code    int32
	}{
		{"no key", ctJSON, nil, 401, 16},
		{"wrong key", ctProto, map[string]string{"Authorization": "Bearer nope"}, 401, 16},
		{"project key, its project implied", ctProto, map[string]string{"Authorization": "Bearer key-a"}, 200, 0},
		{"project key naming its project", ctProto, map[string]string{"Authorization": "Bearer key-a", "X-Project-Id": a.ID}, 200, 0},
		{"project key naming another", ctJSON, map[string]string{"Authorization": "Bearer key-b", "X-Project-Id": a.ID}, 403, 7},
		{"admin key without a project", ctProto, map[string]string{"Authorization": "Bearer admin-secret"}, 400, 3},
		{"admin key naming one", ctProto, map[string]string{"Authorization": "Bearer admin-secret", "X-Project-Id": b.ID}, 200, 0},
		{"over the write rate", ctJSON, map[string]string{"Authorization": "Bearer admin-secret", "X-Project-Id": b.ID}, 429, 8},
	}
	for _, c := range cases {
		call := otlpCall{contentType: c.ct, body: body, headers: c.headers}
		if c.ct == ctJSON {
			call.body = []byte(`{}`)
		}
		ans := postOTLP(t, http.DefaultClient, srv.URL, call)
		if ans.status != c.want || ans.contentType != c.ct {
			t.Errorf("%s: %d %s %q, want %d", c.name, ans.status, ans.contentType, ans.raw, c.want)
			continue
		}
		if c.want != 200 && ans.st.GetCode() != c.code {
			t.Errorf("%s: code %d, want %d", c.name, ans.st.GetCode(), c.code)
		}
		if (c.want == 429) != (ans.retryAfter != "") {
			t.Errorf("%s: Retry-After %q", c.name, ans.retryAfter)
		}
	}
	if n := storetest.CountEntries(t, st, a.ID); n != 1 { // the second request of key-a replays the first
		t.Errorf("project a holds %d entries, want 1", n)
	}
}
