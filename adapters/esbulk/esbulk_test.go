package esbulk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

func TestToInput(t *testing.T) {
	limits := domain.DefaultLimits()
	for _, c := range []struct {
		name, doc string
		// want is the entry as "time|level|subject|user|trace|span|message|attributes" ("-" for
		// none), or the problem when it starts with "!".
		want string
	}{
		{"nested ECS", `{"@timestamp":"2026-01-02T03:04:05.678+01:00","message":"m","log":{"level":"WARN","logger":"x"},"service":{"name":"s"},"host":{"name":"h"},"user":{"id":"u"},"trace":{"id":"0123456789abcdef0123456789ABCDEF"},"span":{"id":"0123456789abcdef"}}`,
			"1767319445678|WARN|s|u|0123456789abcdef0123456789ABCDEF|0123456789abcdef|m|{\"host.name\":\"h\",\"log.logger\":\"x\"}"},
		{"dotted keys", `{"timestamp":1700000000000,"msg":"m","log.level":"info","host.name":"h","trace_id":"0123456789abcdef0123456789abcdef","span_id":"0123456789abcdef"}`,
			"1700000000000|info|h|-|0123456789abcdef0123456789abcdef|0123456789abcdef|m|-"},
		{"the first time field wins, the rest are kept", `{"timestamp":"1700000000001","time":"x","message":"m"}`, "1700000000001|-|-|-|-|-|m|{\"time\":\"x\"}"},
		{"log as text, severity", `{"log":"line","severity":"notice"}`, "-|notice|-|-|-|-|line|-"},
		{"log as an object is not the message", `{"log":{"level":"x"}}`, "!the document has no message"},
		{"a number message is no message", `{"message":5}`, "!the document has no message"},
		{"an id that is none stays an attribute", `{"message":"m","trace":{"id":"xyz"}}`, "-|-|-|-|-|-|m|{\"trace.id\":\"xyz\"}"},
		{"a non-string level stays an attribute", `{"message":"m","level":30}`, "-|-|-|-|-|-|m|{\"level\":30}"},
		{"an empty object is kept", `{"message":"m","labels":{},"a":{"b":{"c":[1,{"d":2}]}}}`, "-|-|-|-|-|-|m|{\"a.b.c\":[1,{\"d\":2}],\"labels\":{}}"},
		{"epoch ms as a float", `{"message":"m","@timestamp":1.7e12}`, "1700000000000|-|-|-|-|-|m|-"},
		{"a date alone", `{"message":"m","@timestamp":"2026-01-02"}`, "1767312000000|-|-|-|-|-|m|-"},
		{"not a time", `{"message":"m","@timestamp":"soon"}`, "!@timestamp is not a time"},
		{"a time of another type", `{"message":"m","time":true}`, "!time is not a time"},
		{"not an object", `[1]`, "!the document is not a JSON object"},
		{"null", `null`, "!the document is not a JSON object: null"},
		{"two values", `{"message":"m"} {}`, "!the document line holds more than one JSON value"},
		{"invalid UTF-8", "{\"message\":\"\xff\"}", "!the document is not valid UTF-8"},
		{"a lone high surrogate", `{"message":"a\ud800b"}`, "!the document holds an escaped lone surrogate"},
		{"a lone low surrogate", `{"message":"\udc00"}`, "!the document holds an escaped lone surrogate"},
		{"a high surrogate at the end", `{"message":"\ud83d"}`, "!the document holds an escaped lone surrogate"},
		{"a pair and escapes", `{"message":"\ud83d\ude00 \\ud800 \" \u00e9"}`, "-|-|-|-|-|-|😀 \\ud800 \" é|-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, problem := newMapper(limits).toInput([]byte(c.doc))
			if strings.HasPrefix(c.want, "!") {
				if !strings.HasPrefix(problem, c.want[1:]) {
					t.Fatalf("problem %q, want %q", problem, c.want[1:])
				}
				return
			}
			if problem != "" {
				t.Fatalf("problem %q", problem)
			}
			s := func(p *string) string {
				if p == nil {
					return "-"
				}
				return *p
			}
			tm := "-"
			if in.Time != nil {
				tm = fmt.Sprint(*in.Time)
			}
			attrs := "-"
			if in.Attributes != nil {
				attrs = string(in.Attributes)
			}
			got := strings.Join([]string{tm, s(in.Level), s(in.Subject), s(in.UserID), s(in.TraceID), s(in.SpanID), s(in.Message), attrs}, "|")
			if got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       string // each item "action:status" (0 while unanswered), or "!" and the error's start
	}{
		{"pairs, CRLF and blank lines", "{\"index\":{}}\r\n{\"message\":\"a\"}\r\n\n{\"create\":{\"_index\":\"p\"}}\n{\"message\":\"b\"}", "index:0 create:0"},
		{"delete has no document", `{"delete":{"_id":"1"}}` + "\n" + `{"index":{}}` + "\n{}\n", "delete:400 index:0"},
		{"update skips its document", `{"update":{"_id":"1"}}` + "\n" + `{"doc":{}}` + "\n" + `{"index":{}}` + "\n{}\n", "update:400 index:0"},
		{"a missing document at the end", `{"index":{}}` + "\n{}\n" + `{"index":{}}` + "\n", "index:0 index:400"},
		{"actions only", `{"index":{}}` + "\n" + `{"create":{}}` + "\n", "index:400 create:400"},
		{"a document that is not JSON is the item's", `{"index":{}}` + "\nnot json\n", "index:0"},
		{"not NDJSON", "hello\n", "!malformed action/metadata line [1]"},
		{"an unknown action", `{"upsert":{}}` + "\n{}\n", "!malformed action/metadata line [1]: expected [create]"},
		{"two actions in one line", `{"index":{},"create":{}}` + "\n{}\n", "!malformed action/metadata line [1]: expected one action"},
		{"a bad action later", `{"index":{}}` + "\n{}\n[]\n", "!malformed action/metadata line [3]"},
		{"_index not a string", `{"index":{"_index":5}}` + "\n{}\n", "!malformed action/metadata line [1]: _index must be a string"},
		{"nothing", "\n\n", "!the request body holds no action"},
	} {
		t.Run(c.name, func(t *testing.T) {
			items, err := parse([]byte(c.body), "")
			if strings.HasPrefix(c.want, "!") {
				if err == nil || !strings.Contains(err.Error(), c.want[1:]) {
					t.Fatalf("err %v, want %q", err, c.want[1:])
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range items {
				got = append(got, fmt.Sprintf("%s:%d", it.action, it.status))
			}
			if strings.Join(got, " ") != c.want {
				t.Errorf("got %v, want %s", got, c.want)
			}
		})
	}
}

// gatedStore holds every write until the gate opens.
type gatedStore struct {
	domain.Store
	entered chan struct{}
	gate    chan struct{}
}

func (g *gatedStore) CreateLogs(ctx context.Context, entries []domain.LogEntry, w domain.LogWrite) (domain.Written, error) {
	g.entered <- struct{}{}
	<-g.gate
	return g.Store.CreateLogs(ctx, entries, w)
}

func newService(t testing.TB, st domain.Store, limits domain.Limits) (*domain.Service, []string) {
	t.Helper()
	svc := domain.NewService(st, domain.Options{Limits: limits, NewID: func() string { return uuid.Must(uuid.NewV7()).String() }})
	admin := domain.WithPrincipal(t.Context(), domain.Principal{Admin: true})
	var ids []string
	for _, name := range []string{"a", "b"} {
		p, err := svc.CreateProject(admin, domain.ProjectInput{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	return svc, ids
}

// post sends body to POST /_bulk as an admin.
func post(t *testing.T, h *Handler, body string) (int, bulkAnswer) {
	t.Helper()
	ctx := domain.WithPrincipal(t.Context(), domain.Principal{Admin: true})
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/_bulk", strings.NewReader(body))
	rec := httptest.NewRecorder()
	mux := http.NewServeMux()
	h.Register(mux, nil)
	mux.ServeHTTP(rec, req)
	var a bulkAnswer
	if rec.Code == 200 {
		if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
			t.Fatalf("%s: %v", rec.Body, err)
		}
	}
	return rec.Code, a
}

func statuses(a bulkAnswer) string {
	var out []string
	for _, it := range a.Items {
		for _, v := range it {
			out = append(out, fmt.Sprint(v.Status))
		}
	}
	return strings.Join(out, " ")
}

// TestGroupsAndChunks: items of several projects, more of them than one write may carry, are
// stored by project in chunks of at most MaxBatchEntries, each answered in the order sent; the
// same body again stores nothing.
func TestGroupsAndChunks(t *testing.T) {
	st := storetest.OpenSQLite(t)
	limits := domain.DefaultLimits()
	limits.MaxBatchEntries = 3
	svc, ids := newService(t, st, limits)
	var b bytes.Buffer
	want := []string{}
	for i := range 11 {
		fmt.Fprintf(&b, "{\"index\":{\"_index\":%q}}\n{\"message\":\"m%d\"}\n", ids[i%2], i)
		want = append(want, "201")
	}
	var stored, refused int
	h := NewHandler(svc, Options{OnBulk: func(s, r int) { stored, refused = s, r }})
	code, a := post(t, h, b.String())
	if code != 200 || a.Errors || statuses(a) != strings.Join(want, " ") || stored != 11 || refused != 0 {
		t.Fatalf("%d %s, stored %d", code, statuses(a), stored)
	}
	for i, it := range a.Items {
		if it["index"].Index != ids[i%2] || it["index"].ID == nil {
			t.Errorf("item %d: %+v", i, it["index"])
		}
	}
	code, a = post(t, h, b.String())
	if code != 200 || statuses(a) != strings.Join(want, " ") || stored != 0 {
		t.Fatalf("the resend: %d %s, stored %d", code, statuses(a), stored)
	}
	for _, id := range ids {
		if n := storetest.CountEntries(t, st, id); n != map[string]int{ids[0]: 6, ids[1]: 5}[id] {
			t.Errorf("project %s holds %d", id, n)
		}
	}
}

// TestInFlightIs429: a resend that arrives while the first request is still being stored is
// answered 429 item by item (shippers retry those), and stores nothing; once the first is done,
// a resend is answered as it was.
func TestInFlightIs429(t *testing.T) {
	gs := &gatedStore{Store: storetest.OpenSQLite(t), entered: make(chan struct{}, 2), gate: make(chan struct{})}
	svc, ids := newService(t, gs, domain.DefaultLimits())
	h := NewHandler(svc, Options{})
	body := fmt.Sprintf("{\"index\":{\"_index\":%q}}\n{\"message\":\"m\"}\n{\"index\":{\"_index\":%q}}\n{}\n", ids[0], ids[0])
	var wg sync.WaitGroup
	var first bulkAnswer
	wg.Go(func() { _, first = post(t, h, body) })
	<-gs.entered
	code, a := post(t, h, body)
	if code != 200 || !a.Errors || statuses(a) != "429 400" {
		t.Errorf("the resend in flight: %d %s", code, statuses(a))
	}
	if r := a.Items[0]["index"]; r.Error == nil || r.Error.Type != "es_rejected_execution_exception" {
		t.Errorf("the 429 item: %+v", r)
	}
	close(gs.gate)
	wg.Wait()
	if statuses(first) != "201 400" {
		t.Errorf("the first: %s", statuses(first))
	}
	if _, a := post(t, h, body); statuses(a) != "201 400" {
		t.Errorf("the resend after: %s", statuses(a))
	}
	if n := storetest.CountEntries(t, gs.Store, ids[0]); n != 1 {
		t.Errorf("%d entries, want 1", n)
	}
}

// TestABodyOfTinyItems: a body at the cap made of the smallest items there are, about 290,000,
// is stored in chunks and answered item by item; the process's peak heap while it is handled
// stays a small multiple of the body (see maxTinyHeap).
func TestABodyOfTinyItems(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a body of megabytes, its heap measured (skipped under -short and -race: minutes there)")
	}
	st := storetest.OpenSQLite(t)
	svc, ids := newService(t, st, domain.DefaultLimits())
	line := fmt.Sprintf("{\"index\":{\"_index\":%q}}\n{\"message\":\"m\"}\n", ids[0])
	body := strings.Repeat(line, DefaultMaxBodyBytes/len(line))
	n := DefaultMaxBodyBytes / len(line)
	h := NewHandler(svc, Options{})

	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	wg.Go(func() {
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	ctx := domain.WithPrincipal(t.Context(), domain.Principal{Admin: true})
	rec := httptest.NewRecorder()
	mux := http.NewServeMux()
	h.Register(mux, nil)
	mux.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodPost, "/_bulk", strings.NewReader(body)))
	close(done)
	wg.Wait()
	code := rec.Code
	var a bulkAnswer
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	if code != 200 || a.Errors || len(a.Items) != n {
		t.Fatalf("%d, errors %v, %d items of %d", code, a.Errors, len(a.Items), n)
	}
	if got := storetest.CountEntries(t, st, ids[0]); got != n {
		t.Errorf("%d entries, want %d", got, n)
	}
	t.Logf("%d items in %d bytes: peak heap %d MB above the %d MB before", n, len(body), (peak-before.HeapAlloc)>>20, before.HeapAlloc>>20)
	if peak > before.HeapAlloc+maxTinyHeap {
		t.Errorf("peak heap %d MB above the start, want at most %d MB", (peak-before.HeapAlloc)>>20, maxTinyHeap>>20)
	}
}

// maxTinyHeap bounds the heap TestABodyOfTinyItems may grow by, the test's own copies of the
// body and answer (20 MB) included: measured 82 MB for 110,376 items; 220 MB when every
// document was mapped before the first chunk was stored and the answer built as one value.
const maxTinyHeap = 160 << 20

// FuzzBulk sends arbitrary bodies through the whole handler on SQLite: every answer is 200 with
// one item per action, each of a status the contract names, or a whole-request 400 or 413;
// never a 5xx, never a panic, and no more entries stored than items answered 201.
func FuzzBulk(f *testing.F) {
	for _, seed := range []string{
		`{"index":{}}` + "\n" + `{"message":"m","log":{"level":"warn"},"a":{"b":1}}` + "\n",
		`{"create":{"_index":"x"}}` + "\n" + `{"msg":"m","@timestamp":"2026-01-01T00:00:00Z"}` + "\n" + `{"delete":{}}` + "\n",
		`{"update":{}}` + "\n{}\n" + `{"index":{}}` + "\n",
		"{\"index\":{}}\n{\"message\":\"\\ud800\"}\n",
		"not json\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	st := storetest.OpenSQLite(f)
	svc, ids := newService(f, st, domain.DefaultLimits())
	h := NewHandler(svc, Options{MaxBodyBytes: 64 << 10})
	mux := http.NewServeMux()
	h.Register(mux, nil)
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := domain.WithPrincipal(t.Context(), domain.Principal{Admin: true})
		before := storetest.CountEntries(t, st, ids[0])
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodPost, "/"+ids[0]+"/_bulk", bytes.NewReader(body)))
		switch rec.Code {
		case 400, 413:
			if n := storetest.CountEntries(t, st, ids[0]); n != before {
				t.Fatalf("a refused body stored %d entries", n-before)
			}
			return
		case 200:
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		var a bulkAnswer
		if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
			t.Fatalf("%v: %s", err, rec.Body)
		}
		created := 0
		for _, it := range a.Items {
			for _, v := range it {
				switch v.Status {
				case 201:
					created++
				case 400, 403, 404:
					if v.Error == nil || v.Error.Reason == "" {
						t.Fatalf("%d without a reason", v.Status)
					}
				default:
					t.Fatalf("item status %d: %s", v.Status, rec.Body)
				}
			}
		}
		if n := storetest.CountEntries(t, st, ids[0]); n-before > created {
			t.Fatalf("%d entries stored, %d items created", n-before, created)
		}
	})
}
