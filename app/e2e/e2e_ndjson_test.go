package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"example.com/obsvc/api/rest"
)

// gzipOf is b compressed with gzip.
func gzipOf(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestNDJSONAndGzipThroughTheGoClient sends batches as NDJSON and gzip through the generated Go
// client (api/rest) on each store: they are stored as the JSON array of the same entries would
// be, and a batch sent again under its Idempotency-Key in another form is the same batch.
func TestNDJSONAndGzipThroughTheGoClient(t *testing.T) {
	forEachStore(t, testNDJSONAndGzipThroughTheGoClient)
}

func testNDJSONAndGzipThroughTheGoClient(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	ctx := t.Context()
	ndjson := "application/x-ndjson"
	line := func(msg string, extra string) string {
		return fmt.Sprintf(`{"project_id":%q,"message":%q,"time":%d%s}`, p.Id, msg, 1000+len(msg), extra)
	}

	// Plain NDJSON: blank lines, a CRLF, no newline at the end; an unknown member is kept in
	// attributes as in the array form.
	body := "\n" + line("one", `,"level":"WARNING"`) + "\r\n\r\n  \n" + line("two", `,"region":"eu"`) + "\n" + line("three", "")
	r, err := e.client.CreateLogsWithBodyWithResponse(ctx, &rest.CreateLogsParams{}, ndjson, strings.NewReader(body))
	if err != nil || r.JSON201 == nil || r.JSON201.Created != 3 {
		t.Fatalf("NDJSON: %v, %d %s", err, r.StatusCode(), r.Body)
	}

	// NDJSON in gzip, and a JSON array in gzip.
	gz := gzipOf(t, []byte(line("four", "")+"\n"+line("fivefive", "")+"\n"))
	r, err = e.client.CreateLogsWithBodyWithResponse(ctx, &rest.CreateLogsParams{ContentEncoding: ptr("gzip")}, ndjson, bytes.NewReader(gz))
	if err != nil || r.JSON201 == nil || r.JSON201.Created != 2 {
		t.Fatalf("NDJSON in gzip: %v, %d %s", err, r.StatusCode(), r.Body)
	}
	gz = gzipOf(t, []byte("["+line("sixsixsix", "")+"]"))
	r, err = e.client.CreateLogsWithBodyWithResponse(ctx, &rest.CreateLogsParams{ContentEncoding: ptr("gzip")}, "application/json", bytes.NewReader(gz))
	if err != nil || r.JSON201 == nil || r.JSON201.Created != 1 {
		t.Fatalf("JSON in gzip: %v, %d %s", err, r.StatusCode(), r.Body)
	}

	got := listAll(t, e, p.Id)
	if want := []string{"one", "two", "four", "three", "fivefive", "sixsixsix"}; !slices.Equal(messages(got), want) {
		t.Fatalf("stored %q, want %q", messages(got), want)
	}
	for _, g := range got {
		switch g.Message {
		case "one":
			if g.Level != "warn" || string(g.Attributes) != `{"severity_text":"WARNING"}` {
				t.Errorf("one: level %q attributes %s", g.Level, g.Attributes)
			}
		case "two":
			if string(g.Attributes) != `{"region":"eu"}` {
				t.Errorf("two: attributes %s, want the unknown member kept", g.Attributes)
			}
		}
	}

	// The same entries under one Idempotency-Key, as a JSON array and then as NDJSON in gzip:
	// one batch, stored once.
	entries := []rest.LogEntryInput{{ProjectId: p.Id, Message: "again", Time: ptr[int64](5000)}, {ProjectId: p.Id, Message: "again 2", Time: ptr[int64](5001)}}
	key := "ndjson-retry"
	first, err := e.client.CreateLogsWithResponse(ctx, &rest.CreateLogsParams{IdempotencyKey: &key}, entries)
	if err != nil || first.JSON201 == nil {
		t.Fatalf("array: %v, %d %s", err, first.StatusCode(), first.Body)
	}
	var nd bytes.Buffer
	for _, en := range entries {
		b, _ := json.Marshal(en)
		nd.Write(b)
		nd.WriteByte('\n')
	}
	again, err := e.client.CreateLogsWithBodyWithResponse(ctx, &rest.CreateLogsParams{IdempotencyKey: &key, ContentEncoding: ptr("gzip")}, ndjson, bytes.NewReader(gzipOf(t, nd.Bytes())))
	if err != nil || again.JSON201 == nil || again.JSON201.Created != 2 || again.HTTPResponse.Header.Get("Idempotency-Replayed") != "true" {
		t.Fatalf("the same batch as NDJSON in gzip: %v, %d %v %s", err, again.StatusCode(), again.HTTPResponse.Header, again.Body)
	}
	if n := e.logCount(p.Id); n != 8 {
		t.Fatalf("%d entries stored, want 8 (the retry stored nothing)", n)
	}
	// A different batch under the key is a 422, whatever its form.
	nd.Reset()
	nd.WriteString(line("other", "") + "\n")
	other, err := e.client.CreateLogsWithBodyWithResponse(ctx, &rest.CreateLogsParams{IdempotencyKey: &key}, ndjson, &nd)
	if err != nil || other.StatusCode() != 422 {
		t.Fatalf("another batch under the key: %v, %d %s", err, other.StatusCode(), other.Body)
	}
}

// badBatches are batches with problems the array form names by pointer, as the JSON text of
// each entry: each is sent as a JSON array and as NDJSON, and must be answered alike.
func badBatches(project string) []struct {
	name    string
	entries []string
} {
	ok := fmt.Sprintf(`{"project_id":%q,"message":"m"}`, project)
	many := func(n int, bad string, at int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = ok
		}
		out[at] = bad
		return out
	}
	return []struct {
		name    string
		entries []string
	}{
		{"a time of the wrong type", []string{ok, fmt.Sprintf(`{"project_id":%q,"message":"m","time":"soon"}`, project)}},
		{"no message", []string{fmt.Sprintf(`{"project_id":%q}`, project), ok, ok}},
		{"an entry that is an array", []string{ok, ok, ok, `[1,2]`}},
		{"an entry that is a string", []string{`"m"`, ok}},
		{"a name in another case", []string{ok, fmt.Sprintf(`{"project_id":%q,"message":"m","Level":"info"}`, project)}},
		{"a member that is also an attribute", []string{fmt.Sprintf(`{"project_id":%q,"message":"m","region":"eu","attributes":{"region":"us"}}`, project)}},
		{"a message too long", []string{ok, fmt.Sprintf(`{"project_id":%q,"message":%q}`, project, strings.Repeat("x", 70_000))}},
		{"a bad trace id and level", []string{fmt.Sprintf(`{"project_id":%q,"message":"m","trace_id":"xyz","level":"loud"}`, project)}},
		{"an unknown project", []string{ok, fmt.Sprintf(`{"project_id":%q,"message":"m"}`, "01936f0e-8c2a-7b3e-9d4f-2a6b8c0d1e2f")}},
		{"a time of the wrong type at 2,501 (past the decode-once size)", many(3000, fmt.Sprintf(`{"project_id":%q,"message":"m","time":1.5}`, project), 2500)},
		{"a message too long at 2,501 (past the decode-once size)", many(3000, fmt.Sprintf(`{"project_id":%q,"message":%q}`, project, strings.Repeat("x", 70_000)), 2500)},
		{"an unknown project at 2,701 (past the decode-once size)", many(3000, fmt.Sprintf(`{"project_id":%q,"message":"m"}`, "01936f0e-8c2a-7b3e-9d4f-2a6b8c0d1e2f"), 2700)},
		{"no entries", nil},
	}
}

// TestNDJSONPointersMatchTheArray sends each bad batch as a JSON array and as NDJSON with blank
// lines between its entries: the same status and the same pointers, nothing stored, and each
// NDJSON problem about an entry names the entry's line.
func TestNDJSONPointersMatchTheArray(t *testing.T) {
	forEachStore(t, testNDJSONPointersMatchTheArray)
}

func testNDJSONPointersMatchTheArray(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	for _, c := range badBatches(p.Id) {
		t.Run(c.name, func(t *testing.T) {
			aResp, aBody := e.do("POST", "/logs", "application/json", "["+strings.Join(c.entries, ",")+"]")
			// NDJSON: a blank line before every third entry, so that lines and indexes differ.
			var nd strings.Builder
			lineOf := make([]int, len(c.entries))
			lineNo := 0
			for i, en := range c.entries {
				if i%3 == 0 {
					nd.WriteString("\n")
					lineNo++
				}
				nd.WriteString(en + "\n")
				lineNo++
				lineOf[i] = lineNo
			}
			nResp, nBody := e.do("POST", "/logs", "application/x-ndjson", nd.String())
			if aResp.StatusCode < 400 || aResp.StatusCode >= 500 {
				t.Fatalf("array: %d, want a 4xx: %.300s", aResp.StatusCode, aBody)
			}
			if nResp.StatusCode != aResp.StatusCode {
				t.Fatalf("NDJSON %d, array %d: %.300s", nResp.StatusCode, aResp.StatusCode, nBody)
			}
			aProblem, nProblem := problemOf(t, aBody), problemOf(t, nBody)
			if a, n := fieldsOf(aProblem), fieldsOf(nProblem); !slices.Equal(a, n) {
				t.Fatalf("NDJSON names %q, the array %q", n, a)
			}
			if nProblem.Errors != nil {
				for _, f := range *nProblem.Errors {
					if f.Pointer == nil || *f.Pointer == "" {
						continue
					}
					k, err := strconv.Atoi(strings.Split(*f.Pointer, "/")[1])
					if err != nil {
						t.Fatalf("pointer %q", *f.Pointer)
					}
					if want := fmt.Sprintf("line %d: ", lineOf[k]); !strings.HasPrefix(f.Detail, want) {
						t.Errorf("%s: detail %q, want it to start %q", *f.Pointer, f.Detail, want)
					}
				}
			}
			if n := e.logCount(p.Id); n != 0 {
				t.Fatalf("%d entries stored", n)
			}
		})
	}
}

// TestNDJSONAndGzipThroughCurl posts NDJSON files with curl --data-binary, plain and in gzip,
// and a bad one, on each store.
func TestNDJSONAndGzipThroughCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("curl is required under CI=true: %v", err)
		}
		t.Skipf("!!! no curl: the NDJSON curl test is SKIPPED: %v", err)
	}
	forEachStore(t, func(t *testing.T, open storeOpener) {
		e, p := newEnvWithProject(t, open)
		dir := t.TempDir()
		var lines []string
		for i := range 500 {
			lines = append(lines, fmt.Sprintf(`{"project_id":%q,"message":"curl %d","time":%d,"host":"w%d"}`, p.Id, i, 1000+i, i%3))
		}
		plain := filepath.Join(dir, "logs.ndjson")
		if err := os.WriteFile(plain, []byte(strings.Join(lines[:300], "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		gz := filepath.Join(dir, "logs.ndjson.gz")
		if err := os.WriteFile(gz, gzipOf(t, []byte(strings.Join(lines[300:], "\n")+"\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		bad := filepath.Join(dir, "bad.ndjson")
		if err := os.WriteFile(bad, []byte(lines[0]+"\n\n"+`{"project_id":"`+p.Id+`","message":"m","time":"noon"}`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		post := func(file string, header ...string) (int, []byte) {
			t.Helper()
			args := []string{"-sS", "-o", "-", "-w", "\n%{http_code}", "-X", "POST", e.url + "/logs",
				"-H", "Content-Type: application/x-ndjson", "--data-binary", "@" + file}
			for _, h := range header {
				args = append(args, "-H", h)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, curl, args...).Output()
			if err != nil {
				t.Fatalf("curl: %v", err)
			}
			i := bytes.LastIndexByte(out, '\n')
			status, err := strconv.Atoi(string(out[i+1:]))
			if err != nil {
				t.Fatalf("curl printed %q", out)
			}
			return status, out[:i]
		}
		if status, body := post(plain); status != 201 || !bytes.Contains(body, []byte(`"created":300`)) {
			t.Fatalf("NDJSON file: %d %s", status, body)
		}
		if status, body := post(gz, "Content-Encoding: gzip"); status != 201 || !bytes.Contains(body, []byte(`"created":200`)) {
			t.Fatalf("NDJSON file in gzip: %d %s", status, body)
		}
		status, body := post(bad)
		if status != 400 {
			t.Fatalf("bad NDJSON file: %d %s", status, body)
		}
		pr := problemOf(t, body)
		if f := fieldsOf(pr); !slices.Equal(f, []string{"/1/time"}) || !strings.HasPrefix((*pr.Errors)[0].Detail, "line 3: ") {
			t.Fatalf("bad NDJSON file: %s", body)
		}
		if status, body := post(plain, "Content-Encoding: br"); status != http.StatusUnsupportedMediaType || problemOf(t, body).Status != 415 {
			t.Fatalf("Content-Encoding br: %d %s", status, body)
		}
		got := listAll(t, e, p.Id)
		if len(got) != 500 {
			t.Fatalf("%d entries stored, want 500", len(got))
		}
		lr, err := e.client.ListLogsWithResponse(t.Context(), &rest.ListLogsParams{ProjectId: p.Id, Query: ptr(rest.Query("host:w1")), Limit: ptr[int32](1000)})
		if err != nil || lr.JSON200 == nil || len(*lr.JSON200) != 167 {
			t.Fatalf("host:w1: %v %d %.300s", err, lr.StatusCode(), lr.Body)
		}
	})
}
