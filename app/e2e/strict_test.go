package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/domain"
)

// TestNothingSentIsIgnored sends requests that hold something the contract does not name, on
// both stores: an unknown or repeated query parameter on every route, the `level=` typo on the
// filters, unknown, case-variant and duplicated members of project bodies, invalid UTF-8 at
// several pointers, and the log entry members that cannot be kept in attributes. Each is
// answered 400 in the contract's problem format naming the parameter or pointer, and changes
// nothing: every project and entry reads back as before. Then an entry with unknown members
// is stored with them in its attributes.
func TestNothingSentIsIgnored(t *testing.T) {
	forEachStore(t, func(t *testing.T, open storeOpener) {
		testNothingSentIsIgnored(t, open)
		testUnknownMembersAreKeptInAttributes(t, open)
	})
}

// snapshot is everything the store holds, read past the API.
type snapshot struct {
	projects []domain.Project
	entries  map[string][]domain.LogEntry
}

func takeSnapshot(t *testing.T, st server.Store) snapshot {
	t.Helper()
	ctx := domain.WithPrincipal(t.Context(), domain.Principal{Admin: true})
	ps, err := st.ListProjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := snapshot{projects: ps, entries: map[string][]domain.LogEntry{}}
	for _, p := range ps {
		err := st.ListLogs(ctx, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}, Limit: 10_000}, func(pg domain.Page) error {
			for e, err := range pg.Entries {
				if err != nil {
					return err
				}
				s.entries[p.ID] = append(s.entries[p.ID], e)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func testNothingSentIsIgnored(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	p := e.project("target").Id
	other := e.project("other").Id
	seedBody := fmt.Sprintf(`[{"project_id":%[1]q,"message":"one","level":"error"},{"project_id":%[1]q,"message":"two"},{"project_id":%[1]q,"message":"three","level":"warn"},{"project_id":%[2]q,"message":"elsewhere","level":"error"}]`, p, other)
	if resp, body := e.do("POST", "/logs", "application/json", seedBody); resp.StatusCode != 201 {
		t.Fatalf("seed = %d %s", resp.StatusCode, body)
	}
	if n := e.logCount(p); n != 3 {
		t.Fatalf("seeded %d entries, want 3", n)
	}

	entry := func(members string) string {
		return fmt.Sprintf(`[{"project_id":%q,"message":"m"%s}]`, p, members)
	}
	stats := "/logs/stats?project_id=" + p + "&start_time=0&end_time=1000&step=1000"
	manyAttributes := make([]string, domain.DefaultLimits().MaxAttributes)
	for i := range manyAttributes {
		manyAttributes[i] = fmt.Sprintf(`"k%d":%d`, i, i)
	}
	const (
		jsonCT  = "application/json"
		patchCT = "application/merge-patch+json"
	)
	cases := []struct {
		name         string
		method, path string
		contentType  string
		body         string
		names        []string // every pointer ("/x") or parameter ("?x") the answer must name
	}{
		// The typo of the report, first: a DELETE it would widen to the whole project.
		{"DELETE level typo", "DELETE", "/logs?project_id=" + p + "&level=error", "", "", []string{"?level"}},
		{"GET level typo", "GET", "/logs?project_id=" + p + "&level=error", "", "", []string{"?level"}},
		{"stats level typo", "GET", stats + "&level=error", "", "", []string{"?level"}},
		{"tail level typo", "GET", "/logs/tail?project_id=" + p + "&level=error", "", "", []string{"?level"}},
		{"DELETE several unknown", "DELETE", "/logs?project_id=" + p + "&level=error&userid=u&Subject=s", "", "", []string{"?level", "?userid", "?Subject"}},
		{"DELETE a name in another case", "DELETE", "/logs?Project_Id=" + p, "", "", []string{"?Project_Id"}},
		{"DELETE a value net/url drops", "DELETE", "/logs?project_id=" + p + "&user_id=%zz", "", "", []string{"?user_id"}},
		{"DELETE a semicolon", "DELETE", "/logs?project_id=" + p + ";log_level=error", "", "", []string{"?project_id"}},
		{"DELETE a single-valued filter twice", "DELETE", "/logs?project_id=" + p + "&subject=a&subject=b", "", "", []string{"?subject"}},
		{"DELETE project_id twice", "DELETE", "/logs?project_id=" + p + "&project_id=" + other, "", "", []string{"?project_id"}},
		{"GET limit twice", "GET", "/logs?project_id=" + p + "&limit=1&limit=2", "", "", []string{"?limit"}},
		{"tail project_id twice", "GET", "/logs/tail?project_id=" + p + "&project_id=" + other, "", "", []string{"?project_id"}},

		// Every other route with a parameter it does not take.
		{"list projects", "GET", "/projects?name=x", "", "", []string{"?name"}},
		{"create project", "POST", "/projects?retention_days=1", jsonCT, `{"name":"n"}`, []string{"?retention_days"}},
		{"get project", "GET", "/projects/" + p + "?x=1", "", "", []string{"?x"}},
		{"replace project", "PUT", "/projects/" + p + "?x=1", jsonCT, `{"name":"n"}`, []string{"?x"}},
		{"patch project", "PATCH", "/projects/" + p + "?x=1", patchCT, `{"name":"n"}`, []string{"?x"}},
		{"delete project", "DELETE", "/projects/" + p + "?force=true", "", "", []string{"?force"}},
		{"create logs", "POST", "/logs?project_id=" + p, jsonCT, entry(""), []string{"?project_id"}},

		// Project bodies: only the members the schema names, spelt exactly, once.
		{"create with retention", "POST", "/projects", jsonCT, `{"name":"x","retention":3}`, []string{"/retention"}},
		{"create with Name", "POST", "/projects", jsonCT, `{"name":"x","Name":"y"}`, []string{"/Name"}},
		{"create with name twice", "POST", "/projects", jsonCT, `{"name":"x","name":"y"}`, []string{"/name"}},
		{"create with a server-owned id", "POST", "/projects", jsonCT, `{"name":"x","id":"mine"}`, []string{"/id"}},
		{"replace with retention", "PUT", "/projects/" + p, jsonCT, `{"name":"x","retention":3}`, []string{"/retention"}},
		{"replace with Retention_Days", "PUT", "/projects/" + p, jsonCT, `{"name":"x","Retention_Days":3}`, []string{"/Retention_Days"}},
		{"patch with retention", "PATCH", "/projects/" + p, patchCT, `{"retention":3}`, []string{"/retention"}},
		{"patch with NAME", "PATCH", "/projects/" + p, patchCT, `{"NAME":"y"}`, []string{"/NAME"}},
		{"patch with retention_days twice", "PATCH", "/projects/" + p, patchCT, `{"retention_days":3,"retention_days":null}`, []string{"/retention_days"}},
		{"patch with updated_at", "PATCH", "/projects/" + p, patchCT, `{"updated_at":"2000-01-01T00:00:00Z"}`, []string{"/updated_at"}},

		// Invalid UTF-8, which encoding/json would store as U+FFFD.
		{"create project name invalid UTF-8", "POST", "/projects", jsonCT, "{\"name\":\"a\xffb\"}", []string{"/name"}},
		{"replace project name lone surrogate", "PUT", "/projects/" + p, jsonCT, `{"name":"a\ud800b"}`, []string{"/name"}},
		{"patch project name invalid UTF-8", "PATCH", "/projects/" + p, patchCT, "{\"name\":\"\xc3\x28\"}", []string{"/name"}},
		{"entry message invalid UTF-8", "POST", "/logs", jsonCT, entry(",\"level\":\"error\",\"subject\":\"s\xfe\""), []string{"/0/subject"}},
		{"entry message lone surrogate", "POST", "/logs", jsonCT, fmt.Sprintf(`[{"project_id":%q,"message":"\udc00"}]`, p), []string{"/0/message"}},
		{"second entry invalid UTF-8", "POST", "/logs", jsonCT, fmt.Sprintf("[{\"project_id\":%[1]q,\"message\":\"m\"},{\"project_id\":%[1]q,\"message\":\"\xed\xa0\x80\"}]", p), []string{"/1/message"}},
		{"attribute value invalid UTF-8", "POST", "/logs", jsonCT, entry(",\"attributes\":{\"k\":[1,{\"x\":\"\xff\"}]}"), []string{"/0/attributes/k/1/x"}},
		{"unknown member invalid UTF-8", "POST", "/logs", jsonCT, entry(",\"region\":\"\xff\""), []string{"/0/region"}},
		{"member name invalid UTF-8", "POST", "/logs", jsonCT, entry(",\"re\xffgion\":\"eu\""), []string{"/0"}},

		// Entry members that cannot be kept.
		{"entry Level", "POST", "/logs", jsonCT, entry(`,"Level":"error"`), []string{"/0/Level"}},
		{"entry MESSAGE", "POST", "/logs", jsonCT, entry(`,"MESSAGE":"other"`), []string{"/0/MESSAGE"}},
		{"entry level twice", "POST", "/logs", jsonCT, entry(`,"level":"error","level":"info"`), []string{"/0/level"}},
		{"entry unknown member twice", "POST", "/logs", jsonCT, entry(`,"region":"eu","region":"us"`), []string{"/0/region"}},
		{"entry member clashes with an attribute", "POST", "/logs", jsonCT, entry(`,"region":"eu","attributes":{"region":"us"}`), []string{"/0/region", "/0/attributes/region"}},
		{"merged attributes over the limit", "POST", "/logs", jsonCT, entry(`,"attributes":{` + strings.Join(manyAttributes, ",") + `},"one_more":1`), []string{"/0/attributes"}},
		{"a good entry beside a case variant", "POST", "/logs", jsonCT, fmt.Sprintf(`[{"project_id":%[1]q,"message":"m"},{"project_id":%[1]q,"message":"m","Trace_ID":"x"}]`, p), []string{"/1/Trace_ID"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := takeSnapshot(t, e.store)
			resp, body := e.do(c.method, c.path, c.contentType, c.body)
			if resp.StatusCode != 400 {
				t.Fatalf("status %d, want 400: %.400s", resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type %q", ct)
			}
			got := fieldsOf(problemOf(t, body))
			for _, want := range c.names {
				if !slices.Contains(got, want) {
					t.Errorf("errors name %q, not %s: %s", got, want, body)
				}
			}
			if after := takeSnapshot(t, e.store); !reflect.DeepEqual(after, before) {
				t.Errorf("the store changed:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
	if n := e.logCount(p); n != 3 {
		t.Fatalf("the project holds %d entries after the refusals, want 3", n)
	}

	// postOTLPJSON sends an OTLP/JSON export for p to path and returns the answer.
	postOTLPJSON := func(t *testing.T, path, export string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", e.url+path, strings.NewReader(export))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Project-Id", p)
		return roundTrip(t, http.DefaultClient, req)
	}
	// The same refusal on the OTLP route, in its own format (google.rpc.Status).
	t.Run("OTLP unknown parameter", func(t *testing.T) {
		before := takeSnapshot(t, e.store)
		resp, body := postOTLPJSON(t, "/v1/logs?project_id="+p, `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"m"}}]}]}]}`)
		if resp.StatusCode != 400 || !strings.Contains(string(body), `"code":3`) || !strings.Contains(string(body), "project_id") {
			t.Errorf("POST /v1/logs?project_id= = %d %s, want 400 INVALID_ARGUMENT naming project_id", resp.StatusCode, body)
		}
		if after := takeSnapshot(t, e.store); !reflect.DeepEqual(after, before) {
			t.Errorf("the store changed")
		}
	})
	// OTLP/JSON with invalid UTF-8: protojson refuses it rather than altering it.
	t.Run("OTLP JSON invalid UTF-8", func(t *testing.T) {
		before := takeSnapshot(t, e.store)
		resp, body := postOTLPJSON(t, "/v1/logs", "{\"resourceLogs\":[{\"scopeLogs\":[{\"logRecords\":[{\"body\":{\"stringValue\":\"a\xffb\"}}]}]}]}")
		if resp.StatusCode != 400 {
			t.Errorf("OTLP/JSON with invalid UTF-8 = %d %s, want 400", resp.StatusCode, body)
		}
		if after := takeSnapshot(t, e.store); !reflect.DeepEqual(after, before) {
			t.Errorf("the store changed")
		}
	})
	// Routes outside the contract (health, metrics, docs) are left alone.
	for _, path := range []string{"/healthz?verbose=1", "/readyz?x=1", "/openapi.yaml?v=2"} {
		resp, err := http.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d, want 200", path, resp.StatusCode)
		}
	}
	// The correct spelling of the report's request deletes only what it names.
	resp, body := e.do("DELETE", "/logs?project_id="+p+"&log_level=error", "", "")
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"deleted":1`)) {
		t.Errorf("DELETE log_level=error = %d %s, want 1 deleted", resp.StatusCode, body)
	}
	if n := e.logCount(p); n != 2 {
		t.Errorf("%d entries left, want 2", n)
	}
}

// testUnknownMembersAreKeptInAttributes: what a shipper sends beside the contract's fields is
// stored in attributes under its own name, read back by GET /logs, and counts toward the
// attribute limits; an entry of the report (`levle`) keeps its misspelt member.
func testUnknownMembersAreKeptInAttributes(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	p := e.project("shipper").Id
	body := fmt.Sprintf(`[{"project_id":%[1]q,"message":"typo","levle":"error"},`+
		`{"project_id":%[1]q,"message":"shipped","host":"web-1","pid":4242,"kubernetes":{"pod":"api-7","labels":{"app":"api"}},"big":12345678901234567890,"attributes":{"http.method":"GET"}},`+
		`{"project_id":%[1]q,"message":"plain","attributes":{"a":1}}]`, p)
	if resp, b := e.do("POST", "/logs", "application/json", body); resp.StatusCode != 201 {
		t.Fatalf("POST /logs = %d %s", resp.StatusCode, b)
	}
	resp, b := e.do("GET", "/logs?project_id="+p, "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /logs = %d %s", resp.StatusCode, b)
	}
	var page []struct {
		Message    string          `json:"message"`
		Level      string          `json:"level"`
		Attributes json.RawMessage `json:"attributes"`
	}
	if err := json.Unmarshal(b, &page); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"typo":    `{"levle":"error"}`,
		"shipped": `{"big":12345678901234567890,"host":"web-1","http.method":"GET","kubernetes":{"labels":{"app":"api"},"pod":"api-7"},"pid":4242}`,
		"plain":   `{"a":1}`,
	}
	if len(page) != len(want) {
		t.Fatalf("read back %d entries, want %d: %s", len(page), len(want), b)
	}
	for _, en := range page {
		if got := string(en.Attributes); got != want[en.Message] {
			t.Errorf("%q: attributes %s, want %s", en.Message, got, want[en.Message])
		}
		if en.Message == "typo" && en.Level != "info" {
			t.Errorf("the misspelt level set level %q", en.Level)
		}
	}
	// The generated client reads them back too.
	list, err := e.client.ListLogsWithResponse(t.Context(), &rest.ListLogsParams{ProjectId: p})
	if err != nil || list.JSON200 == nil || len(*list.JSON200) != 3 {
		t.Fatalf("generated client: %v %d", err, list.StatusCode())
	}
}

// TestEveryOperationRefusesAnUnknownParameter walks openapi.yaml: every operation it declares,
// generated or hand-written, answers a parameter it does not declare with 400 naming it, before
// it reads any body or store (a route added to the contract is covered without more code).
func TestEveryOperationRefusesAnUnknownParameter(t *testing.T) {
	e := newEnv(t, openSQLiteStore, nil)
	p := e.project("p").Id
	doc, err := openapi3.NewLoader().LoadFromData(rest.SpecYAML())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			n++
			t.Run(method+" "+path, func(t *testing.T) {
				req, _ := http.NewRequestWithContext(t.Context(), method, e.url+strings.ReplaceAll(path, "{id}", p)+"?zz_unknown=1", strings.NewReader("{}"))
				req.Header.Set("Content-Type", "application/json")
				resp, body := roundTrip(t, http.DefaultClient, req)
				// A HEAD answer has no body to name it in: its status says it.
				if resp.StatusCode != 400 || (method != http.MethodHead && !strings.Contains(string(body), "zz_unknown")) {
					t.Errorf("%s (%s) = %d %.300s, want 400 naming zz_unknown", op.OperationID, path, resp.StatusCode, body)
				}
			})
		}
	}
	if n < 10 {
		t.Fatalf("walked %d operations of openapi.yaml", n)
	}
	if got := e.logCount(p); got != 0 {
		t.Errorf("stored %d entries", got)
	}
}
