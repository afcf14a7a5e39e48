package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esutil"

	"example.com/obsvc/api/rest"
)

// esLine is one document a client test sends, and whether it must be refused.
type esLine struct {
	action string // index, create or delete
	index  string // "" for the client's default
	doc    string
	want   int // the item's status
}

// esLines makes n lines of run, a few of them deliberately bad (one in 250 and the last few):
// no message, a time that is none, invalid UTF-8, a message over the limit, a delete, another
// project's index. Every good one carries the attribute run, so that the API can count them.
func esLines(run string, n int, other string) []esLine {
	base := time.Now().Add(-time.Hour).UnixMilli()
	bad := []esLine{
		{action: "index", doc: `{"level":"error","run":"` + run + `"}`, want: 400},
		{action: "index", doc: `{"message":"m","@timestamp":"not a time","run":"` + run + `"}`, want: 400},
		{action: "create", doc: "{\"message\":\"bad \xc3\x28 utf8\",\"run\":\"" + run + "\"}", want: 400},
		{action: "index", doc: `{"message":"` + strings.Repeat("x", 70_000) + `","run":"` + run + `"}`, want: 400},
		{action: "delete", want: 400},
		{action: "index", index: other, doc: `{"message":"to another project","run":"` + run + `"}`, want: 403},
	}
	out := make([]esLine, 0, n)
	for i := range n {
		if i%250 == 249 {
			out = append(out, bad[(i/250)%len(bad)])
			continue
		}
		out = append(out, esLine{action: []string{"index", "create"}[i%2], want: 201,
			doc: fmt.Sprintf(`{"@timestamp":%d,"message":"line %d of %s","log":{"level":"%s"},"service":{"name":"shipper"},"run":%q,"seq":%d}`, base+int64(i), i, run, []string{"info", "warn", "error"}[i%3], run, i)})
	}
	return append(out, bad...)
}

// apiCount counts a project's entries of the last two hours that match query, through
// GET /logs/stats.
func apiCount(t *testing.T, url, key, projectID, query string) int64 {
	t.Helper()
	now := time.Now().UnixMilli()
	c := keyedClient(t, url, key)
	r, err := c.LogStatsWithResponse(t.Context(), &rest.LogStatsParams{ProjectId: projectID, Query: &query, StartTime: now - 3*3_600_000, EndTime: now + 3_600_000, Step: 3_600_000})
	if err != nil || r.JSON200 == nil {
		t.Fatalf("stats: %v %d %s", err, r.StatusCode(), r.Body)
	}
	return r.JSON200.Total
}

func TestESGoClient(t *testing.T) {
	forEachStore(t, testESGoClient)
}

// testESGoClient: the official Go client's BulkIndexer sends a few thousand lines, a few of them
// bad, over several requests and workers; every good line is stored once, every bad one reported
// to its OnFailure with its own status.
func testESGoClient(t *testing.T, open storeOpener) {
	e := newESEnv(t, open, nil)
	es, err := elasticsearch.NewClient(elasticsearch.Config{Addresses: []string{e.url}, APIKey: esKeyA})
	if err != nil {
		t.Fatal(err)
	}
	// The product check and the version the client reads.
	info, err := es.Info()
	if err != nil || info.StatusCode != 200 {
		t.Fatalf("info: %v %v", err, info)
	}
	info.Body.Close()

	lines := esLines("go", 3000, e.b.ID)
	var (
		mu       sync.Mutex
		failures = map[int]int{} // line → status
		stored   int
	)
	bi, err := esutil.NewBulkIndexer(esutil.BulkIndexerConfig{Client: es, Index: e.a.ID, NumWorkers: 2, FlushBytes: 64 << 10,
		OnError: func(_ context.Context, err error) { t.Errorf("indexer: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lines {
		item := esutil.BulkIndexerItem{Action: l.action, Index: l.index,
			OnSuccess: func(context.Context, esutil.BulkIndexerItem, esutil.BulkIndexerResponseItem) {
				mu.Lock()
				defer mu.Unlock()
				stored++
				if l.want != 201 {
					t.Errorf("line %d stored, want %d", i, l.want)
				}
			},
			OnFailure: func(_ context.Context, _ esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem, err error) {
				mu.Lock()
				defer mu.Unlock()
				failures[i] = res.Status
				if err != nil || res.Status != l.want || res.Error.Reason == "" {
					t.Errorf("line %d: %d %+v %v, want %d", i, res.Status, res.Error, err, l.want)
				}
			}}
		if l.action != "delete" {
			item.Body = strings.NewReader(l.doc)
		} else {
			item.DocumentID = "x"
		}
		if err := bi.Add(t.Context(), item); err != nil {
			t.Fatal(err)
		}
	}
	if err := bi.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	good := 0
	for _, l := range lines {
		if l.want == 201 {
			good++
		}
	}
	st := bi.Stats()
	if st.NumRequests < 3 || int(st.NumFailed) != len(lines)-good || len(failures) != len(lines)-good || stored != good {
		t.Errorf("stats %+v: %d failures, %d stored; want %d of %d lines stored", st, len(failures), stored, good, len(lines))
	}
	if n := apiCount(t, e.url, esKeyA, e.a.ID, "run:go"); n != int64(good) {
		t.Errorf("the API counts %d entries, want %d", n, good)
	}
	if n := apiCount(t, e.url, esKeyB, e.b.ID, "run:go"); n != 0 {
		t.Errorf("project b holds %d entries of the run", n)
	}
	// The levels and subjects came through the mapping.
	warn := 0
	for _, l := range lines {
		if l.want == 201 && strings.Contains(l.doc, `"level":"warn"`) {
			warn++
		}
	}
	if n := apiCount(t, e.url, esKeyA, e.a.ID, "run:go AND level:warn AND subject:shipper"); n != int64(warn) {
		t.Errorf("%d warn lines, want %d", n, warn)
	}
}

// TestESRetry: a bulk request whose answer is lost after it was committed, resent as shippers
// resend it, stores each item once; so does one whose client hung up before reading the answer.
func TestESRetry(t *testing.T) {
	forEachStore(t, func(t *testing.T, open storeOpener) {
		e := newESEnv(t, open, nil)
		var body bytes.Buffer
		lines := esLines("retry", 500, e.b.ID)
		good := 0
		for _, l := range lines {
			idx := ""
			if l.index != "" {
				idx = `"_index":"` + l.index + `"`
			}
			fmt.Fprintf(&body, "{%q:{%s}}\n", l.action, idx)
			if l.action != "delete" {
				body.WriteString(l.doc + "\n")
			}
			if l.want == 201 {
				good++
			}
		}
		send := func() esAnswer {
			_, raw, a := e.es(t, esCall{path: "/" + e.a.ID + "/_bulk", auth: bearer(esKeyA), body: body.Bytes()})
			if len(a.Items) != len(lines) {
				t.Fatalf("%d items answered, want %d: %.300s", len(a.Items), len(lines), raw)
			}
			return a
		}
		first := send()
		second := send()
		if strings.Join(first.statuses(), " ") != strings.Join(second.statuses(), " ") {
			t.Errorf("the retry is answered otherwise:\n%v\n%v", first.statuses(), second.statuses())
		}
		if n := apiCount(t, e.url, esKeyA, e.a.ID, "run:retry"); n != int64(good) {
			t.Fatalf("after a resend the API counts %d, want %d", n, good)
		}

		// A client that hangs up before reading the answer, then resends: at once, and after the
		// status line came (the request was committed), one run each.
		for _, early := range []bool{true, false} {
			run := fmt.Sprintf("cut%v", early)
			body2 := bytes.ReplaceAll(body.Bytes(), []byte(`"run":"retry"`), []byte(`"run":"`+run+`"`))
			cut(t, e.url, esKeyA, body2, early)
			// The answer may or may not have been committed when the connection closed: wait until
			// the server is done with it (its retry would otherwise be answered 429 as in flight).
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, _, a := e.es(t, esCall{path: "/_bulk", auth: bearer(esKeyA), body: body2})
				if s := a.statuses(); !strings.Contains(strings.Join(s, " "), ":429") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the resend is still answered 429")
				}
				time.Sleep(50 * time.Millisecond)
			}
			if n := apiCount(t, e.url, esKeyA, e.a.ID, "run:"+run); n != int64(good) {
				t.Errorf("early=%v: after a cut-off request and its resend the API counts %d, want %d", early, n, good)
			}
		}
	})
}

// cut sends a bulk request over a connection of its own and closes it without reading the
// answer: at once when early, else once the status line came (after the commit).
func cut(t *testing.T, base, key string, body []byte, early bool) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /_bulk HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n", strings.TrimPrefix(base, "http://"), key, len(body))
	if _, err := conn.Write(body); err != nil {
		t.Fatal(err)
	}
	if !early {
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.Contains(line, " 200 ") {
			t.Fatalf("status line %q: %v", line, err)
		}
	}
}
