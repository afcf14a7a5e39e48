// Package e2e tests the contract through the real stack: the service built by server.New (the
// one constructor app's run uses) over SQLite, PostgreSQL and, under the citus tag, Citus, driven
// over HTTP by the generated clients, node, a browser and OpenTelemetry exporters. Process-level
// tests of the command (flags, environment, run's lifecycle) are app's own (app/main_test.go).
//
// This file is the harness: every helper the tests share lives here.
package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/adapters/sqlstore/pgtest"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
	"example.com/obsvc/domain"
)

// seedProjects creates projects "a" and "b" in st through the service's core, as an admin.
func seedProjects(t *testing.T, st server.Store) (a, b domain.Project) {
	t.Helper()
	svc, err := server.New(server.DefaultConfig(), st, slog.New(slog.DiscardHandler), server.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := domain.WithPrincipal(t.Context(), domain.Principal{Admin: true})
	if a, err = svc.Core.CreateProject(ctx, domain.ProjectInput{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if b, err = svc.Core.CreateProject(ctx, domain.ProjectInput{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// storeOpener opens a fresh, empty store for one test.
type storeOpener func(t *testing.T) server.Store

func openSQLiteStore(t *testing.T) server.Store { return storetest.OpenSQLite(t) }

// env is one running server (the real wiring, on a random loopback port) and clients for it.
// Every response the clients receive is validated against openapi.yaml.
type env struct {
	t      *testing.T
	svc    *server.Server
	url    string
	store  server.Store
	client *rest.ClientWithResponses
	http   *http.Client
	tr     *apitest.Transport
}

func newEnv(t *testing.T, open storeOpener, tweak func(*server.Config)) *env {
	t.Helper()
	return newEnvWith(t, open, tweak, server.Deps{})
}

// newEnvWith is newEnv with the parts a test replaces (a clock).
func newEnvWith(t *testing.T, open storeOpener, tweak func(*server.Config), d server.Deps) *env {
	t.Helper()
	cfg := server.DefaultConfig()
	if tweak != nil {
		tweak(&cfg)
	}
	st := open(t)
	svc, srv := servetest.ServeWith(t, cfg, st, nil, d)
	tr := apitest.NewTransport(t, nil)
	hc := &http.Client{Transport: tr}
	c, err := rest.NewClientWithResponses(srv.URL, rest.WithHTTPClient(hc))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return &env{t: t, svc: svc, url: srv.URL, store: st, client: c, http: hc, tr: tr}
}

// newEnvWithProject is newEnv with the default configuration and one project, "p", created
// through the API.
func newEnvWithProject(t *testing.T, open storeOpener) (*env, rest.Project) {
	t.Helper()
	e := newEnv(t, open, nil)
	return e, e.project("p")
}

// do sends a raw request through the validating client.
func (e *env) do(method, path, contentType, body string) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, b
}

// roundTrip sends req with client and returns the answer and its body, read and closed.
func roundTrip(t *testing.T, client *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, body
}

func (e *env) project(name string) rest.Project {
	e.t.Helper()
	r, err := e.client.CreateProjectWithResponse(e.t.Context(), rest.ProjectInput{Name: name})
	if err != nil || r.JSON201 == nil {
		e.t.Fatalf("create project: %v, status %d %s", err, r.StatusCode(), r.Body)
	}
	return *r.JSON201
}

// logCount is how many entries the store holds for a project, read past the API.
func (e *env) logCount(projectID string) int {
	e.t.Helper()
	return storetest.CountEntries(e.t, e.store, projectID)
}

func problemOf(t *testing.T, body []byte) rest.Problem {
	t.Helper()
	var p rest.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("not a problem document: %v: %s", err, body)
	}
	return p
}

// fieldsOf lists a problem's errors as "pointer" or "?parameter" strings.
func fieldsOf(p rest.Problem) []string {
	var out []string
	if p.Errors == nil {
		return nil
	}
	for _, f := range *p.Errors {
		switch {
		case f.Pointer != nil:
			out = append(out, *f.Pointer)
		case f.Parameter != nil:
			out = append(out, "?"+*f.Parameter)
		}
	}
	return out
}

// wantAnswer fails the test unless the answer has status and, when fields is not nil, is a
// problem naming exactly those fields.
func wantAnswer(t *testing.T, resp *http.Response, body []byte, status int, fields []string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, body)
	}
	if fields != nil {
		if got := fieldsOf(problemOf(t, body)); !slices.Equal(got, fields) {
			t.Errorf("errors name %q, want %q", got, fields)
		}
	}
}

func ptr[T any](v T) *T { return &v }

type namedStore struct {
	name string
	open storeOpener
}

// pg is the PostgreSQL server of this test binary (see pgtest.Run).
var pg *pgtest.Server

// citus is the Citus cluster of this test binary under the citus build tag (make test-citus).
var citus *pgtest.Citus

// TestMain starts the PostgreSQL server, and the Citus cluster too under the citus build tag.
func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &pg, pgtest.WithCitus(&citus))) }

func openPostgresStore(t *testing.T) server.Store {
	return storetest.OpenPostgres(t, pg.NewDatabase(t))
}

// openCitusStore opens a store on the Citus coordinator; the service distributes the schema
// itself when it opens the store.
func openCitusStore(t *testing.T) server.Store {
	return storetest.OpenPostgres(t, citus.NewDatabase(t))
}

// e2eStores lists the stores the end-to-end contract runs against: both, always, and a Citus
// coordinator under the citus build tag (make test-citus). Without a PostgreSQL server its half is
// skipped loudly (failed under CI=true) by pgtest.
func e2eStores() []namedStore {
	stores := []namedStore{{"sqlite", openSQLiteStore}, {"postgres", openPostgresStore}}
	if pgtest.CitusTagged {
		stores = append(stores, namedStore{"citus", openCitusStore})
	}
	return stores
}

// forEachStore runs fn as a parallel subtest on every store of e2eStores.
func forEachStore(t *testing.T, fn func(*testing.T, storeOpener)) {
	t.Helper()
	for _, s := range e2eStores() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			fn(t, s.open)
		})
	}
}

// seed writes entries at times 100, 110, ... with users and levels in a fixed pattern.
func seed(t *testing.T, e *env, projectID string, n int) []rest.LogEntryInput {
	t.Helper()
	var in []rest.LogEntryInput
	levels := []string{"info", "error", "debug"}
	for i := range n {
		le := rest.LogEntryInput{ProjectId: projectID, Message: fmt.Sprint(i), Time: ptr(int64(100 + 10*i)), Level: ptr(levels[i%3])}
		if i%2 == 0 {
			le.UserId = ptr("alice")
		}
		in = append(in, le)
	}
	r, err := e.client.CreateLogsWithResponse(t.Context(), nil, in)
	if err != nil || r.StatusCode() != 201 {
		t.Fatalf("seed: %v %d %s", err, r.StatusCode(), r.Body)
	}
	return in
}

// listMessages lists one page of params through the generated client and returns its messages.
func (e *env) listMessages(t *testing.T, params rest.ListLogsParams) []string {
	t.Helper()
	r, err := e.client.ListLogsWithResponse(t.Context(), &params)
	if err != nil || r.JSON200 == nil {
		t.Fatalf("list %+v = %v %d %s", params, err, r.StatusCode(), r.Body)
	}
	return messages(*r.JSON200)
}

func messages(es []rest.LogEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Message)
	}
	return out
}

const (
	ctProto = "application/x-protobuf"
	ctJSON  = "application/json"
)

// otlpCall is one POST /v1/logs as a test sends it.
type otlpCall struct {
	contentType string
	gzip        bool
	body        []byte
	headers     map[string]string
}

// otlpAnswer is what came back: the status, the content type and the decoded message (an
// ExportLogsServiceResponse on 200, a google.rpc.Status otherwise).
type otlpAnswer struct {
	status      int
	contentType string
	retryAfter  string
	resp        *collogspb.ExportLogsServiceResponse
	st          *status.Status
	raw         []byte
}

func postOTLP(t *testing.T, client *http.Client, url string, c otlpCall) otlpAnswer {
	t.Helper()
	body := c.body
	if c.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body = buf.Bytes()
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/v1/logs", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", c.contentType)
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST /v1/logs: %v", err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := otlpAnswer{status: res.StatusCode, contentType: res.Header.Get("Content-Type"), retryAfter: res.Header.Get("Retry-After"), raw: raw}
	var m proto.Message
	if res.StatusCode == 200 {
		a.resp = &collogspb.ExportLogsServiceResponse{}
		m = a.resp
	} else {
		a.st = &status.Status{}
		m = a.st
	}
	if a.contentType == ctJSON {
		err = protojson.Unmarshal(raw, m)
	} else {
		err = proto.Unmarshal(raw, m)
	}
	if err != nil {
		t.Fatalf("answer %d (%s) does not decode: %v: %q", res.StatusCode, a.contentType, err, raw)
	}
	return a
}

func encodeOTLP(t *testing.T, ct string, req *collogspb.ExportLogsServiceRequest) []byte {
	t.Helper()
	var (
		b   []byte
		err error
	)
	if ct == ctJSON {
		b, err = protojson.Marshal(req) // ids as base64: only for requests without ids
	} else {
		b, err = proto.Marshal(req)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func str(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

func kv(k string, v *commonpb.AnyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: v}
}

// otlpRequest is one resource (service "checkout") with one scope holding records.
func otlpRequest(records ...*logspb.LogRecord) *collogspb.ExportLogsServiceRequest {
	return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", str("checkout")), kv("host.name", str("h1"))}},
		ScopeLogs: []*logspb.ScopeLogs{{
			Scope:      &commonpb.InstrumentationScope{Name: "lib", Version: "1.2"},
			LogRecords: records,
		}},
	}}}
}

// listAll reads a project's entries through GET /logs.
func listAll(t *testing.T, e *env, projectID string) []rest.LogEntry {
	t.Helper()
	lr, err := e.client.ListLogsWithResponse(t.Context(), &rest.ListLogsParams{ProjectId: projectID})
	if err != nil || lr.JSON200 == nil {
		t.Fatalf("list = %v %d %s", err, lr.StatusCode(), lr.Body)
	}
	return *lr.JSON200
}

// specExampleJSON is the OTLP specification's example logs request (opentelemetry-proto,
// examples/logs.json): hex ids in upper case, 64-bit integers as strings.
const specExampleJSON = `{
  "resourceLogs": [{
    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "my.service"}}]},
    "scopeLogs": [{
      "scope": {"name": "my.library", "version": "1.0.0",
        "attributes": [{"key": "my.scope.attribute", "value": {"stringValue": "some scope attribute"}}]},
      "logRecords": [{
        "timeUnixNano": "1544712660300000000",
        "observedTimeUnixNano": "1544712660300000000",
        "severityNumber": 10,
        "severityText": "Information",
        "traceId": "5B8EFFF798038103D269B633813FC60C",
        "spanId": "EEE19B7EC3C1B174",
        "body": {"stringValue": "Example log record"},
        "attributes": [
          {"key": "string.attribute", "value": {"stringValue": "some string"}},
          {"key": "boolean.attribute", "value": {"boolValue": true}},
          {"key": "int.attribute", "value": {"intValue": "10"}},
          {"key": "double.attribute", "value": {"doubleValue": 637.704}},
          {"key": "array.attribute", "value": {"arrayValue": {"values": [{"stringValue": "many"}, {"stringValue": "values"}]}}},
          {"key": "map.attribute", "value": {"kvlistValue": {"values": [{"key": "some.map.key", "value": {"stringValue": "some value"}}]}}}
        ]
      }]
    }]
  }]
}`

// nextLink extracts the URL of a Link: <...>; rel="next" header.
func nextLink(t *testing.T, h http.Header) string {
	t.Helper()
	v := h.Get("Link")
	if v == "" {
		return ""
	}
	start, end := strings.Index(v, "<"), strings.Index(v, ">")
	if start != 0 || end < 0 || !strings.HasSuffix(v, `; rel="next"`) {
		t.Fatalf("Link header %q is not <URL>; rel=\"next\"", v)
	}
	return v[1:end]
}

// sseBlock is one block of a stream, up to its blank line: an event, the retry field or a
// comment (a heartbeat).
type sseBlock struct {
	id, event, data, retry, comment string
}

// liveTail is an open tail read line by line in the background.
type liveTail struct {
	t      *testing.T
	check  *apitest.Checker // every log event's data against the spec's LogEntry
	resp   *http.Response
	blocks chan sseBlock
	cancel context.CancelFunc
	ended  chan struct{} // closed when the stream has ended
	err    error         // why it ended: nil for a clean end; read after ended
}

// openTail requests a tail with the key and the extra headers. A status other than 200 is
// returned with the body and no tail. Without a client of its own the request goes through
// apitest's transport, which checks the answer's status and headers (and an error's body)
// against the spec; every log event's data is checked against the spec's LogEntry either way.
func openTail(t *testing.T, client *http.Client, url, key string, hdr ...string) (*liveTail, int, http.Header, []byte) {
	t.Helper()
	if client == nil {
		client = &http.Client{Transport: apitest.NewTransport(t, nil)}
	}
	check, err := apitest.NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return nil, resp.StatusCode, resp.Header, body
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("tail Content-Type %q", ct)
	}
	l := &liveTail{t: t, check: check, resp: resp, blocks: make(chan sseBlock, 64), cancel: cancel, ended: make(chan struct{})}
	t.Cleanup(l.close)
	go l.read()
	return l, resp.StatusCode, resp.Header, nil
}

// mustTail opens a tail as openTail does and fails the test, naming what, when it is refused.
func mustTail(t *testing.T, what string, client *http.Client, url, key string, hdr ...string) *liveTail {
	t.Helper()
	l, status, _, body := openTail(t, client, url, key, hdr...)
	if l == nil {
		t.Fatalf("%s: %d %s", what, status, body)
	}
	return l
}

// read parses the stream by the WHATWG rules this service's events need: one field per line.
func (l *liveTail) read() {
	defer close(l.ended)
	defer close(l.blocks)
	l.err = apitest.ScanBlocks(l.resp.Body, func(b apitest.Block) bool {
		if b.Event == "log" {
			if err := l.check.CheckEvent("LogEntry", []byte(b.Data)); err != nil {
				l.t.Errorf("tail event %s: %v", b.ID, err)
			}
		}
		l.blocks <- sseBlock{id: b.ID, event: b.Event, data: b.Data, retry: b.Retry, comment: b.Comment}
		return true
	})
}

func (l *liveTail) close() {
	l.cancel()
	l.resp.Body.Close()
	<-l.ended
}

// next is the next block, or false when the stream ended; the test fails after wait.
func (l *liveTail) next(wait time.Duration) (sseBlock, bool) {
	l.t.Helper()
	select {
	case b, ok := <-l.blocks:
		return b, ok
	case <-time.After(wait):
		l.t.Fatalf("no event from the tail within %v", wait)
		return sseBlock{}, false
	}
}

// tailEntry is an event's entry with its id.
type tailEntry struct {
	rest.LogEntry
	eventID string
}

// entries reads the next n entries, skipping the retry field and heartbeats.
func (l *liveTail) entries(n int) []tailEntry {
	l.t.Helper()
	var out []tailEntry
	l.events(n, "entries", func(b sseBlock) { out = append(out, l.entry(b)) })
	return out
}

// events hands fn each of the next n events, skipping the retry field and heartbeats; what
// names them if the stream ends first.
func (l *liveTail) events(n int, what string, fn func(sseBlock)) {
	l.t.Helper()
	for i := 0; i < n; {
		b, ok := l.next(30 * time.Second)
		if !ok {
			l.t.Fatalf("the stream ended after %d of %d %s: %v", i, n, what, l.err)
		}
		if b.event == "" {
			continue
		}
		fn(b)
		i++
	}
}

func (l *liveTail) entry(b sseBlock) tailEntry {
	l.t.Helper()
	if b.event != "log" || b.id == "" {
		l.t.Fatalf("event %+v, want event: log with an id", b)
	}
	var e rest.LogEntry
	if err := json.Unmarshal([]byte(b.data), &e); err != nil {
		l.t.Fatalf("event data %q: %v", b.data, err)
	}
	return tailEntry{e, b.id}
}

// until reads entries up to and including the one with message last.
func (l *liveTail) until(last string) []tailEntry {
	l.t.Helper()
	var out []tailEntry
	for {
		e := l.entries(1)[0]
		out = append(out, e)
		if e.Message == last {
			return out
		}
	}
}

// waitEnd waits for the server to end the stream.
func (l *liveTail) waitEnd(wait time.Duration) {
	l.t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case b, ok := <-l.blocks:
			if !ok {
				return
			}
			if b.event != "" {
				l.t.Errorf("event %+v before the stream ended", b)
			}
		case <-deadline:
			l.t.Fatalf("the stream did not end within %v", wait)
		}
	}
}

func msgs(es []tailEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Message
	}
	return out
}

// blocksOf reads the next n log events, skipping the retry field and heartbeats.
func (l *liveTail) blocksOf(n int) []sseBlock {
	l.t.Helper()
	var out []sseBlock
	l.events(n, "events", func(b sseBlock) { out = append(out, b) })
	return out
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
	resp, body := apitest.Get(t, base+"/metrics")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return string(body)
}

// nodeTools finds node and npm for a test that runs a real JavaScript client. Under -short it
// skips; without node or npm it skips loudly, and under CI=true it fails instead.
func nodeTools(t *testing.T, what string) (node, npm string) {
	t.Helper()
	if testing.Short() {
		t.Skip("node tests skipped under -short (make quick); make test runs them")
	}
	node, err := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err != nil || err2 != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node and npm are required under CI=true")
		}
		t.Skipf("!!! no node/npm: the %s tests are SKIPPED", what)
	}
	return node, npm
}

// nodePackage is a JavaScript package under testdata whose dependencies are pinned in its
// package-lock.json.
type nodePackage struct {
	dir, what string

	once sync.Once
	abs  string
	err  error
	out  []byte
}

// install returns node and the package's absolute directory, having run npm ci once per test
// process, and only when node_modules does not already hold what the lock pins (npm ci's own
// record of it, node_modules/.package-lock.json, is missing or older than the lock).
func (p *nodePackage) install(t *testing.T) (node, dir string) {
	t.Helper()
	node, npm := nodeTools(t, p.what)
	p.once.Do(func() {
		if p.abs, p.err = filepath.Abs(p.dir); p.err != nil {
			return
		}
		lock, err := os.Stat(filepath.Join(p.abs, "package-lock.json"))
		if err != nil {
			p.err = err
			return
		}
		if done, err := os.Stat(filepath.Join(p.abs, "node_modules", ".package-lock.json")); err == nil && !done.ModTime().Before(lock.ModTime()) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = p.abs
		p.out, p.err = cmd.CombinedOutput()
	})
	if p.err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", p.dir, p.err, p.out)
	}
	return node, p.abs
}

// goTool returns the go command for a test that builds a separate program. Under -short it skips:
// the first run downloads the program's modules through the module proxy.
func goTool(t *testing.T, what string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s skipped under -short (make quick); make test runs it", what)
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go command: %v", err)
	}
	return goCmd
}

// copyFiles copies the named files from dir into dst.
func copyFiles(t *testing.T, dir, dst string, names ...string) {
	t.Helper()
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runCmd runs cmd and fails the test with its output when it fails; it returns the output.
func runCmd(t *testing.T, cmd *exec.Cmd) []byte {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	return out
}

// repeatField is n copies of the empty length-delimited field num.
func repeatField(num protowire.Number, n int) []byte {
	one := protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), nil)
	return bytes.Repeat(one, n)
}

// wrap puts inner in the fields nums, innermost last: wrap(b, 1, 2) is {1: {2: b}}.
func wrap(inner []byte, nums ...protowire.Number) []byte {
	for i := len(nums) - 1; i >= 0; i-- {
		inner = protowire.AppendBytes(protowire.AppendTag(nil, nums[i], protowire.BytesType), inner)
	}
	return inner
}

// fuzzServer is the real wiring on one store, with one project a fuzzed request can name.
type fuzzServer struct {
	name    string
	h       http.Handler
	st      server.Store
	project string
}

// newFuzzServers builds the service on SQLite and on PostgreSQL (a database of the cluster
// pgtest started, which fuzz workers share; see pgtest.Run): every fuzzed request goes to both.
func newFuzzServers(f *testing.F) []*fuzzServer {
	f.Helper()
	sqlite, postgres := storetest.OpenSQLite(f), storetest.OpenPostgres(f, pg.NewDatabase(f))
	var out []*fuzzServer
	for _, st := range []struct {
		name string
		st   server.Store
	}{{"sqlite", sqlite}, {"postgres", postgres}} {
		cfg := server.DefaultConfig()
		cfg.MaxInFlight, cfg.MaxInFlightPer = 0, 0
		svc, err := server.New(cfg, st.st, slog.New(slog.DiscardHandler), server.Deps{})
		if err != nil {
			f.Fatal(err)
		}
		p, err := svc.Core.CreateProject(domain.WithPrincipal(f.Context(), domain.Principal{Admin: true}), domain.ProjectInput{Name: "fuzz"})
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, &fuzzServer{name: st.name, h: svc.Handler, st: st.st, project: p.ID})
	}
	return out
}

// footprint is a cheap fingerprint of everything stored: projects with their update times and
// every entry id.
func (s *fuzzServer) footprint(t *testing.T) string {
	t.Helper()
	ps, err := s.st.ListProjects(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.ID + p.Name + p.UpdatedAt.String() + ";")
		err := s.st.ListLogs(t.Context(), domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}, Limit: 1_000_000}, func(pg domain.Page) error {
			for e, err := range pg.Entries {
				if err != nil {
					return err
				}
				b.WriteString(e.ID + ",")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// serve runs one request through the handler and checks the invariants: no panic escapes (the
// fuzz engine reports it), no 5xx, and a 4xx changes nothing that is stored.
func (s *fuzzServer) serve(t *testing.T, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	before := s.footprint(t)
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s: %s %s answered %d: %.500s", s.name, req.Method, req.URL, rec.Code, rec.Body.String())
	}
	if rec.Code >= 400 {
		if after := s.footprint(t); after != before {
			t.Fatalf("%s: %s %s answered %d but changed what is stored", s.name, req.Method, req.URL, rec.Code)
		}
	}
	return rec
}

// serveAll sends the request newReq makes for each server to every server, and checks that the
// stores answer alike: the same status on both.
func serveAll(t *testing.T, servers []*fuzzServer, newReq func(s *fuzzServer) *http.Request) []*httptest.ResponseRecorder {
	t.Helper()
	var recs []*httptest.ResponseRecorder
	for _, s := range servers {
		recs = append(recs, s.serve(t, newReq(s)))
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].Code != recs[0].Code {
			req := newReq(servers[0])
			t.Fatalf("%s %s: %s answered %d (%.300s), %s answered %d (%.300s)", req.Method, req.URL,
				servers[0].name, recs[0].Code, recs[0].Body.String(), servers[i].name, recs[i].Code, recs[i].Body.String())
		}
	}
	return recs
}

// fixedRandom always picks index n (mod the range): MakeHat's choices become predictable.
type fixedRandom struct{ n int }

func (f fixedRandom) IntN(n int) int { return f.n % n }

// maxProblemBytes bounds every error answer, however bad the request.
const maxProblemBytes = 64 << 10

// hookReceiver is a local receiver of alert notifications (webhook and Slack alike): it keeps
// each request's path, Authorization header and body, in order.
type hookReceiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []hookRequest
	addr string
}

type hookRequest struct {
	Path, Authorization string
	Body                []byte
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	h := &hookReceiver{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.got = append(h.got, hookRequest{Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Body: b})
		h.mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(h.Close)
	h.addr = h.Listener.Addr().String()
	return h
}

// requests returns what the receiver got on path, in order.
func (h *hookReceiver) requests(path string) []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hookRequest
	for _, r := range h.got {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}
