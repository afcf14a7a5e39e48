package e2e

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
)

// TestLogContext: GET /logs/context answers the entry and its neighbours in the listing's
// order (ties in time by id), as many as asked for, fewer at the project's ends; the query
// narrows the neighbours only; bounds and the query are checked; an unknown id, an entry of
// another project and an expired entry are 404.
func TestLogContext(t *testing.T) {
	forEachStore(t, testLogContext)
}

func testLogContext(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	other := e.project("other")
	// Twelve entries, four at each of three times: the order within a time is the ids'.
	var in []rest.LogEntryInput
	for i := range 12 {
		in = append(in, rest.LogEntryInput{ProjectId: p.Id, Message: fmt.Sprint("m", i), Time: ptr(int64(1000 + 10*(i/4))), Level: ptr([]string{"info", "error"}[i%2])})
	}
	in = append(in, rest.LogEntryInput{ProjectId: other.Id, Message: "other", Time: ptr(int64(1010))})
	if r, err := e.client.CreateLogsWithResponse(t.Context(), nil, in); err != nil || r.StatusCode() != 201 {
		t.Fatalf("seed: %v %d %s", err, r.StatusCode(), r.Body)
	}
	all := listAll(t, e, p.Id)
	foreign := listAll(t, e, other.Id)[0]
	if len(all) != 12 {
		t.Fatalf("listed %d entries, want 12", len(all))
	}
	get := func(params rest.LogContextParams) *rest.LogContextResponse {
		t.Helper()
		r, err := e.client.LogContextWithResponse(t.Context(), &params)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	ok := func(params rest.LogContextParams) rest.LogContext {
		t.Helper()
		r := get(params)
		if r.JSON200 == nil {
			t.Fatalf("context %+v: status %d %s", params, r.StatusCode(), r.Body)
		}
		return *r.JSON200
	}
	wantIDs := func(what string, got []rest.LogEntry, want []rest.LogEntry) {
		t.Helper()
		if !slices.Equal(entryIDs(got), entryIDs(want)) {
			t.Fatalf("%s: %v, want %v", what, messages(got), messages(want))
		}
	}
	at := func(i int) rest.LogContextParams { return rest.LogContextParams{ProjectId: p.Id, Id: all[i].Id} }

	// The middle of the entries at time 1010 (index 5): ties by id on both sides.
	c := ok(rest.LogContextParams{ProjectId: p.Id, Id: all[5].Id, Before: ptr[int32](3), After: ptr[int32](4)})
	if !entriesEqual(c.Entry, all[5]) {
		t.Fatalf("entry %+v, want %+v (as GET /logs renders it)", c.Entry, all[5])
	}
	wantIDs("before", c.Before, all[2:5])
	wantIDs("after", c.After, all[6:10])
	for i, got := range slices.Concat(c.Before, c.After) {
		if want := slices.Concat(all[2:5], all[6:10])[i]; !entriesEqual(got, want) {
			t.Fatalf("neighbour %d = %+v, want %+v", i, got, want)
		}
	}
	// Defaults (50 each side) and the bounds 0 and 1,000, beyond the project's ends.
	c = ok(at(0))
	wantIDs("default before the first", c.Before, nil)
	wantIDs("default after the first", c.After, all[1:])
	c = ok(rest.LogContextParams{ProjectId: p.Id, Id: all[11].Id, Before: ptr[int32](1000), After: ptr[int32](0)})
	wantIDs("1,000 before the last", c.Before, all[:11])
	wantIDs("0 after the last", c.After, nil)
	c = ok(rest.LogContextParams{ProjectId: p.Id, Id: all[6].Id, Before: ptr[int32](0), After: ptr[int32](1000)})
	wantIDs("0 before", c.Before, nil)
	wantIDs("1,000 after", c.After, all[7:])
	// The query narrows the neighbours (errors are the odd ones); the entry, an info, stays.
	params := at(4)
	params.Query = ptr(rest.Query("level:error"))
	params.Before, params.After = ptr[int32](2), ptr[int32](2)
	c = ok(params)
	if c.Entry.Id != all[4].Id {
		t.Fatalf("narrowed context answers %s, want the entry %s", c.Entry.Message, all[4].Message)
	}
	wantIDs("errors before", c.Before, []rest.LogEntry{all[1], all[3]})
	wantIDs("errors after", c.After, []rest.LogEntry{all[5], all[7]})

	// Bad parameters: 400 naming them.
	for _, bad := range []struct {
		query string
		param string
	}{
		{"&before=1001", "?before"},
		{"&after=-1", "?after"},
		{"&before=x", "?before"},
		{"&query=" + url.QueryEscape("level:(error"), "?query"},
	} {
		resp, body := e.do("GET", "/logs/context?project_id="+p.Id+"&id="+all[0].Id+bad.query, "", "")
		wantAnswer(t, resp, body, http.StatusBadRequest, []string{bad.param})
	}
	resp, body := e.do("GET", "/logs/context?project_id="+p.Id+"&id="+all[0].Id+"&query="+url.QueryEscape("a )"), "", "")
	wantAnswer(t, resp, body, http.StatusBadRequest, []string{"?query"})
	if d := *problemOf(t, body).Errors; !strings.Contains(d[0].Detail, "at 3") {
		t.Errorf("a query's syntax error says %q, want its position", d[0].Detail)
	}
	// Not found: an unknown id, an id of another project, a malformed one, an unknown project.
	for name, path := range map[string]string{
		"unknown id":      "/logs/context?project_id=" + p.Id + "&id=" + foreign.ProjectId,
		"another project": "/logs/context?project_id=" + p.Id + "&id=" + foreign.Id,
		"malformed id":    "/logs/context?project_id=" + p.Id + "&id=nope",
		"unknown project": "/logs/context?project_id=" + foreign.Id + "&id=" + all[0].Id,
	} {
		resp, body := e.do("GET", path, "", "")
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404: %s", name, resp.StatusCode, body)
		}
	}
	// Expired: once the project keeps 1 day, its entries of 1970 are gone from GET /logs and
	// from here alike.
	if r, err := e.client.PatchProjectWithBodyWithResponse(t.Context(), p.Id, "application/merge-patch+json", strings.NewReader(`{"retention_days":1}`)); err != nil || r.StatusCode() != 200 {
		t.Fatalf("patch retention: %v %d", err, r.StatusCode())
	}
	if n := len(listAll(t, e, p.Id)); n != 0 {
		t.Fatalf("GET /logs still lists %d expired entries", n)
	}
	if r := get(at(5)); r.StatusCode() != http.StatusNotFound {
		t.Fatalf("an expired entry's context: status %d, want 404: %s", r.StatusCode(), r.Body)
	}
}

func entryIDs(es []rest.LogEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Id
	}
	return out
}

// entriesEqual compares two entries as JSON: the same rendering, member for member.
func entriesEqual(a, b rest.LogEntry) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// hostileMessages are messages a CSV or a spreadsheet could misread.
var hostileMessages = []string{
	`say "hi", then leave`, "line one\nline two", "=cmd()", "+1", "-1", "@x", "\tindented", "\rcarriage",
	"crlf\r\ninside", "ünïcödé ✓ 日本語 \u202e", "'=already quoted", `,"`, strings.Repeat("x", 64<<10),
}

// TestLogExport: GET /logs/export streams exactly what paging GET /logs over the same filter
// lists, in order, as NDJSON (each line the entry's JSON) and as CSV (formula-safe cells), read
// in many internal pages; bad parameters answer 400 before any byte of a download.
func TestLogExport(t *testing.T) {
	forEachStore(t, testLogExport)
}

func testLogExport(t *testing.T, open storeOpener) {
	e := newEnv(t, open, func(c *server.Config) { c.ExportPageSize = 3 }) // many pages from few entries
	p := e.project("export")
	var in []rest.LogEntryInput
	for i, m := range hostileMessages {
		le := rest.LogEntryInput{ProjectId: p.Id, Message: m, Time: ptr(int64(5000 + i/2)), Level: ptr([]string{"info", "error", "warn"}[i%3])}
		if i%2 == 0 {
			le.Subject = ptr(hostileMessages[(i+3)%len(hostileMessages)][:min(100, len(hostileMessages[(i+3)%len(hostileMessages)]))])
			le.UserId = ptr("-user,\"" + strconv.Itoa(i))
			le.Attributes = rest.Attributes(fmt.Sprintf(`{"n":%d,"s":"=a,\"b\"\n","nested":{"x":[1,"@"]}}`, i))
		}
		if i%3 == 0 {
			le.TraceId = ptr(fmt.Sprintf("%032x", i+1))
			le.SpanId = ptr(fmt.Sprintf("%016x", i+1))
		}
		in = append(in, le)
	}
	if r, err := e.client.CreateLogsWithResponse(t.Context(), nil, in); err != nil || r.StatusCode() != 201 {
		t.Fatalf("seed: %v %d %.300s", err, r.StatusCode(), r.Body)
	}

	for _, f := range []struct {
		name  string
		query string // beyond project_id
	}{
		{"all", ""},
		{"level", "&log_level=error&log_level=warn"},
		{"query", "&query=" + url.QueryEscape("n:>=2 OR cmd")},
		{"time", "&start_time=5001&end_time=5004"},
		{"nothing", "&user_id=nobody"},
	} {
		t.Run(f.name, func(t *testing.T) {
			want := pageAll(t, e, "/logs?project_id="+p.Id+"&limit=2"+f.query)
			for _, format := range []string{"", "&format=ndjson", "&format=csv"} {
				resp, body := e.do("GET", "/logs/export?project_id="+p.Id+f.query+format, "", "")
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("export%s: status %d: %.300s", format, resp.StatusCode, body)
				}
				ext := "ndjson"
				if format == "&format=csv" {
					ext = "csv"
				}
				if got, want := resp.Header.Get("Content-Disposition"), `attachment; filename="logs-`+p.Id+`.`+ext+`"`; got != want {
					t.Errorf("Content-Disposition %q, want %q", got, want)
				}
				if ext == "csv" {
					checkCSV(t, resp, body, want)
				} else {
					checkNDJSON(t, resp, body, want)
				}
			}
		})
	}

	// Bad parameters: a problem document and nothing of a download.
	for _, bad := range []struct{ query, param string }{
		{"&format=xml", "?format"},
		{"&format=CSV", "?format"},
		{"&query=" + url.QueryEscape("(a"), "?query"},
		{"&start_time=9&end_time=1", "?start_time"},
		{"&limit=5", "?limit"},
	} {
		resp, body := e.do("GET", "/logs/export?project_id="+p.Id+bad.query, "", "")
		wantAnswer(t, resp, body, http.StatusBadRequest, []string{bad.param})
		if resp.Header.Get("Content-Disposition") != "" {
			t.Errorf("%s: a refused export has Content-Disposition %q", bad.query, resp.Header.Get("Content-Disposition"))
		}
	}
	resp, body := e.do("GET", "/logs/export?project_id=00000000-0000-7000-8000-000000000000&format=csv", "", "")
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Disposition") != "" {
		t.Errorf("unknown project: status %d, %v: %s", resp.StatusCode, resp.Header, body)
	}
}

// pageAll lists every entry of a listing by following its Link headers from path.
func pageAll(t *testing.T, e *env, path string) []rest.LogEntry {
	t.Helper()
	var out []rest.LogEntry
	for pages := 0; path != ""; pages++ {
		resp, body := e.do("GET", path, "", "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %.300s", path, resp.StatusCode, body)
		}
		var page []rest.LogEntry
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		path = nextLink(t, resp.Header)
	}
	return out
}

// checkNDJSON compares an NDJSON export with the listing, line by line: each line the entry's
// JSON exactly as GET /logs encodes it.
func checkNDJSON(t *testing.T, resp *http.Response, body []byte, want []rest.LogEntry) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("Content-Type %q", ct)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	var n int
	for sc.Scan() {
		if n >= len(want) {
			t.Fatalf("line %d beyond the %d listed entries: %.200s", n+1, len(want), sc.Text())
		}
		var got rest.LogEntry
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		if !entriesEqual(got, want[n]) {
			t.Fatalf("line %d = %.300s, want %+v", n+1, sc.Text(), want[n])
		}
		n++
	}
	if err := sc.Err(); err != nil || n != len(want) || (len(body) > 0 && body[len(body)-1] != '\n') {
		t.Fatalf("%d lines (%v), want %d, each ended by a newline", n, err, len(want))
	}
}

// checkCSV parses a CSV export back and compares it with the listing, cell by cell, each cell
// as the export must write it (formula-safe).
func checkCSV(t *testing.T, resp *http.Response, body []byte, want []rest.LogEntry) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	r := csv.NewReader(bytes.NewReader(body))
	r.FieldsPerRecord = 8
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatalf("the export is not CSV: %v", err)
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != "time,level,subject,user_id,trace_id,span_id,message,attributes" {
		t.Fatalf("header row %q", rows[:min(1, len(rows))])
	}
	if len(rows)-1 != len(want) {
		t.Fatalf("%d rows, want %d", len(rows)-1, len(want))
	}
	str := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	for i, w := range want {
		attrs := ""
		if len(w.Attributes) > 0 {
			var b bytes.Buffer
			if err := json.Compact(&b, w.Attributes); err != nil {
				t.Fatal(err)
			}
			attrs = b.String()
		}
		cells := []string{strconv.FormatInt(w.Time, 10), w.Level, str(w.Subject), str(w.UserId), str(w.TraceId), str(w.SpanId), w.Message, attrs}
		for j, c := range cells {
			// encoding/csv reads a CRLF inside a quoted field as LF (RFC 4180 readers differ).
			want := strings.ReplaceAll(formulaSafe(c), "\r\n", "\n")
			if got := rows[i+1][j]; got != want {
				t.Fatalf("row %d, %s = %.100q, want %.100q", i+1, rows[0][j], got, want)
			}
		}
	}
	// The formula prefix, as bytes in the file: the reader above must not be what adds it.
	for _, m := range []string{`'=cmd()`, `'+1`, `'-1`, `'@x`, "'\tindented", "\"'\rcarriage\""} {
		if len(want) == len(hostileMessages) && !bytes.Contains(body, []byte(m)) {
			t.Errorf("the CSV does not hold %q", m)
		}
	}
}

// formulaSafe states the export's rule independently of its code: a cell beginning with =, +,
// -, @, tab or CR gets a ' before it.
func formulaSafe(c string) string {
	if c != "" && strings.ContainsRune("=+-@\t\r", rune(c[0])) {
		return "'" + c
	}
	return c
}
