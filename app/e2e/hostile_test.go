package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
	"example.com/obsvc/domain"
)

// TestHostileInput sends the requests found from outside, and their siblings, through the whole
// service on both stores: each is answered with its 4xx (never a 5xx), within maxProblemBytes
// bytes, in the contract's format naming what was wrong, and stores nothing.
func TestHostileInput(t *testing.T) {
	forEachStore(t, testHostileInput)
}

func testHostileInput(t *testing.T, open storeOpener) {
	const maxSeries = 3
	e := newEnv(t, open, nil)
	p := e.project("target").Id
	other := e.project("other").Id
	seedResp, _ := e.do("POST", "/logs", "application/json", fmt.Sprintf(`[{"project_id":%q,"message":"kept","user_id":"u","level":"info"}]`, p))
	if seedResp.StatusCode != 201 {
		t.Fatalf("seed = %d", seedResp.StatusCode)
	}
	// One subject more than series=maxSeries holds, in another project so the cases' counts hold.
	var subjects []string
	for i := range maxSeries + 1 {
		subjects = append(subjects, fmt.Sprintf(`{"project_id":%q,"message":"s","time":1000,"subject":"s%d"}`, other, i))
	}
	if resp, body := e.do("POST", "/logs", "application/json", "["+strings.Join(subjects, ",")+"]"); resp.StatusCode != 201 {
		t.Fatalf("seed subjects = %d: %s", resp.StatusCode, body)
	}
	// lateEnv serves the cases (their names end in pastDeadline) whose statement must outlast REQUEST_TIMEOUT: each runs while
	// holdLogs keeps the logs table locked, so the statement waits in the database until the
	// deadline cancels it.
	lateEnv := newEnv(t, open, func(c *server.Config) { c.RequestTimeout = time.Second })
	pl := lateEnv.project("late").Id
	const pastDeadline = "past REQUEST_TIMEOUT" // the end of the names of late's cases

	valid := fmt.Sprintf(`{"project_id":%q,"message":"m"}`, p)
	fourByte := strings.Repeat("\U0001F600", 1024) // 1,024 characters, 4,096 bytes
	unknownIDs := func(n int) string {
		var b strings.Builder
		b.WriteString("[")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"project_id":%q,"message":"m"}`, server.NewID())
		}
		return b.String() + "]"
	}

	// Bodies of POST /logs compressed or one entry a line: a gzip bomb (64 KiB that inflates
	// to 64 MiB, past MAX_BODY_BYTES), gzip cut short, and NDJSON entries past the limits.
	ndjson := map[string]string{"Content-Type": "application/x-ndjson"}
	gzipped := map[string]string{"Content-Encoding": "gzip"}
	ndjsonGzipped := map[string]string{"Content-Type": "application/x-ndjson", "Content-Encoding": "gzip"}
	bomb := string(gzipOf(t, make([]byte, 64<<20)))
	whole := gzipOf(t, []byte("["+valid+","+valid+"]"))
	truncated := string(whole[:len(whole)-10])
	invalidUTF8 := fmt.Sprintf(`{"project_id":%q,"message":"a`+"\xff"+`b"}`, p)
	// mentions is what the answer's text must hold besides the pointer, by case name.
	mentions := map[string]string{
		"NDJSON with invalid UTF-8":           "line 3: ",
		"an NDJSON line that is a JSON array": "line 3: ",
		"NDJSON with two entries on a line":   "line 2: ",
	}

	cases := []struct {
		name         string
		method, path string
		header       map[string]string
		body         string
		status       int
		names        string // the pointer or parameter the answer must name ("" = none checked)
	}{
		// Tail positions: out of the stores' range (L1), of the first format, past the
		// project's newest batch, and 100 KB of them (L2, never echoed).
		{"Last-Event-ID at place 2^31", "GET", "/logs/tail?project_id=" + p, map[string]string{"Last-Event-ID": domain.EncodeTailToken(domain.TailPosition{Tx: 1, Pos: 1 << 31})}, "", 400, "Last-Event-ID"},
		{"Last-Event-ID at batch 2^63", "GET", "/logs/tail?project_id=" + p, map[string]string{"Last-Event-ID": domain.EncodeTailToken(domain.TailPosition{Tx: 1 << 63})}, "", 400, "Last-Event-ID"},
		{"cursor at place 2^31", "GET", "/logs/tail?project_id=" + p + "&cursor=" + domain.EncodeTailToken(domain.TailPosition{Tx: 1, Pos: 1 << 31}), nil, "", 400, "cursor"},
		{"Last-Event-ID of the first format", "GET", "/logs/tail?project_id=" + p, map[string]string{"Last-Event-ID": "eyJ4IjoyMTQ3NDgzNjQ4LCJwIjowfQ"}, "", 400, "Last-Event-ID"},
		{"Last-Event-ID past the project's newest batch", "GET", "/logs/tail?project_id=" + p, map[string]string{"Last-Event-ID": domain.EncodeTailToken(domain.TailPosition{Tx: 1000, Pos: 0})}, "", 400, "Last-Event-ID"},
		{"Last-Event-ID of 100 KB", "GET", "/logs/tail?project_id=" + p, map[string]string{"Last-Event-ID": hostileValue}, "", 400, "Last-Event-ID"},
		{"tail cursor of 100 KB", "GET", "/logs/tail?project_id=" + p + "&cursor=" + hostileValue, nil, "", 400, "cursor"},
		{"project id of 100 KB", "GET", "/projects/" + hostileValue, nil, "", 404, ""},
		{"tail of a project id of 100 KB", "GET", "/logs/tail?project_id=" + hostileValue, nil, "", 404, ""},
		{"listing cursor of 100 KB", "GET", "/logs?project_id=" + p + "&cursor=" + hostileValue, nil, "", 400, "cursor"},
		{"entry of a project id of 100 KB", "POST", "/logs", nil, fmt.Sprintf(`[{"project_id":%q,"message":"m"}]`, hostileValue), 422, "/0/project_id"},

		// Input the store cannot keep: invalid UTF-8, NUL, lengths past what an index holds.
		{"GET user_id NUL", "GET", "/logs?project_id=" + p + "&user_id=%00", nil, "", 400, "user_id"},
		{"GET user_id invalid UTF-8", "GET", "/logs?project_id=" + p + "&user_id=%ff", nil, "", 400, "user_id"},
		{"GET log_level invalid UTF-8", "GET", "/logs?project_id=" + p + "&log_level=%c3%28", nil, "", 400, "log_level"},
		{"GET log_level NUL", "GET", "/logs?project_id=" + p + "&log_level=a%00", nil, "", 400, "log_level"},
		{"GET user_id of 4,096 bytes", "GET", "/logs?project_id=" + p + "&user_id=" + strings.Repeat("%F0%9F%98%80", 1024), nil, "", 400, "user_id"},
		{"DELETE user_id NUL", "DELETE", "/logs?project_id=" + p + "&user_id=%00", nil, "", 400, "user_id"},
		{"DELETE user_id invalid UTF-8", "DELETE", "/logs?project_id=" + p + "&user_id=%ff", nil, "", 400, "user_id"},
		{"DELETE log_level invalid UTF-8", "DELETE", "/logs?project_id=" + p + "&log_level=%c3%28", nil, "", 400, "log_level"},
		{"POST user_id of 1,024 four-byte characters", "POST", "/logs", nil, fmt.Sprintf(`[{"project_id":%q,"message":"m","user_id":%q}]`, p, fourByte), 400, "/0/user_id"},
		{"POST subject of 1,024 four-byte characters", "POST", "/logs", nil, fmt.Sprintf(`[{"project_id":%q,"message":"m","subject":%q}]`, p, fourByte), 400, "/0/subject"},
		{"POST message with NUL", "POST", "/logs", nil, fmt.Sprintf(`[{"project_id":%q,"message":"a\u0000b"}]`, p), 400, "/0/message"},
		{"project name with NUL", "POST", "/projects", nil, `{"name":"a\u0000b"}`, 400, "/name"},
		{"Idempotency-Key not ASCII", "POST", "/logs", map[string]string{"Idempotency-Key": "ключ"}, "[" + valid + "]", 400, "Idempotency-Key"},
		{"cursor that names no entry", "GET", "/logs?project_id=" + p + "&cursor=eyJ0IjoxLCJpIjoiJ29yIDE9MSJ9", nil, "", 400, "cursor"},
		{"project id with NUL", "GET", "/projects/%00", nil, "", 404, ""},

		// Unbounded work and answers.
		{"20,000 empty entries", "POST", "/logs", nil, entriesOf(20_000, "{}"), 413, ""},
		{"10,000 empty entries", "POST", "/logs", nil, entriesOf(10_000, "{}"), 400, "/0/project_id"},
		{"10,000 entries of unknown projects", "POST", "/logs", nil, unknownIDs(10_000), 422, "/0/project_id"},
		{"10,000 entries with a time out of range", "POST", "/logs", nil, entriesOf(10_000, fmt.Sprintf(`{"project_id":%q,"message":"m","time":9223372036854775808}`, p)), 400, "/0/time"},
		{"a time out of range", "POST", "/logs", nil, fmt.Sprintf(`[{"project_id":%q,"message":"m","time":9223372036854775808}]`, p), 400, "/0/time"},
		{"a negative time out of range", "POST", "/logs", nil, fmt.Sprintf(`[{"project_id":%q,"message":"m","time":-9223372036854775809}]`, p), 400, "/0/time"},
		{"a limit out of range", "GET", "/logs?project_id=" + p + "&limit=9223372036854775808", nil, "", 400, "limit"},
		{"a start_time out of range", "GET", "/logs?project_id=" + p + "&start_time=9223372036854775808", nil, "", 400, "start_time"},
		{"a valid entry beside one of no project", "POST", "/logs", nil, fmt.Sprintf(`[%s,{"project_id":%q,"message":"m"}]`, valid, server.NewID()), 422, "/1/project_id"},
		{"stats of no series", "GET", "/logs/stats?project_id=" + other + "&start_time=0&end_time=59999&step=60000&by=subject&series=0", nil, "", 400, "series"},
		{"stats of more series than 100, one bucket a second", "GET", "/logs/stats?project_id=" + other + "&start_time=0&end_time=59999&step=1000&by=subject&series=101", nil, "", 400, "series"},
		{"stats by an attribute key of 257 characters", "GET", "/logs/stats?project_id=" + other + "&start_time=0&end_time=59999&step=1000&by=attributes." + strings.Repeat("k", 257), nil, "", 400, "by"},

		// Compressed and line-delimited batches.
		{"a gzip bomb", "POST", "/logs", gzipped, bomb, 413, ""},
		{"an NDJSON gzip bomb", "POST", "/logs", ndjsonGzipped, bomb, 413, ""},
		{"truncated gzip", "POST", "/logs", gzipped, truncated, 400, ""},
		{"NDJSON in truncated gzip", "POST", "/logs", ndjsonGzipped, truncated, 400, ""},
		{"not gzip at all", "POST", "/logs", gzipped, "[" + valid + "]", 400, ""},
		{"a Content-Encoding of br", "POST", "/logs", map[string]string{"Content-Encoding": "br"}, "[" + valid + "]", 415, ""},
		{"an NDJSON line of 10 MiB", "POST", "/logs", ndjson, fmt.Sprintf(`{"project_id":%q,"message":%q}`, p, strings.Repeat("a", 10<<20)), 413, ""},
		{"an NDJSON line of 1 MiB", "POST", "/logs", ndjson, valid + "\n" + fmt.Sprintf(`{"project_id":%q,"message":%q}`, p, strings.Repeat("a", 1<<20)), 400, "/1/message"},
		{"NDJSON with invalid UTF-8", "POST", "/logs", ndjson, valid + "\n\n" + invalidUTF8 + "\n", 400, "/1/message"},
		{"an NDJSON line that is a JSON array", "POST", "/logs", ndjson, valid + "\n\n[" + valid + "," + valid + "]\n", 400, "/1"},
		{"NDJSON with two entries on a line", "POST", "/logs", ndjson, valid + "\n" + valid + " " + valid + "\n", 400, "/1"},
		{"20,000 NDJSON entries", "POST", "/logs", ndjson, strings.Repeat("{}\n", 20_000), 413, ""},

		// A statement the request's deadline cancels is a 503 with Retry-After on every store
		// (PostgreSQL's query_canceled was a 500).
		{"a delete " + pastDeadline, "DELETE", "/logs?project_id=" + pl + "&q=" + strings.Repeat("a", 255), nil, "", 503, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, late := e, strings.HasSuffix(c.name, pastDeadline)
			if late {
				e = lateEnv
			}
			before := storetest.CountEntries(t, e.store, p) + storetest.CountEntries(t, e.store, other)
			release := func() {}
			if late {
				release = holdLogs(t, e.store)
			}
			req, _ := http.NewRequestWithContext(t.Context(), c.method, e.url+c.path, strings.NewReader(c.body))
			if c.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			started := time.Now()
			resp, err := e.http.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 10<<20))
			resp.Body.Close()
			release()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %.400s", resp.StatusCode, c.status, body)
			}
			if (c.status == 503 || c.status == 429) && resp.Header.Get("Retry-After") == "" {
				t.Errorf("%d without Retry-After", c.status)
			}
			if len(body) > maxProblemBytes {
				t.Errorf("answered %d bytes, more than %d", len(body), maxProblemBytes)
			}
			if bytes.Contains(body, []byte(hostileValue[:65])) {
				t.Errorf("the answer echoes more than a short prefix of the request's value: %.400s", body)
			}
			if c.names != "" && !bytes.Contains(body, []byte(`"pointer":"`+c.names+`"`)) && !bytes.Contains(body, []byte(`"parameter":"`+c.names+`"`)) {
				t.Errorf("the answer does not name %s: %.400s", c.names, body)
			}
			if want := mentions[c.name]; want != "" && !bytes.Contains(body, []byte(want)) {
				t.Errorf("the answer does not say %q: %.400s", want, body)
			}
			if took := time.Since(started); took > 30*time.Second {
				t.Errorf("took %v", took)
			}
			if after := storetest.CountEntries(t, e.store, p) + storetest.CountEntries(t, e.store, other); after != before {
				t.Errorf("stored %d entries, had %d", after, before)
			}
		})
	}
	t.Run("keys holding tails leave room for a new key's first (L3)", func(t *testing.T) { testTailsKeptForNewKeys(t, e.store, p) })
}

// hostileValue is 100 KB of one letter: no answer may hold more than a short prefix of it.
var hostileValue = strings.Repeat("Z", 100_000)

// testTailsKeptForNewKeys fills MAX_TAILS_TOTAL=8 with the tails of three keys at MAX_TAILS=3,
// scaled down from a hundred keys holding ten each: the keys that hold tails stop at six (the
// last quarter is kept), a new key's first tail still opens, and the instance stops at eight.
func testTailsKeptForNewKeys(t *testing.T, st server.Store, project string) {
	cfg := server.DefaultConfig()
	keys := []string{"tail-a", "tail-b", "tail-c", "tail-new", "tail-new2", "tail-new3"}
	var lines []string
	for _, k := range keys {
		lines = append(lines, apitest.KeyLine("project "+project, k))
	}
	cfg.APIKeys = strings.Join(lines, ",")
	cfg.MaxTails, cfg.MaxTailsTotal = 3, 8
	_, srv := servetest.Serve(t, cfg, st, nil)
	url := srv.URL + "/logs/tail?project_id=" + project
	open := func(key string) int {
		t.Helper()
		_, status, _, body := openTail(t, nil, url, key)
		if status != 200 && status != http.StatusTooManyRequests {
			t.Fatalf("tail with %s: %d %s", key, status, body)
		}
		return status
	}
	for _, k := range []string{"tail-a", "tail-a", "tail-a", "tail-b", "tail-b", "tail-b"} {
		if status := open(k); status != 200 {
			t.Fatalf("tail of %s = %d, want 200", k, status)
		}
	}
	if status := open("tail-c"); status != 200 {
		t.Fatalf("the first tail of tail-c = %d, want 200", status)
	}
	if status := open("tail-c"); status != http.StatusTooManyRequests {
		t.Fatalf("a second tail of tail-c with 7 of 8 open = %d, want 429 (the rest is kept for first tails)", status)
	}
	if status := open("tail-new"); status != 200 {
		t.Fatalf("a new key's first tail with 7 of 8 open = %d, want 200", status)
	}
	if status := open("tail-new2"); status != http.StatusTooManyRequests {
		t.Fatalf("a tail past MAX_TAILS_TOTAL = %d, want 429", status)
	}
}

// TestAdminBatchOfManyProjectsWithAnIdempotencyKey: a batch naming 300 projects under one key is
// stored once and replayed, on both stores (the key's scope once overflowed its index).
func TestAdminBatchOfManyProjectsWithAnIdempotencyKey(t *testing.T) {
	for _, s := range e2eStores() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, s.open, nil)
			var b strings.Builder
			b.WriteString("[")
			for i := range 300 {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"project_id":%q,"message":"m"}`, e.project(fmt.Sprint("p", i)).Id)
			}
			b.WriteString("]")
			for i, want := range []string{"", "true"} {
				req, _ := http.NewRequestWithContext(t.Context(), "POST", e.url+"/logs", strings.NewReader(b.String()))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", "many-projects")
				resp, body := roundTrip(t, e.http, req)
				if resp.StatusCode != 201 || resp.Header.Get("Idempotency-Replayed") != want {
					t.Fatalf("attempt %d = %d (replayed %q): %.300s", i, resp.StatusCode, resp.Header.Get("Idempotency-Replayed"), body)
				}
			}
		})
	}
}

// TestInventedMethodsDoNotGrowMetrics sends a thousand invented methods without credentials: the
// scrape keeps its size (every one is counted as "other").
func TestInventedMethodsDoNotGrowMetrics(t *testing.T) {
	e := newEnv(t, openSQLiteStore, nil)
	size := func() int {
		resp, err := http.Get(e.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return len(b)
	}
	send := func(method string) {
		req, _ := http.NewRequestWithContext(t.Context(), method, e.url+"/projects", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	send("WARMUP") // the "other" series exists from here on
	before := size()
	for i := range 1000 {
		send(fmt.Sprintf("M%d%s", i, strings.Repeat("X", 200)))
	}
	if after := size(); after > before+2048 {
		t.Errorf("/metrics grew from %d to %d bytes with 1,000 invented methods", before, after)
	}
}

// TestMakeHatRefusesALargeBody: MakeHat with a body far over TWIRP_MAX_BODY_BYTES is a Twirp
// error, not a 200 after reading it all.
func TestMakeHatRefusesALargeBody(t *testing.T) {
	e := newEnv(t, openSQLiteStore, nil)
	for _, ct := range []string{"application/json", "application/protobuf"} {
		body := `{"inches":12}` + strings.Repeat(" ", 10<<20)
		req, _ := http.NewRequestWithContext(t.Context(), "POST", e.url+"/twirp/rpc.example.haberdasher.Haberdasher/MakeHat", strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		resp, b := roundTrip(t, http.DefaultClient, req)
		if resp.StatusCode != 400 || !strings.Contains(string(b), `"code":"malformed"`) {
			t.Errorf("%s: 10 MiB MakeHat = %d %.200s, want 400 malformed", ct, resp.StatusCode, b)
		}
	}
}

// TestSlowReadersDoNotExhaustTheService: clients that ask for large pages and never read them
// hold every SQLite reader connection for a while, but readiness still answers 200 at once, and
// once STALL_TIMEOUT passes their streams are cut and other reads are served again.
func TestSlowReadersDoNotExhaustTheService(t *testing.T) {
	e := newEnv(t, openSQLiteStore, func(c *server.Config) { c.StallTO = time.Second })
	p := e.project("big").Id
	msg := strings.Repeat("m", 1000)
	for range 4 {
		body := entriesOf(5000, fmt.Sprintf(`{"project_id":%q,"message":%q}`, p, msg))
		if resp, b := e.do("POST", "/logs", "application/json", body); resp.StatusCode != 201 {
			t.Fatalf("seed = %d %.200s", resp.StatusCode, b)
		}
	}
	// More stalled clients than there are reader connections (4).
	for range 6 {
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := fmt.Fprintf(conn, "GET /logs?project_id=%s&limit=10000 HTTP/1.1\r\nHost: localhost\r\n\r\n", p); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // they are in the handler, their pages half written
	// A timeout far from any bound under test, only so that a regression fails instead of hanging:
	// readiness waiting on a reader would answer 503 after its 2 s, and a read waiting for the
	// stalled streams would wait for WRITE_TIMEOUT (5 minutes).
	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Get(e.url + "/readyz")
	if err != nil {
		t.Fatalf("/readyz with stalled readers: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/readyz with stalled readers = %d, want 200", resp.StatusCode)
	}
	// Another project's read is served at once: the stalled clients hold only their own share
	// of the readers (MAX_READS_PER_KEY; without keys a share is the project's).
	other := e.project("other").Id
	resp, err = client.Get(e.url + "/logs?project_id=" + other + "&limit=1")
	if err != nil {
		t.Fatalf("another project's read with stalled readers: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("another project's read with stalled readers = %d, want 200", resp.StatusCode)
	}
	// The stalled project's own read is served once the stalled streams are cut (STALL_TIMEOUT
	// 1s): until then its share is taken, a 429 with Retry-After that a client waits out.
	for attempt := 1; ; attempt++ {
		resp, err = client.Get(e.url + "/logs?project_id=" + p + "&limit=1")
		if err != nil {
			t.Fatalf("a read with stalled readers: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			break
		}
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || attempt == 60 {
			t.Fatalf("a read with stalled readers = %d (Retry-After %q, attempt %d), want 200, or 429 with Retry-After while the share is taken",
				resp.StatusCode, resp.Header.Get("Retry-After"), attempt)
		}
		time.Sleep(time.Second)
	}
}

func entriesOf(n int, entry string) string {
	return "[" + strings.TrimSuffix(strings.Repeat(entry+",", n), ",") + "]"
}

// holdLogs keeps st's logs table locked against writes, and on PostgreSQL against reads too,
// from another connection until the returned function is called: a statement on it then waits
// in the database.
func holdLogs(t *testing.T, st server.Store) func() {
	t.Helper()
	ctx := t.Context()
	pools := st.Pools()
	if db := pools["main"]; db != nil { // PostgreSQL: a lock on the table, from a pool connection
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range []string{"BEGIN", "LOCK TABLE logs IN ACCESS EXCLUSIVE MODE"} {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		return func() {
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
			_ = conn.Close()
		}
	}
	// SQLite: the database's write lock, from a connection of its own.
	var file string
	if err := pools["reader"].QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+file)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		_, _ = db.ExecContext(context.Background(), "ROLLBACK")
		_ = db.Close()
	}
}
