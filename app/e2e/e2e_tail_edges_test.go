package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/domain"
)

// Secrets of the API keys the tail edge tests serve with.
const (
	tailAdmin = "tail-admin"
	tailKeyA  = "tail-key-a" // project a
	tailKeyA2 = "tail-key-a2"
	tailKeyB  = "tail-key-b" // project b
)

// tailEdges is one store with projects a and b, served under the tail tests' keys.
type tailEdges struct {
	t    *testing.T
	st   server.Store
	a, b string
}

// serve starts a server over the store with the tail tests' keys, a short poll and the tweak;
// like run, its http.Server applies WRITE_TIMEOUT, READ_TIMEOUT and READ_HEADER_TIMEOUT.
func (e *tailEdges) serve(tweak func(*server.Config)) string {
	e.t.Helper()
	cfg := server.DefaultConfig()
	cfg.APIKeys = strings.Join([]string{apitest.KeyLine("admin", tailAdmin), apitest.KeyLine("project "+e.a, tailKeyA), apitest.KeyLine("project "+e.a, tailKeyA2), apitest.KeyLine("project "+e.b, tailKeyB)}, ",")
	cfg.TailPoll = 50 * time.Millisecond
	if tweak != nil {
		tweak(&cfg)
	}
	svc, err := server.New(cfg, e.st, slog.New(slog.DiscardHandler), server.Deps{})
	if err != nil {
		e.t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(svc.Handler)
	srv.Config.WriteTimeout, srv.Config.ReadTimeout, srv.Config.ReadHeaderTimeout = cfg.WriteTO, cfg.ReadTO, cfg.ReadHeaderTO
	srv.Start()
	e.t.Cleanup(srv.Close)
	return srv.URL
}

// serveProject is serve and a new project on that server: the base URL and the project's id.
func (e *tailEdges) serveProject(tweak func(*server.Config)) (base, p string) {
	e.t.Helper()
	base = e.serve(tweak)
	return base, e.newProject(base)
}

// post stores entries (JSON objects without project_id) in project under key, in one batch.
func (e *tailEdges) post(base, key, project string, entries ...string) {
	e.t.Helper()
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, en := range entries {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"project_id":%q,%s`, project, strings.TrimPrefix(en, "{"))
	}
	buf.WriteByte(']')
	req, _ := http.NewRequestWithContext(e.t.Context(), http.MethodPost, base+"/logs", &buf)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	// A connection of its own: under a short WRITE_TIMEOUT the server closes idle keep-alive
	// connections, and a POST sent on one it has just closed fails with EOF (POST is not retried).
	req.Close = true
	resp, body := roundTrip(e.t, http.DefaultClient, req)
	if resp.StatusCode != http.StatusCreated {
		e.t.Fatalf("POST /logs: %d %s", resp.StatusCode, body)
	}
}

// tailMessages renders one entry per message, each with only its message.
func tailMessages(ms ...string) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf(`{"message":%q}`, m)
	}
	return out
}

// TestTailEdges checks the tail's contract sentences one by one, on both stores.
func TestTailEdges(t *testing.T) {
	for _, s := range e2eStores() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			st := s.open(t)
			a, b := seedProjects(t, st)
			e := &tailEdges{t: t, st: st, a: a.ID, b: b.ID}
			t.Run("RetryFirstThenHeartbeatsWhenIdle", func(t *testing.T) { e.t = t; e.retryAndHeartbeat() })
			t.Run("BadRequestsAreProblems", func(t *testing.T) { e.t = t; e.badRequests() })
			t.Run("TooManyTailsPerKeyAndInAll", func(t *testing.T) { e.t = t; e.tooMany() })
			t.Run("StartTimeReplaysThenGoesLive", func(t *testing.T) { e.t = t; e.replay() })
			t.Run("CursorAndLastEventID", func(t *testing.T) { e.t = t; e.cursor() })
			t.Run("IDsAreTheProjectsOwn", func(t *testing.T) { e.t = t; e.ownIDs() })
			t.Run("FiltersAreRespected", func(t *testing.T) { e.t = t; e.filters() })
			t.Run("EventsRenderEntriesAsTheListDoes", func(t *testing.T) { e.t = t; e.rendering() })
			t.Run("WriteTimeoutDoesNotCutAHealthyTail", func(t *testing.T) { e.t = t; e.writeTimeout() })
			t.Run("StalledReaderIsCutOffAndResumes", func(t *testing.T) { e.t = t; e.stalled() })
			t.Run("DeletedProjectEndsTheStream", func(t *testing.T) { e.t = t; e.deleted() })
		})
	}
}

func (e *tailEdges) retryAndHeartbeat() {
	base := e.serve(func(c *server.Config) { c.TailHeartbeat = 200 * time.Millisecond })
	l := mustTail(e.t, "tail", nil, base+"/logs/tail?project_id="+e.a, tailKeyA)
	if b, _ := l.next(10 * time.Second); b.retry != "1000" || b.event != "" || b.comment != "" {
		e.t.Fatalf("first block %+v, want the retry field alone", b)
	}
	for range 2 {
		if b, _ := l.next(10 * time.Second); b.comment == "" || b.event != "" || b.id != "" {
			e.t.Fatalf("idle tail sent %+v, want a comment line", b)
		}
	}
	// An entry arrives between heartbeats as an event.
	e.post(base, tailKeyA, e.a, tailMessages("between heartbeats")...)
	for {
		b, _ := l.next(10 * time.Second)
		if b.comment != "" {
			continue
		}
		if got := l.entry(b); got.Message != "between heartbeats" {
			e.t.Fatalf("got %q", got.Message)
		}
		break
	}
}

func (e *tailEdges) badRequests() {
	base := e.serve(nil)
	tail := base + "/logs/tail?project_id=" + e.a
	cases := []struct {
		name, url, key string
		hdr            []string
		status         int
		param          string // the parameter the problem names, if any
	}{
		{"bad Last-Event-ID", tail, tailKeyA, []string{"Last-Event-ID", "not-a-position"}, 400, "Last-Event-ID"},
		{"Last-Event-ID of base64 JSON, not a position", tail, tailKeyA, []string{"Last-Event-ID", "WzFd"}, 400, "Last-Event-ID"},
		{"bad cursor", tail + "&cursor=not-a-position", tailKeyA, nil, 400, "cursor"},
		{"limit 0", tail + "&start_time=0&limit=0", tailKeyA, nil, 400, "limit"},
		{"limit past the bound", tail + "&start_time=0&limit=10001", tailKeyA, nil, 400, "limit"},
		{"start_time not a number", tail + "&start_time=soon", tailKeyA, nil, 400, "start_time"},
		{"no project_id", base + "/logs/tail", tailAdmin, nil, 400, "project_id"},
		{"bad trace_id", tail + "&trace_id=xyz", tailKeyA, nil, 400, "trace_id"},
		{"unknown project", base + "/logs/tail?project_id=" + server.NewID(), tailAdmin, nil, 404, ""},
		{"no key", tail, "", nil, 401, ""},
		{"another project's key", tail, tailKeyB, nil, 403, ""},
	}
	for _, c := range cases {
		l, status, h, body := openTail(e.t, nil, c.url, c.key, c.hdr...)
		if l != nil {
			l.close()
			e.t.Errorf("%s: the tail opened, want %d", c.name, c.status)
			continue
		}
		if status != c.status || h.Get("Content-Type") != "application/problem+json" {
			e.t.Errorf("%s: %d %s %s, want %d problem+json", c.name, status, h.Get("Content-Type"), body, c.status)
			continue
		}
		if c.param != "" && !slices.Contains(fieldsOf(problemOf(e.t, body)), "?"+c.param) {
			e.t.Errorf("%s: the problem does not name %s: %s", c.name, c.param, body)
		}
	}
}

func (e *tailEdges) tooMany() {
	base := e.serve(func(c *server.Config) { c.MaxTails, c.MaxTailsTotal = 2, 3 })
	tail := base + "/logs/tail?project_id=" + e.a
	open := func(key string) *liveTail {
		e.t.Helper()
		l := mustTail(e.t, "tail with "+key, nil, tail, key)
		return l
	}
	refused := func(key, why string) {
		e.t.Helper()
		l, status, h, body := openTail(e.t, nil, tail, key)
		if l != nil {
			l.close()
			e.t.Fatalf("%s: a tail opened, want 429", why)
		}
		if ra, err := strconv.Atoi(h.Get("Retry-After")); status != http.StatusTooManyRequests || err != nil || ra < 1 ||
			h.Get("Content-Type") != "application/problem+json" {
			e.t.Fatalf("%s: %d Retry-After %q %s, want 429 with Retry-After and a problem", why, status, h.Get("Retry-After"), body)
		}
	}
	first := open(tailKeyA)
	open(tailKeyA)
	refused(tailKeyA, "a third tail of one key past MAX_TAILS=2")
	open(tailKeyA2) // another key has its own count
	refused(tailAdmin, "a fourth tail past MAX_TAILS_TOTAL=3")
	// A tail that ends gives its place back (once the server sees its client gone).
	first.close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, status, _, body := openTail(e.t, nil, tail, tailKeyA)
		if l != nil {
			break
		}
		if status != http.StatusTooManyRequests || time.Now().After(deadline) {
			e.t.Fatalf("after one tail ended: %d %s, want a tail", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *tailEdges) replay() {
	base, p := e.serveProject(nil)
	const t0 = 1_795_428_000_000
	// Ingest order differs from time order; one entry is before start_time.
	e.post(base, tailAdmin, p,
		`{"message":"before","time":`+strconv.Itoa(t0-1)+`}`,
		`{"message":"r1","time":`+strconv.Itoa(t0+5)+`}`,
		`{"message":"r2","time":`+strconv.Itoa(t0+1)+`}`,
		`{"message":"r3","time":`+strconv.Itoa(t0)+`}`,
		`{"message":"r4","time":`+strconv.Itoa(t0+9)+`}`)
	e.post(base, tailAdmin, p, `{"message":"other filter","time":`+strconv.Itoa(t0+9)+`,"level":"debug"}`)
	url := base + "/logs/tail?project_id=" + p + "&start_time=" + strconv.Itoa(t0)
	l := mustTail(e.t, "tail", nil, url+"&limit=3&log_level=info", tailAdmin)
	if got := msgs(l.entries(3)); !slices.Equal(got, []string{"r2", "r3", "r4"}) {
		e.t.Fatalf("replay of the last 3 with time >= start_time: %q, want r2 r3 r4 (ingest order)", got)
	}
	// Then live; an entry sent late with an old time still appears: the tail follows ingest order.
	e.post(base, tailAdmin, p, `{"message":"old timestamp","time":1000}`, `{"message":"live"}`)
	if got := msgs(l.entries(2)); !slices.Equal(got, []string{"old timestamp", "live"}) {
		e.t.Fatalf("after the replay: %q, want the live entries", got)
	}

	// limit defaults to 100.
	q := e.newProject(base)
	var many []string
	for i := range 130 {
		many = append(many, fmt.Sprintf(`{"message":"m%03d","time":%d}`, i, t0+int64(i)))
	}
	e.post(base, tailAdmin, q, many...)
	l2 := mustTail(e.t, "tail", nil, base+"/logs/tail?project_id="+q+"&start_time=0", tailAdmin)
	got := l2.entries(100)
	if got[0].Message != "m030" || got[99].Message != "m129" {
		e.t.Fatalf("default replay from %q to %q, want the last 100: m030 to m129", got[0].Message, got[99].Message)
	}
	e.post(base, tailAdmin, q, tailMessages("after the replay")...)
	if m := l2.entries(1)[0].Message; m != "after the replay" {
		e.t.Fatalf("after the default replay: %q", m)
	}
}

// newProject creates a project as the admin and returns its id.
func (e *tailEdges) newProject(base string) string {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(e.t.Context(), http.MethodPost, base+"/projects", strings.NewReader(`{"name":"tail"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tailAdmin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var p rest.Project
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusCreated {
		e.t.Fatalf("create project: %d %v", resp.StatusCode, err)
	}
	return p.Id
}

// ownIDs: the ids a tenant sees tell nothing of other tenants' writes. Two fresh projects get
// the same batches, one of them with other projects written between its batches (through this
// instance, and straight to the store as another instance would); the ids of their entries are
// the same, and one resumes its own tail.
func (e *tailEdges) ownIDs() {
	base := e.serve(nil)
	idsOf := func(noise bool) ([]string, string) {
		p := e.newProject(base)
		l := mustTail(e.t, "tail", nil, base+"/logs/tail?project_id="+p, tailAdmin)
		defer l.close()
		e.post(base, tailAdmin, p, tailMessages("o1", "o2")...)
		if noise {
			for i := range 5 {
				e.post(base, tailAdmin, e.b, tailMessages("noise")...)
				if _, err := e.st.CreateLogs(e.t.Context(), []domain.LogEntry{{ID: server.NewID(), ProjectID: e.a, Time: int64(i), Level: "info", Message: "elsewhere"}}, domain.LogWrite{}); err != nil {
					e.t.Fatal(err)
				}
			}
		}
		e.post(base, tailAdmin, p, tailMessages("o3")...)
		var ids []string
		for _, en := range l.entries(3) {
			ids = append(ids, en.eventID)
		}
		return ids, p
	}
	quiet, _ := idsOf(false)
	busy, p := idsOf(true)
	if !slices.Equal(quiet, busy) {
		e.t.Fatalf("the ids of the same batches changed with other projects' writes: %q alone, %q with writes between", quiet, busy)
	}
	l := mustTail(e.t, "resume", nil, base+"/logs/tail?project_id="+p, tailAdmin, "Last-Event-ID", busy[0])
	if got := msgs(l.entries(2)); !slices.Equal(got, []string{"o2", "o3"}) {
		e.t.Fatalf("resumed after o1: %q, want o2 o3", got)
	}
}

func (e *tailEdges) cursor() {
	base, p := e.serveProject(nil)
	tail := base + "/logs/tail?project_id=" + p
	first := mustTail(e.t, "tail", nil, tail, tailAdmin)
	e.post(base, tailAdmin, p, tailMessages("c1", "c2", "c3")...)
	e.post(base, tailAdmin, p, tailMessages("c4")...)
	ids := first.entries(4)
	first.close()

	// cursor: right after that event, through what is stored, then live.
	l := mustTail(e.t, "tail from a cursor", nil, tail+"&cursor="+ids[1].eventID, tailAdmin)
	if got := msgs(l.entries(2)); !slices.Equal(got, []string{"c3", "c4"}) {
		e.t.Fatalf("from the cursor of c2: %q, want c3 c4", got)
	}
	e.post(base, tailAdmin, p, tailMessages("c5")...)
	if got := l.entries(1)[0].Message; got != "c5" {
		e.t.Fatalf("live after the cursor: %q", got)
	}
	l.close()
	// Last-Event-ID wins over cursor.
	l = mustTail(e.t, "tail with Last-Event-ID", nil, tail+"&cursor="+ids[0].eventID, tailAdmin, "Last-Event-ID", ids[2].eventID)
	if got := msgs(l.entries(2)); !slices.Equal(got, []string{"c4", "c5"}) {
		e.t.Fatalf("Last-Event-ID of c3 with the cursor of c1: %q, want c4 c5", got)
	}
}

// rendering: an event's data is the entry exactly as GET /logs renders it, byte for byte, both
// live (the entries written through this instance, which the project's hub hands on from memory)
// and resumed (read from the store).
func (e *tailEdges) rendering() {
	base, p := e.serveProject(nil)
	tail := base + "/logs/tail?project_id=" + p
	l := mustTail(e.t, "tail", nil, tail, tailAdmin)
	defer l.close()
	// The first entry takes the tail onto its project's hub; the rest reach it from there.
	e.post(base, tailAdmin, p, tailMessages("first")...)
	first := l.entries(1)[0]
	varied := []string{
		`{"message":"plain","level":"info","time":1700000000000}`,
		`{"message":"Straße ΣΊΣΥΦΟΣ \"quoted\" <b>&amp;</b> tab\t line\nbreak \u2028 😀","level":"fatal","time":1700000000001,"subject":"checkout/<v2>","user_id":"ü@example.com"}`,
		`{"message":"with context","level":"warn","time":1700000000002,"attributes":{"z":[1,2.50,-0,1e3,true,null],"a":{"nested":"v é"},"html":"<&>"},"trace_id":"4BF92F3577B34DA6A3CE929D0E0E4736","span_id":"00F067AA0BA902B7"}`,
		`{"message":"","level":"debug","time":-5,"attributes":{}}`,
	}
	e.post(base, tailAdmin, p, varied...)
	live := l.blocksOf(len(varied))

	req, _ := http.NewRequestWithContext(e.t.Context(), http.MethodGet, base+"/logs?project_id="+p+"&limit=100", nil)
	req.Header.Set("Authorization", "Bearer "+tailAdmin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	var listed []json.RawMessage
	err = json.NewDecoder(resp.Body).Decode(&listed)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		e.t.Fatalf("GET /logs: %d %v", resp.StatusCode, err)
	}
	byID := map[string]string{}
	for _, raw := range listed {
		var id struct{ ID string }
		if err := json.Unmarshal(raw, &id); err != nil {
			e.t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			e.t.Fatal(err)
		}
		byID[id.ID] = compact.String()
	}
	compare := func(how string, blocks []sseBlock) {
		e.t.Helper()
		for _, b := range blocks {
			id := l.entry(b).Id
			if want, ok := byID[id]; !ok || b.data != want {
				e.t.Errorf("%s, entry %s:\nevent data %s\nGET /logs   %s", how, id, b.data, want)
			}
		}
	}
	compare("live", live)
	resumed := mustTail(e.t, "resumed tail", nil, tail, tailAdmin, "Last-Event-ID", first.eventID)
	defer resumed.close()
	compare("resumed", resumed.blocksOf(len(varied)))
}

func (e *tailEdges) filters() {
	base, p := e.serveProject(nil)
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	const other = "00f067aa0ba902b700f067aa0ba902b7"
	type entry struct {
		msg, level, user, subject, trace string
	}
	var posted []entry
	levels := []string{"info", "error", "fatal", "warn"}
	for i := range 36 {
		en := entry{msg: fmt.Sprintf("e%02d", i), level: levels[i%4], user: []string{"u1", "u2", ""}[i%3],
			subject: []string{"svc-a", "svc-b"}[(i/4)%2], trace: []string{trace, other, ""}[(i/3)%3]}
		if i%5 == 0 {
			en.msg += " has a NeEdLe"
		}
		posted = append(posted, en)
	}
	// The last entry matches every filter: each tail reads up to it.
	posted = append(posted, entry{msg: "end needle", level: "error", user: "u1", subject: "svc-a", trace: trace})
	filters := []struct {
		query string
		match func(entry) bool
	}{
		{"q=NEEDLE", func(en entry) bool { return strings.Contains(strings.ToLower(en.msg), "needle") }},
		{"subject=svc-a", func(en entry) bool { return en.subject == "svc-a" }},
		{"log_level=error&log_level=fatal", func(en entry) bool { return en.level == "error" || en.level == "fatal" }},
		{"user_id=u1", func(en entry) bool { return en.user == "u1" }},
		{"trace_id=" + strings.ToUpper(trace), func(en entry) bool { return en.trace == trace }},
		{"user_id=u1&log_level=error&subject=svc-a", func(en entry) bool {
			return en.user == "u1" && en.level == "error" && en.subject == "svc-a"
		}},
	}
	tails := make([]*liveTail, len(filters))
	for i, f := range filters {
		l := mustTail(e.t, "tail "+f.query, nil, base+"/logs/tail?project_id="+p+"&"+f.query, tailAdmin)
		tails[i] = l
	}
	var batch []string
	for _, en := range posted {
		var b strings.Builder
		fmt.Fprintf(&b, `{"message":%q,"level":%q,"subject":%q`, en.msg, en.level, en.subject)
		if en.user != "" {
			fmt.Fprintf(&b, `,"user_id":%q`, en.user)
		}
		if en.trace != "" {
			fmt.Fprintf(&b, `,"trace_id":%q`, en.trace)
		}
		b.WriteByte('}')
		batch = append(batch, b.String())
		if len(batch) == 6 {
			e.post(base, tailAdmin, p, batch...)
			batch = nil
		}
	}
	if len(batch) > 0 {
		e.post(base, tailAdmin, p, batch...)
	}
	for i, f := range filters {
		var want []string
		for _, en := range posted {
			if f.match(en) {
				want = append(want, en.msg)
			}
		}
		if got := msgs(tails[i].until("end needle")); !slices.Equal(got, want) {
			e.t.Errorf("tail %s:\n got %q\nwant %q", f.query, got, want)
		}
	}
}

func (e *tailEdges) writeTimeout() {
	const writeTO = 300 * time.Millisecond
	base, p := e.serveProject(func(c *server.Config) { c.WriteTO, c.TailHeartbeat = writeTO, 100*time.Millisecond })
	l := mustTail(e.t, "tail", nil, base+"/logs/tail?project_id="+p, tailAdmin)
	// Entries over several write timeouts, then heartbeats past them: the stream stays up.
	start := time.Now()
	for i := range 5 {
		time.Sleep(writeTO / 2)
		e.post(base, tailAdmin, p, tailMessages(fmt.Sprintf("w%d", i))...)
	}
	if got := msgs(l.entries(5)); !slices.Equal(got, []string{"w0", "w1", "w2", "w3", "w4"}) {
		e.t.Fatalf("got %q", got)
	}
	for time.Since(start) < 4*writeTO {
		if b, ok := l.next(10 * time.Second); !ok {
			e.t.Fatalf("the stream ended %v into it, with WRITE_TIMEOUT %v: %v", time.Since(start), writeTO, l.err)
		} else if b.comment == "" {
			e.t.Fatalf("unexpected %+v", b)
		}
	}
	e.post(base, tailAdmin, p, tailMessages("still here")...)
	if got := l.entries(1)[0].Message; got != "still here" {
		e.t.Fatalf("got %q", got)
	}
}

// stalled: a client that stops reading while entries pile up is cut off after STALL_TIMEOUT,
// and resuming from the last whole event it got loses nothing and repeats nothing.
func (e *tailEdges) stalled() {
	const stall = 300 * time.Millisecond
	base, p := e.serveProject(func(c *server.Config) { c.StallTO = stall })
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	l := mustTail(e.t, "tail", client, base+"/logs/tail?project_id="+p, tailAdmin)
	// Idle past the stall timeout first: the burst that follows must still reach the client
	// (the deadline of the last flush, long passed, must not apply to it).
	time.Sleep(2 * stall)
	// About 9 MB: more than the socket buffers of both sides hold.
	const total, batch = 1500, 500
	pad := strings.Repeat("x", 6000)
	for i := 0; i < total; i += batch {
		var es []string
		for k := range batch {
			es = append(es, fmt.Sprintf(`{"message":"s%04d %s"}`, i+k, pad))
		}
		e.post(base, tailAdmin, p, es...)
	}
	// The reader took nothing since the retry field; the server gives up on it after the stall
	// timeout. Wait well past it, then read what reached this side.
	time.Sleep(10 * stall)
	seen := map[string]int{}
	last := ""
	for b := range l.blocks {
		if b.event == "log" {
			en := l.entry(b)
			seen[en.Message]++
			last = en.eventID
		}
	}
	if len(seen) == total {
		e.t.Fatalf("all %d entries (about %d MB) reached a client that did not read: the test did not fill the buffers", total, total*len(pad)>>20)
	}
	if len(seen) == 0 {
		e.t.Fatal("nothing reached the client before it was cut off")
	}
	first := len(seen)
	r := mustTail(e.t, "resume", nil, base+"/logs/tail?project_id="+p, tailAdmin, "Last-Event-ID", last)
	for _, en := range r.entries(total - first) {
		seen[en.Message]++
	}
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	if len(seen) != total || dups != 0 {
		e.t.Fatalf("%d unique entries, %d duplicates after a cut at %d and a resume; want %d and 0", len(seen), dups, first, total)
	}
	e.t.Logf("cut off after %d of %d entries; the resume delivered the rest", first, total)
}

func (e *tailEdges) deleted() {
	base, p := e.serveProject(nil)
	tail := base + "/logs/tail?project_id=" + p
	l := mustTail(e.t, "tail", nil, tail, tailAdmin)
	e.post(base, tailAdmin, p, tailMessages("before the delete")...)
	last := l.entries(1)[0].eventID
	req, _ := http.NewRequestWithContext(e.t.Context(), http.MethodDelete, base+"/projects/"+p, nil)
	req.Header.Set("Authorization", "Bearer "+tailAdmin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		e.t.Fatalf("DELETE /projects/%s: %d", p, resp.StatusCode)
	}
	// The tail checks its project every few seconds (CheckEvery, 5 s).
	l.waitEnd(30 * time.Second)
	_, status, h, body := openTail(e.t, nil, tail, tailAdmin, "Last-Event-ID", last)
	if status != http.StatusNotFound || h.Get("Content-Type") != "application/problem+json" {
		e.t.Fatalf("resuming a tail of a deleted project: %d %s, want 404", status, body)
	}
}
