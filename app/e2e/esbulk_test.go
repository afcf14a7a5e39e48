package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
	"example.com/obsvc/domain"
)

// esEnv is a keyed server with two projects, for the Elasticsearch bulk API: an admin key, a key
// of project a and a key of project b.
type esEnv struct {
	*env
	a, b domain.Project
}

const (
	esAdminKey = "es-admin-secret"
	esKeyA     = "es-key-a"
	esKeyB     = "es-key-b"
)

func newESEnv(t *testing.T, open storeOpener, tweak func(*server.Config)) *esEnv {
	t.Helper()
	st := open(t)
	a, b := seedProjects(t, st)
	cfg := server.DefaultConfig()
	cfg.APIKeys = strings.Join([]string{apitest.KeyLine("admin", esAdminKey), apitest.KeyLine("project "+a.ID, esKeyA), apitest.KeyLine("project "+b.ID, esKeyB)}, ",")
	if tweak != nil {
		tweak(&cfg)
	}
	_, srv := servetest.Serve(t, cfg, st, nil)
	e := &env{t: t, url: srv.URL, store: st, http: http.DefaultClient}
	return &esEnv{env: e, a: a, b: b}
}

// esAnswer is a bulk answer as a client reads it.
type esAnswer struct {
	Took   int64                          `json:"took"`
	Errors bool                           `json:"errors"`
	Items  []map[string]esItemAnswer      `json:"items"`
	Error  *struct{ Type, Reason string } `json:"error"`
	Status int                            `json:"status"`
}

type esItemAnswer struct {
	Index  string  `json:"_index"`
	ID     *string `json:"_id"`
	Status int     `json:"status"`
	Result string  `json:"result"`
	Error  *struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	} `json:"error"`
}

// statuses lists each item's action and status, "index:201".
func (a esAnswer) statuses() []string {
	var out []string
	for _, it := range a.Items {
		for name, v := range it {
			out = append(out, fmt.Sprintf("%s:%d", name, v.Status))
		}
	}
	return out
}

type esCall struct {
	method, path string
	auth         string // the Authorization header, "" for none
	contentType  string
	gzip         bool
	body         []byte
}

// es sends c and returns the HTTP answer and its body read as a bulk (or error) answer.
func (e *esEnv) es(t *testing.T, c esCall) (*http.Response, []byte, esAnswer) {
	t.Helper()
	body := c.body
	if c.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body = b.Bytes()
	}
	if c.method == "" {
		c.method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(t.Context(), c.method, e.url+c.path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if c.contentType != "" {
		req.Header.Set("Content-Type", c.contentType)
	}
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var a esAnswer
	if len(raw) > 0 && c.method != http.MethodHead && (strings.HasSuffix(c.path, "_bulk") || resp.StatusCode >= 300) {
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatalf("%s %s: %d, not JSON: %v: %.300s", c.method, c.path, resp.StatusCode, err, raw)
		}
	}
	if got := resp.Header.Get("X-Elastic-Product"); got != "Elasticsearch" && resp.StatusCode < 300 {
		t.Errorf("%s %s: X-Elastic-Product %q", c.method, c.path, got)
	}
	return resp, raw, a
}

func bearer(key string) string { return "Bearer " + key }

// ndjson joins lines into a bulk body.
func ndjson(lines ...string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

func TestESBulk(t *testing.T) {
	forEachStore(t, testESBulk)
}

func testESBulk(t *testing.T, open storeOpener) {
	e := newESEnv(t, open, nil)

	t.Run("discovery", func(t *testing.T) {
		resp, raw, _ := e.es(t, esCall{method: "GET", path: "/", auth: bearer(esKeyA)})
		var info struct {
			Version struct {
				Number      string `json:"number"`
				BuildFlavor string `json:"build_flavor"`
			} `json:"version"`
			Tagline string `json:"tagline"`
		}
		if err := json.Unmarshal(raw, &info); err != nil || resp.StatusCode != 200 || !strings.HasPrefix(info.Version.Number, "8.") || info.Tagline != "You Know, for Search" {
			t.Fatalf("GET / = %d %s", resp.StatusCode, raw)
		}
		if resp, _, _ := e.es(t, esCall{method: "HEAD", path: "/", auth: bearer(esKeyA)}); resp.StatusCode != 200 {
			t.Errorf("HEAD / = %d", resp.StatusCode)
		}
		// A browser asking for / still gets the explorer, without a key.
		req, _ := http.NewRequestWithContext(t.Context(), "GET", e.url+"/", nil)
		req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
		nr := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, _ = roundTrip(t, nr, req)
		if resp.StatusCode/100 != 3 || !strings.HasPrefix(resp.Header.Get("Location"), "/ui") {
			t.Errorf("a browser's GET / = %d to %q, want a redirect to the explorer", resp.StatusCode, resp.Header.Get("Location"))
		}
		// No key: 401 in Elasticsearch's shape.
		resp, raw, a := e.es(t, esCall{method: "GET", path: "/"})
		if resp.StatusCode != 401 || a.Error == nil || a.Error.Type != "security_exception" || a.Status != 401 {
			t.Errorf("GET / without a key = %d %s", resp.StatusCode, raw)
		}
		for _, p := range []string{"/_license", "/_xpack", "/_nodes/http", "/_cluster/health"} {
			if resp, raw, _ := e.es(t, esCall{method: "GET", path: p, auth: bearer(esKeyA)}); resp.StatusCode != 200 {
				t.Errorf("GET %s = %d %s", p, resp.StatusCode, raw)
			}
		}
	})

	t.Run("credentials", func(t *testing.T) {
		basic := func(user, pass string) string {
			return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
		}
		for _, c := range []struct {
			name, auth string
			want       int
		}{
			{"bearer", bearer(esKeyA), 200},
			{"basic, the key as password", basic("elastic", esKeyA), 200},
			{"basic, no user", basic("", esKeyA), 200},
			{"apikey as sent", "ApiKey " + esKeyA, 200},
			{"APIKey, the Go client's spelling", "APIKey " + esKeyA, 200},
			{"apikey as base64(id:key)", "ApiKey " + base64.StdEncoding.EncodeToString([]byte("some-id:"+esKeyA)), 200},
			{"basic, the key as user", basic(esKeyA, ""), 401},
			{"basic, wrong password", basic("elastic", "nope"), 401},
			{"apikey, wrong", "ApiKey nope", 401},
			{"none", "", 401},
		} {
			resp, raw, _ := e.es(t, esCall{path: "/_bulk", auth: c.auth, contentType: "application/x-ndjson", body: ndjson(`{"index":{}}`, `{"message":"cred"}`)})
			if resp.StatusCode != c.want {
				t.Errorf("%s: %d, want %d: %s", c.name, resp.StatusCode, c.want, raw)
			}
		}
		// The REST routes keep to Bearer.
		req, _ := http.NewRequestWithContext(t.Context(), "GET", e.url+"/projects/"+e.a.ID, nil)
		req.Header.Set("Authorization", basic("x", esKeyA))
		if resp, _ := roundTrip(t, http.DefaultClient, req); resp.StatusCode != 401 {
			t.Errorf("Basic on a REST route = %d, want 401", resp.StatusCode)
		}
	})

	t.Run("items", func(t *testing.T) {
		body := ndjson(
			`{"index":{}}`, `{"@timestamp":"2026-03-04T05:06:07.089Z","message":"one","log":{"level":"WARNING","file":{"path":"/var/log/x"}},"service":{"name":"checkout"},"host":{"name":"h1"},"user":{"id":"u-1"},"trace":{"id":"5B8EFFF798038103D269B633813FC60C"},"span":{"id":"eee19b7ec3c1b174"},"http":{"status":500},"tags":["a","b"]}`,
			`{"create":{"_index":"`+e.a.ID+`"}}`, `{"timestamp":1700000000123,"msg":"two","severity":"err","host.name":"h2"}`,
			`{"index":{}}`, `{"time":"1700000000999","log":"three"}`,
			`{"index":{}}`, `{"level":"info"}`, // no message
			`{"index":{}}`, `{"message":"bad time","@timestamp":"yesterday"}`,
			`{"index":{}}`, "{\"message\":\"bad \xff utf8\"}",
			`{"index":{}}`, `not json`,
			`{"delete":{"_id":"x"}}`,
			`{"update":{"_id":"x"}}`, `{"doc":{"message":"y"}}`,
			`{"index":{"_index":"`+e.b.ID+`"}}`, `{"message":"other project"}`,
			`{"index":{}}`, // no document: the next line is an action
			`{"index":{}}`, `{"message":"last"}`,
		)
		resp, raw, a := e.es(t, esCall{path: "/_bulk", auth: bearer(esKeyA), contentType: "application/vnd.elasticsearch+x-ndjson; compatible-with=8", body: body})
		if resp.StatusCode != 200 || !a.Errors {
			t.Fatalf("bulk = %d %s", resp.StatusCode, raw)
		}
		want := []string{"index:201", "create:201", "index:201", "index:400", "index:400", "index:400", "index:400", "delete:400", "update:400", "index:403", "index:400", "index:201"}
		if got := a.statuses(); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("statuses %v\nwant     %v\n%s", got, want, raw)
		}
		for i, it := range a.Items {
			for _, v := range it {
				if v.Status >= 300 && (v.Error == nil || v.Error.Type == "" || v.Error.Reason == "") {
					t.Errorf("item %d: %d without an error: %+v", i, v.Status, v)
				}
				if v.Status == 201 && (v.ID == nil || v.Result != "created") {
					t.Errorf("item %d: %+v", i, v)
				}
			}
		}
		got := map[string]bool{}
		for _, le := range listAll(t, &env{t: t, url: e.url, client: keyedClient(t, e.url, esAdminKey)}, e.a.ID) {
			got[le.Message] = true
			switch le.Message {
			case "one":
				if le.Time != 1772600767089 || le.Level != "warn" || *le.Subject != "checkout" || *le.UserId != "u-1" || *le.TraceId != "5b8efff798038103d269b633813fc60c" || *le.SpanId != "eee19b7ec3c1b174" {
					t.Errorf("one = %+v", le)
				}
				if want := `{"host.name":"h1","http.status":500,"log.file.path":"/var/log/x","severity_text":"WARNING","tags":["a","b"]}`; string(le.Attributes) != want {
					t.Errorf("one's attributes %s\nwant %s", le.Attributes, want)
				}
			case "two":
				if le.Time != 1700000000123 || le.Level != "error" || *le.Subject != "h2" {
					t.Errorf("two = %+v", le)
				}
			case "three":
				if le.Time != 1700000000999 {
					t.Errorf("three = %+v", le)
				}
			}
		}
		delete(got, "cred") // the credentials' subtest's
		if len(got) != 4 || !got["one"] || !got["two"] || !got["three"] || !got["last"] {
			t.Errorf("stored %v", got)
		}
	})

	t.Run("projects", func(t *testing.T) {
		// The URL's index, an admin key naming projects item by item, an unknown project.
		body := ndjson(`{"index":{}}`, `{"message":"url index"}`, `{"index":{"_index":"`+e.b.ID+`"}}`, `{"message":"to b"}`, `{"index":{"_index":"00000000-0000-7000-8000-000000000000"}}`, `{"message":"nowhere"}`)
		_, raw, a := e.es(t, esCall{path: "/" + e.a.ID + "/_bulk", auth: bearer(esAdminKey), body: body})
		if got := strings.Join(a.statuses(), " "); got != "index:201 index:201 index:404" {
			t.Fatalf("admin bulk: %s\n%s", got, raw)
		}
		// An admin key naming no index: the item says which project is missing.
		_, raw, a = e.es(t, esCall{path: "/_bulk", auth: bearer(esAdminKey), body: ndjson(`{"index":{}}`, `{"message":"no project"}`)})
		if got := strings.Join(a.statuses(), " "); got != "index:400" {
			t.Fatalf("admin, no index: %s\n%s", got, raw)
		}
		// A project key with another project's index in the URL.
		_, raw, a = e.es(t, esCall{path: "/" + e.b.ID + "/_bulk", auth: bearer(esKeyA), body: ndjson(`{"index":{}}`, `{"message":"m"}`)})
		if got := strings.Join(a.statuses(), " "); got != "index:403" {
			t.Fatalf("key a to b: %s\n%s", got, raw)
		}
	})

	t.Run("whole-request refusals", func(t *testing.T) {
		var bomb bytes.Buffer
		zw := gzip.NewWriter(&bomb)
		_, _ = zw.Write(bytes.Repeat([]byte("0"), 64<<20))
		_ = zw.Close()
		for _, c := range []struct {
			name   string
			call   esCall
			status int
			typ    string
		}{
			{"not NDJSON at all", esCall{body: []byte("hello world\n")}, 400, "parse_exception"},
			{"an unknown action", esCall{body: ndjson(`{"upsert":{}}`, `{"message":"m"}`)}, 400, "parse_exception"},
			{"an action of invalid UTF-8", esCall{body: ndjson("{\"index\":{\"_index\":\"\xff\"}}", `{"message":"m"}`)}, 400, "parse_exception"},
			{"empty", esCall{body: nil}, 400, "illegal_argument_exception"},
			{"a 10 MiB line", esCall{body: ndjson(`{"index":{}}`, `{"message":"`+strings.Repeat("x", 10<<20)+`"}`)}, 413, "illegal_argument_exception"},
			{"a gzip bomb", esCall{body: bomb.Bytes()}, 413, "illegal_argument_exception"},
			{"bad gzip", esCall{body: []byte("\x1f\x8b\x08\x00garbage")}, 400, "illegal_argument_exception"},
		} {
			c.call.path, c.call.auth = "/_bulk", bearer(esKeyA)
			if c.name == "a gzip bomb" {
				c.call.method = "POST"
			}
			req := c.call
			resp, raw, a := e.esRaw(t, req, c.name == "a gzip bomb" || c.name == "bad gzip")
			if resp.StatusCode != c.status || a.Error == nil || a.Error.Type != c.typ || a.Status != c.status {
				t.Errorf("%s: %d %.300s", c.name, resp.StatusCode, raw)
			}
		}
		if n := e.logCount(e.a.ID); n != 0 && t.Failed() {
			t.Logf("%d entries in a", n)
		}
	})

	t.Run("actions without documents", func(t *testing.T) {
		before := e.logCount(e.b.ID)
		_, raw, a := e.es(t, esCall{path: "/_bulk", auth: bearer(esKeyB), body: ndjson(`{"index":{}}`, `{"create":{}}`, `{"index":{}}`)})
		if got := strings.Join(a.statuses(), " "); got != "index:400 create:400 index:400" || !a.Errors {
			t.Fatalf("%s\n%s", got, raw)
		}
		if n := e.logCount(e.b.ID); n != before {
			t.Errorf("%d entries stored", n)
		}
	})
}

// esRaw is es with a body sent as it is, gzip-encoded when encoded says so.
func (e *esEnv) esRaw(t *testing.T, c esCall, encoded bool) (*http.Response, []byte, esAnswer) {
	t.Helper()
	if !encoded {
		return e.es(t, c)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+c.path, bytes.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("Authorization", c.auth)
	resp, raw := roundTrip(t, http.DefaultClient, req)
	var a esAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("not JSON: %v: %.300s", err, raw)
	}
	return resp, raw, a
}

// keyedClient is a generated client that sends key as a Bearer token, its answers checked
// against openapi.yaml.
func keyedClient(t *testing.T, url, key string) *rest.ClientWithResponses {
	t.Helper()
	c, err := rest.NewClientWithResponses(url, rest.WithHTTPClient(&http.Client{Transport: apitest.NewTransport(t, nil)}),
		rest.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+key)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
