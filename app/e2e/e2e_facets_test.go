package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/domain"
)

// TestFacetsAndFields covers GET /logs/facets and GET /logs/fields on every store: values as
// JSON (numbers with their text, strings, objects, null), other and missing, ties, limits, the
// entry's fields and attributes of the same name, retention, unknown projects and bad parameters.
func TestFacetsAndFields(t *testing.T) {
	forEachStore(t, testFacetsAndFields)
}

// facetAnswer is a facets answer with each value kept as its JSON text.
type facetAnswer struct {
	Facets []struct {
		Field  string `json:"field"`
		Values []struct {
			Value json.RawMessage `json:"value"`
			Count int64           `json:"count"`
		} `json:"values"`
		Other   int64 `json:"other"`
		Missing int64 `json:"missing"`
	} `json:"facets"`
}

// String renders the answer as "field: value=count ... other=N missing=N" lines.
func (a facetAnswer) String() string {
	var b strings.Builder
	for _, f := range a.Facets {
		b.WriteString(f.Field + ":")
		for _, v := range f.Values {
			fmt.Fprintf(&b, " %s=%d", v.Value, v.Count)
		}
		fmt.Fprintf(&b, " other=%d missing=%d\n", f.Other, f.Missing)
	}
	return b.String()
}

func testFacetsAndFields(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	p := e.project("facets")
	other := e.project("other")
	batch := fmt.Sprintf(`[
		{"project_id":%[1]q,"time":1000,"level":"error","subject":"checkout","message":"a","attributes":{"status":500,"route":"/a","n":null}},
		{"project_id":%[1]q,"time":1001,"level":"error","message":"b","attributes":{"status":500.0,"route":"/a"}},
		{"project_id":%[1]q,"time":1002,"level":"info","message":"c","attributes":{"status":"500","route":"/b","obj":{"b":1,"a":[1,2]}}},
		{"project_id":%[1]q,"time":1003,"level":"info","message":"d","attributes":{"status":200,"route":"/b"}},
		{"project_id":%[1]q,"time":1004,"level":"info","subject":"checkout","message":"e"},
		{"project_id":%[1]q,"time":1005,"level":"warn","message":"f","attributes":{"route":"/c","level":"x","big":12345678901234567890}},
		{"project_id":%[1]q,"time":5000,"level":"fatal","message":"late","attributes":{"late":true}},
		{"project_id":%[2]q,"time":1000,"level":"error","message":"other","attributes":{"route":"/a","only_other":1}}
	]`, p.Id, other.Id)
	resp, body := e.do("POST", "/logs", "application/json", batch)
	wantAnswer(t, resp, body, 201, nil)

	facets := func(query string) facetAnswer {
		t.Helper()
		resp, body := e.do("GET", "/logs/facets?project_id="+p.Id+"&"+query, "", "")
		wantAnswer(t, resp, body, 200, nil)
		var a facetAnswer
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatalf("facets answer: %v: %s", err, body)
		}
		return a
	}
	got := facets("start_time=0&end_time=4999&limit=2&field=level&field=status&field=route&field=subject&field=n&field=obj&field=attributes.level&field=big&field=user_id&field=level")
	want := `level: "info"=3 "error"=2 other=1 missing=0
status: "500"=1 200=1 other=2 missing=2
route: "/a"=2 "/b"=2 other=1 missing=1
subject: "checkout"=2 other=0 missing=4
n: null=1 other=0 missing=5
obj: {"a":[1,2],"b":1}=1 other=0 missing=5
attributes.level: "x"=1 other=0 missing=5
big: 12345678901234567890=1 other=0 missing=5
user_id: other=0 missing=6
`
	if got.String() != want {
		t.Errorf("facets:\n%s\nwant:\n%s", got, want)
	}
	// Every value of status, in the bytewise order of their JSON text: a string's quote first,
	// then 200, then 500 before 500.0 (one value each: a number keeps its text).
	if got, want := facets("start_time=0&end_time=4999&field=status").String(), "status: \"500\"=1 200=1 500=1 500.0=1 other=0 missing=2\n"; got != want {
		t.Errorf("facets of status = %s, want %s", got, want)
	}
	// The range and the other filters narrow the entries counted.
	if got, want := facets("start_time=1002&end_time=1003&field=route&log_level=info").String(), "route: \"/b\"=2 other=0 missing=0\n"; got != want {
		t.Errorf("facets in a narrower range = %s, want %s", got, want)
	}
	if got, want := facets("start_time=0&end_time=99999&field=level&limit=100&query=").String(), "level: \"info\"=3 \"error\"=2 \"fatal\"=1 \"warn\"=1 other=0 missing=0\n"; got != want {
		t.Errorf("facets with an empty query = %s, want %s", got, want)
	}

	fields := func(query string) string {
		t.Helper()
		resp, body := e.do("GET", "/logs/fields?project_id="+p.Id+"&"+query, "", "")
		wantAnswer(t, resp, body, 200, nil)
		var a []struct {
			Field string `json:"field"`
			Count int64  `json:"count"`
		}
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatalf("fields answer: %v: %s", err, body)
		}
		var parts []string
		for _, f := range a {
			parts = append(parts, fmt.Sprintf("%s=%d", f.Field, f.Count))
		}
		return strings.Join(parts, " ")
	}
	if got, want := fields("start_time=0&end_time=4999"), "route=5 status=4 big=1 level=1 n=1 obj=1"; got != want {
		t.Errorf("fields = %s, want %s", got, want)
	}
	if got, want := fields("start_time=5000&end_time=5000"), "late=1"; got != want {
		t.Errorf("fields at 5000 = %s, want %s", got, want)
	}
	if got, want := fields("start_time=6000&end_time=7000"), ""; got != want {
		t.Errorf("fields of no entries = %s, want %s", got, want)
	}

	// Keys that a JSON path would have to quote are found as they are.
	keys := e.project("keys")
	resp, body = e.do("POST", "/logs", "application/json", fmt.Sprintf(`[
		{"project_id":%[1]q,"time":1,"message":"k","attributes":{"a.b":1,"q\"x":"v","back\\slash":true,"[0]":2,"$":3,"sp ace":4,"é":5,"x'y":6,"*":7}},
		{"project_id":%[1]q,"time":2,"message":"k","attributes":{"a":{"b":9}}}]`, keys.Id))
	wantAnswer(t, resp, body, 201, nil)
	resp, body = e.do("GET", "/logs/facets?project_id="+keys.Id+"&start_time=0&end_time=9"+
		"&field=a.b&field=q%22x&field=back%5Cslash&field=%5B0%5D&field=%24&field=sp+ace&field=%C3%A9&field=x%27y&field=*&field=a", "", "")
	wantAnswer(t, resp, body, 200, nil)
	var ka facetAnswer
	if err := json.Unmarshal(body, &ka); err != nil {
		t.Fatal(err)
	}
	if got, want := ka.String(), `a.b: 1=1 other=0 missing=1
q"x: "v"=1 other=0 missing=1
back\slash: true=1 other=0 missing=1
[0]: 2=1 other=0 missing=1
$: 3=1 other=0 missing=1
sp ace: 4=1 other=0 missing=1
é: 5=1 other=0 missing=1
x'y: 6=1 other=0 missing=1
*: 7=1 other=0 missing=1
a: {"b":9}=1 other=0 missing=1
`; got != want {
		t.Errorf("facets of keys with syntax characters:\n%s\nwant:\n%s", got, want)
	}
	resp, body = e.do("GET", "/logs/fields?project_id="+keys.Id+"&start_time=0&end_time=9", "", "")
	wantAnswer(t, resp, body, 200, nil)
	if got, want := string(body), `[{"count":1,"field":"$"},{"count":1,"field":"*"},{"count":1,"field":"[0]"},{"count":1,"field":"a"},{"count":1,"field":"a.b"},{"count":1,"field":"back\\slash"},{"count":1,"field":"q\"x"},{"count":1,"field":"sp ace"},{"count":1,"field":"x'y"},{"count":1,"field":"é"}]`; strings.TrimSpace(got) != want {
		t.Errorf("fields of keys with syntax characters = %s, want %s", got, want)
	}

	// Expired entries are left out: a project keeps one day, an entry two days old is gone.
	now := time.Now().UnixMilli()
	short := e.project("short")
	resp, body = e.do("POST", "/logs", "application/json", fmt.Sprintf(`[
		{"project_id":%[1]q,"time":%[2]d,"level":"error","message":"old","attributes":{"old":1}},
		{"project_id":%[1]q,"time":%[3]d,"level":"info","message":"new","attributes":{"new":1}}]`, short.Id, now-2*dayMs, now-1000))
	wantAnswer(t, resp, body, 201, nil)
	resp, body = e.do("PATCH", "/projects/"+short.Id, "application/merge-patch+json", `{"retention_days":1}`)
	wantAnswer(t, resp, body, 200, nil)
	window := fmt.Sprintf("start_time=%d&end_time=%d", now-3*dayMs, now+dayMs)
	resp, body = e.do("GET", "/logs/facets?project_id="+short.Id+"&"+window+"&field=level&field=old", "", "")
	wantAnswer(t, resp, body, 200, nil)
	var a facetAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatal(err)
	}
	if got, want := a.String(), "level: \"info\"=1 other=0 missing=0\nold: other=0 missing=1\n"; got != want {
		t.Errorf("facets with an expired entry = %s, want %s", got, want)
	}
	resp, body = e.do("GET", "/logs/fields?project_id="+short.Id+"&"+window, "", "")
	wantAnswer(t, resp, body, 200, nil)
	if got, want := strings.TrimSpace(string(body)), `[{"count":1,"field":"new"}]`; got != want {
		t.Errorf("fields with an expired entry = %s, want %s", got, want)
	}

	// Unknown projects are 404, malformed ids included.
	for _, id := range []string{"0194f0e0-0000-7000-8000-000000000000", "nope"} {
		resp, body := e.do("GET", "/logs/facets?project_id="+id+"&start_time=0&end_time=1&field=level", "", "")
		wantAnswer(t, resp, body, 404, nil)
		resp, body = e.do("GET", "/logs/fields?project_id="+id+"&start_time=0&end_time=1", "", "")
		wantAnswer(t, resp, body, 404, nil)
	}

	// Bad parameters are 400 problems naming them.
	manyFields := strings.Repeat("&field=f", domain.MaxFacetFields+1)
	for _, c := range []struct {
		path  string
		param string
	}{
		{"/logs/facets?project_id=" + p.Id + "&start_time=0&end_time=1", "field"},
		{"/logs/facets?project_id=" + p.Id + "&start_time=0&end_time=1" + manyFields, "field"},
		{"/logs/facets?project_id=" + p.Id + "&start_time=0&end_time=1&field=attributes.", "field"},
		{"/logs/facets?project_id=" + p.Id + "&start_time=0&end_time=1&field=" + strings.Repeat("k", 257), "field"},
		{"/logs/facets?project_id=" + p.Id + "&start_time=0&end_time=1&field=a%00b", "field"},
		{"/logs/facets?project_id=" + p.Id + "&start_time=0&end_time=1&field=level&field=%FF", "field"},
		{"/logs/facets?project_id=" + p.Id + "&start_time=0&end_time=1&field=level&limit=0", "limit"},
		{"/logs/facets?project_id=" + p.Id + "&start_time=0&end_time=1&field=level&limit=x", "limit"},
		{"/logs/facets?project_id=" + p.Id + "&start_time=0&end_time=1&field=level&limit=1&limit=2", "limit"},
		{"/logs/facets?project_id=" + p.Id + "&start_time=0&end_time=1&field=level&limit=101", "limit"},
		{"/logs/facets?project_id=" + p.Id + "&end_time=1&field=level", "start_time"},
		{"/logs/facets?project_id=" + p.Id + "&start_time=0&field=level", "end_time"},
		{"/logs/facets?project_id=" + p.Id + "&start_time=2&end_time=1&field=level", "start_time"},
		{"/logs/facets?project_id=" + p.Id + "&start_time=0&end_time=1&field=level&fields=x", "fields"},
		{"/logs/fields?project_id=" + p.Id + "&start_time=0", "end_time"},
		{"/logs/fields?project_id=" + p.Id + "&start_time=2&end_time=1", "start_time"},
		{"/logs/fields?project_id=" + p.Id + "&start_time=0&end_time=1&field=level", "field"},
		{"/logs/fields?project_id=" + p.Id + "&start_time=0&end_time=1&trace_id=xyz", "trace_id"},
	} {
		resp, body := e.do("GET", c.path, "", "")
		wantAnswer(t, resp, body, 400, []string{"?" + c.param})
	}
}

// TestQueryParameterSyntaxError checks that every route taking query answers a query the
// parser refuses with a 400 problem naming query, whose detail is the parser's message with
// its position, and that an empty query is no query at all.
func TestQueryParameterSyntaxError(t *testing.T) {
	forEachStore(t, func(t *testing.T, open storeOpener) {
		e := newEnv(t, open, nil)
		p := e.project("q")
		const bad = `level:error AND (a))`
		_, perr := domain.ParseQuery(bad, domain.DefaultLimits().Query)
		var syntax *domain.QuerySyntaxError
		if !errors.As(perr, &syntax) {
			t.Fatalf("ParseQuery(%q) = %v, want a syntax error", bad, perr)
		}
		base := "project_id=" + p.Id + "&query=" + url.QueryEscape(bad)
		for _, c := range []struct{ method, path string }{
			{"GET", "/logs?" + base},
			{"DELETE", "/logs?" + base},
			{"GET", "/logs/stats?" + base + "&start_time=0&end_time=1&step=1000"},
			{"GET", "/logs/facets?" + base + "&start_time=0&end_time=1&field=level"},
			{"GET", "/logs/fields?" + base + "&start_time=0&end_time=1"},
			{"GET", "/logs/tail?" + base},
		} {
			resp, body := e.do(c.method, c.path, "", "")
			wantAnswer(t, resp, body, 400, []string{"?query"})
			prob := problemOf(t, body)
			if prob.Errors == nil || !slices.ContainsFunc(*prob.Errors, func(f rest.ProblemField) bool {
				return f.Detail == syntax.Msg
			}) {
				t.Errorf("%s %s: problem %s, want the parser's message %q", c.method, c.path, body, syntax.Msg)
			}
		}
		// An empty query is no query: the routes answer as without it.
		for _, c := range []struct{ method, path string }{
			{"GET", "/logs?project_id=" + p.Id + "&query="},
			{"DELETE", "/logs?project_id=" + p.Id + "&query="},
			{"GET", "/logs/stats?project_id=" + p.Id + "&query=&start_time=0&end_time=1&step=1000"},
			{"GET", "/logs/fields?project_id=" + p.Id + "&query=&start_time=0&end_time=1"},
		} {
			resp, body := e.do(c.method, c.path, "", "")
			wantAnswer(t, resp, body, 200, nil)
		}
	})
}
