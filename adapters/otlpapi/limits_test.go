package otlpapi_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"example.com/obsvc/adapters/otlpapi"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

func str(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

func kv(k, v string) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: str(v)} }

// TestOTLPUsesConfiguredLimits: the mapping judges a severity_text by the limits the service was
// configured with, not by the defaults, and the configured attribute limits reach OTLP records.
// With levels of at most 5 characters, "NOTICE" (a valid level by default) is no level: the
// record is stored at the default level, severity_text kept in its attributes, where a mapping
// on the default limits would hand the service a level it refuses and lose the record. With at
// most 3 attribute keys, a record whose mapped attributes have 4 is rejected by path.
func TestOTLPUsesConfiguredLimits(t *testing.T) {
	ctx := context.Background()
	st := storetest.OpenSQLite(t)
	limits := domain.DefaultLimits()
	limits.MaxLevelChars = 5
	limits.MaxAttributes = 3
	svc := domain.NewService(st, domain.Options{Limits: limits, NewID: func() string { return uuid.Must(uuid.NewV7()).String() }})
	admin := domain.WithPrincipal(ctx, domain.Principal{Admin: true})
	p, err := svc.CreateProject(admin, domain.ProjectInput{Name: "limits"})
	if err != nil {
		t.Fatal(err)
	}
	h := otlpapi.NewHandler(svc, otlpapi.Options{})

	req := &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{
			{TimeUnixNano: 1_700_000_000_001_000_000, SeverityText: "NOTICE", Body: str("too long a level")},
			{TimeUnixNano: 1_700_000_000_002_000_000, SeverityText: "WARN", Body: str("a level")},
			{TimeUnixNano: 1_700_000_000_003_000_000, Body: str("too many keys"), Attributes: []*commonpb.KeyValue{kv("a", "1"), kv("b", "2"), kv("c", "3"), kv("d", "4")}},
		}}},
	}}}
	body, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequestWithContext(admin, http.MethodPost, otlpapi.Path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/x-protobuf")
	r.Header.Set("X-Project-Id", p.ID)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("POST %s = %d %q", otlpapi.Path, w.Code, w.Body.Bytes())
	}
	var resp collogspb.ExportLogsServiceResponse
	if err := proto.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	ps := resp.GetPartialSuccess()
	if ps.GetRejectedLogRecords() != 1 || !strings.Contains(ps.GetErrorMessage(), "resourceLogs[0].scopeLogs[0].logRecords[2]: attributes") {
		t.Errorf("partial success %v, want the record with 4 attribute keys (and only it) rejected by path", ps)
	}

	got := map[string]domain.LogEntry{}
	err = svc.ListLogs(admin, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}}, func(pg domain.Page) error {
		for e, err := range pg.Entries {
			if err != nil {
				return err
			}
			got[e.Message] = e
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("stored %d entries, want 2: %+v", len(got), got)
	}
	if e := got["too long a level"]; e.Level != domain.DefaultLevel || !strings.Contains(string(e.Attributes), `"severity_text":"NOTICE"`) {
		t.Errorf("NOTICE over a 5-character level limit: level %q attributes %s, want %q and the text kept", e.Level, e.Attributes, domain.DefaultLevel)
	}
	if e := got["a level"]; e.Level != "warn" {
		t.Errorf("WARN: level %q, want warn", e.Level)
	}
}

// blockingBody is a request body whose first Read says so on started and then waits for release.
type blockingBody struct {
	started chan<- struct{}
	release <-chan struct{}
	once    sync.Once
}

func (b *blockingBody) Read([]byte) (int, error) {
	b.once.Do(func() { b.started <- struct{}{} })
	<-b.release
	return 0, io.ErrUnexpectedEOF
}

// TestOTLPDecodesAtOnceAreCapped: past MaxDecodesPerClient requests of one client being read and
// decoded, its next is refused 429, and past MaxDecodes in all anyone's is refused 503, both
// with Retry-After in the OTLP error format; a slot is free again once its request is answered.
func TestOTLPDecodesAtOnceAreCapped(t *testing.T) {
	ctx := context.Background()
	st := storetest.OpenSQLite(t)
	svc := domain.NewService(st, domain.Options{NewID: func() string { return uuid.Must(uuid.NewV7()).String() }})
	admin := domain.WithPrincipal(ctx, domain.Principal{Admin: true})
	p, err := svc.CreateProject(admin, domain.ProjectInput{Name: "slots"})
	if err != nil {
		t.Fatal(err)
	}
	h := otlpapi.NewHandler(svc, otlpapi.Options{MaxDecodes: 2, MaxDecodesPerClient: 1, ClientID: func(r *http.Request) string { return r.Header.Get("X-Client") }})
	post := func(client string, body io.Reader) *httptest.ResponseRecorder {
		r := httptest.NewRequestWithContext(admin, http.MethodPost, otlpapi.Path, body)
		r.Header.Set("Content-Type", "application/x-protobuf")
		r.Header.Set("X-Project-Id", p.ID)
		r.Header.Set("X-Client", client)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}

	started, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	for _, client := range []string{"a", "b"} {
		wg.Go(func() { post(client, &blockingBody{started: started, release: release}) })
		<-started
	}
	refused := []struct {
		client string
		status int
	}{{"a", http.StatusTooManyRequests}, {"c", http.StatusServiceUnavailable}}
	for _, c := range refused {
		w := post(c.client, bytes.NewReader(nil))
		var st status.Status
		if w.Code != c.status || w.Header().Get("Retry-After") == "" || proto.Unmarshal(w.Body.Bytes(), &st) != nil || !strings.Contains(st.GetMessage(), "OTLP_MAX_DECODES") {
			t.Errorf("client %s with two requests being decoded: %d Retry-After %q %q, want %d with Retry-After naming the limit", c.client, w.Code, w.Header().Get("Retry-After"), w.Body.Bytes(), c.status)
		}
	}
	close(release)
	wg.Wait()
	if w := post("a", bytes.NewReader(nil)); w.Code != http.StatusOK {
		t.Errorf("after the slots were freed: %d %q, want 200", w.Code, w.Body.Bytes())
	}
}
