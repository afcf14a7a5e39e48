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

// testSearchAndStats: q (folding, literal metacharacters), subject and repeated log_level on
// GET and DELETE /logs through the generated client, and GET /logs/stats agreeing with what
// paging yields and previewing a delete.
func testSearchAndStats(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	const t0 = int64(1_795_392_000_000) // a whole hour
	batch := rest.CreateLogsJSONRequestBody{
		{ProjectId: p.Id, Message: "CAFÉ closed", Level: ptr("error"), Subject: ptr("checkout"), Time: ptr(t0 + 1)},
		{ProjectId: p.Id, Message: "café open", Level: ptr("info"), Subject: ptr("checkout"), Time: ptr(t0 + 60_000)},
		{ProjectId: p.Id, Message: "100% done", Level: ptr("fatal"), Time: ptr(t0 + 3_600_000)},
		{ProjectId: p.Id, Message: "snake_case", Level: ptr("warn"), Subject: ptr("auth"), Time: ptr(t0 + 3_600_001)},
		{ProjectId: p.Id, Message: `C:\temp`, Level: ptr("error"), Subject: ptr("auth"), Time: ptr(t0 + 7_199_999)},
	}
	if cr, err := e.client.CreateLogsWithResponse(t.Context(), nil, batch); err != nil || cr.JSON201 == nil {
		t.Fatalf("create = %v %d %s", err, cr.StatusCode(), cr.Body)
	}
	list := func(params rest.ListLogsParams) []string {
		t.Helper()
		params.ProjectId = p.Id
		return e.listMessages(t, params)
	}
	for _, c := range []struct {
		name   string
		params rest.ListLogsParams
		want   []string
	}{
		{"q folds case", rest.ListLogsParams{Q: ptr("café")}, []string{"CAFÉ closed", "café open"}},
		{"q percent is literal", rest.ListLogsParams{Q: ptr("%")}, []string{"100% done"}},
		{"q underscore is literal", rest.ListLogsParams{Q: ptr("e_c")}, []string{"snake_case"}},
		{"q backslash is literal", rest.ListLogsParams{Q: ptr(`\t`)}, []string{`C:\temp`}},
		{"subject", rest.ListLogsParams{Subject: ptr("auth")}, []string{"snake_case", `C:\temp`}},
		{"repeated log_level", rest.ListLogsParams{LogLevel: ptr([]string{"error", "fatal"})}, []string{"CAFÉ closed", "100% done", `C:\temp`}},
		{"all combined", rest.ListLogsParams{LogLevel: ptr([]string{"error", "info"}), Subject: ptr("checkout"), Q: ptr("OPEN")}, []string{"café open"}},
	} {
		if got := list(c.params); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}

	stats := func(params rest.LogStatsParams) rest.LogStats {
		t.Helper()
		params.ProjectId = p.Id
		r, err := e.client.LogStatsWithResponse(t.Context(), &params)
		if err != nil || r.JSON200 == nil {
			t.Fatalf("stats %+v = %v %d %s", params, err, r.StatusCode(), r.Body)
		}
		return *r.JSON200
	}
	// Two hours by hour, by level: dense, the rollup's minutes plus a cut last minute.
	st := stats(rest.LogStatsParams{StartTime: t0, EndTime: t0 + 7_199_999, Step: 3_600_000})
	if !slices.Equal(st.Buckets, []int64{t0, t0 + 3_600_000}) || st.Total != 5 || len(st.Series) != 4 {
		t.Fatalf("stats by level = %+v", st)
	}
	want := map[string][]int64{"error": {1, 1}, "fatal": {0, 1}, "info": {1, 0}, "warn": {0, 1}}
	for _, s := range st.Series {
		if v := s.Value.MustGet(); !slices.Equal(s.Counts, want[v]) {
			t.Errorf("series %s = %v, want %v", v, s.Counts, want[v])
		}
	}
	// by=subject: entries without one in the null series, first.
	by := rest.LogStatsParamsBySubject
	st = stats(rest.LogStatsParams{StartTime: t0, EndTime: t0 + 7_199_999, Step: 3_600_000, By: &by})
	if len(st.Series) != 3 || !st.Series[0].Value.IsNull() || !slices.Equal(st.Series[0].Counts, []int64{0, 1}) {
		t.Errorf("stats by subject = %+v", st)
	}
	// The delete preview: stats with the delete's filters count what it removes.
	none := rest.LogStatsParamsByNone
	preview := stats(rest.LogStatsParams{StartTime: t0, EndTime: t0 + 7_199_999, Step: 3_600_000, By: &none, Q: ptr("É")})
	dr, err := e.client.DeleteLogsWithResponse(t.Context(), &rest.DeleteLogsParams{ProjectId: p.Id, Q: ptr("É")})
	if err != nil || dr.JSON200 == nil || dr.JSON200.Deleted != preview.Total || preview.Total != 2 {
		t.Fatalf("delete q=É = %v %d %s; preview said %d", err, dr.StatusCode(), dr.Body, preview.Total)
	}
	if st := stats(rest.LogStatsParams{StartTime: t0, EndTime: t0 + 7_199_999, Step: 3_600_000}); st.Total != 3 {
		t.Errorf("after the delete stats count %d, want 3", st.Total)
	}

	// Bad stats parameters: 400 naming each, never 5xx.
	base := "/logs/stats?project_id=" + p.Id
	for _, c := range []struct{ query, field string }{
		{base + "&end_time=1&step=1000", "?start_time"},
		{base + "&start_time=0&end_time=1&step=999", "?step"},
		{base + "&start_time=0&end_time=1000000&step=1000", "?step"},
		{base + "&start_time=-9223372036854775808&end_time=9223372036854775807&step=9223372036854775807", "?step"},
		{base + "&start_time=0&end_time=1&step=1000&by=message", "?by"},
		{base + "&start_time=0&end_time=1&step=1000&q=", "?q"},
		{base + "&start_time=0&end_time=1&step=1000&q=" + url.QueryEscape(strings.Repeat("x", 257)), "?q"},
		{base + "&start_time=0&end_time=1&step=1000" + strings.Repeat("&log_level=x", 17), "?log_level"},
	} {
		resp, body := e.do("GET", c.query, "", "")
		if resp.StatusCode != 400 || !slices.Contains(fieldsOf(problemOf(t, body)), c.field) {
			t.Errorf("GET %s = %d %s, want 400 naming %s", c.query, resp.StatusCode, body, c.field)
		}
	}
}

// testStatsSeries: GET /logs/stats by an entry's field or an attribute, through the real server
// and the contract check: at most `series` series, the largest totals first in the choice, ties
// by value with the entries without a value first; the rest in one exact `other` series;
// attribute values as JSON (500 and "500" two series, JSON null apart from a missing key);
// every series dense; every answer adding up to what paging yields; `series` out of bounds and
// `by=message` refused with 400 naming them.
func testStatsSeries(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	p := e.project("p")
	const t0 = int64(1_795_392_000_000) // a whole hour
	const code = "http.response.status_code"
	// One entry per (bucket, attribute value), in a range of three one-minute buckets.
	specs := []struct {
		bucket int64
		code   string // the attribute's JSON text; "" for none
	}{
		{0, "500"}, {0, "500"}, {1, "500"}, {2, "500"},
		{1, `"500"`}, {1, `"500"`}, {2, `"500"`}, {2, `"500"`},
		{0, "200"}, {0, "200"}, {0, "200"}, {0, "200"}, {0, "200"},
		{2, "404"},
		{0, "null"},
		{0, ""}, {1, ""}, {1, ""}, {2, ""},
	}
	var body []string
	for i, s := range specs {
		attrs := `{"level":"shadow"}`
		if s.code != "" {
			attrs = fmt.Sprintf(`{%q:%s,"level":"shadow"}`, code, s.code)
		}
		user := ""
		switch {
		case i%3 == 0:
			user = `,"user_id":"u1"`
		case i%5 == 0:
			user = `,"user_id":"u2"`
		}
		body = append(body, fmt.Sprintf(`{"project_id":%q,"message":"m%d","time":%d,"level":"info","subject":"s%02d","attributes":%s%s}`,
			p.Id, i, t0+s.bucket*60_000+int64(i), i%12, attrs, user))
	}
	// Outside the range: counted by no answer below.
	body = append(body, fmt.Sprintf(`{"project_id":%q,"message":"late","time":%d,"attributes":{%q:500}}`, p.Id, t0+180_000, code))
	if resp, b := e.do("POST", "/logs", "application/json", "["+strings.Join(body, ",")+"]"); resp.StatusCode != 201 {
		t.Fatalf("create = %d %s", resp.StatusCode, b)
	}
	paged := 0
	for _, x := range listAll(t, e, p.Id) {
		if x.Time >= t0 && x.Time <= t0+179_999 {
			paged++
		}
	}
	if paged != len(specs) {
		t.Fatalf("paging yields %d entries, want %d", paged, len(specs))
	}

	type series struct {
		Value          *string         `json:"value"`
		AttributeValue json.RawMessage `json:"attribute_value"` // JSON null as null, absent as nil
		Other          *bool           `json:"other"`
		Counts         []int64         `json:"counts"`
		Total          int64           `json:"total"`
	}
	type answer struct {
		Buckets []int64  `json:"buckets"`
		Series  []series `json:"series"`
		Total   int64    `json:"total"`
	}
	stats := func(params string) answer {
		t.Helper()
		path := "/logs/stats?project_id=" + p.Id + fmt.Sprintf("&start_time=%d&end_time=%d&step=60000", t0, t0+179_999) + params
		resp, b := e.do("GET", path, "", "")
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s = %d %s", path, resp.StatusCode, b)
		}
		var a answer
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, b)
		}
		// Dense and exact: every series has every bucket, and they add up to the total,
		// which is what paging yields.
		sums := make([]int64, len(a.Buckets))
		var total int64
		for _, s := range a.Series {
			if len(s.Counts) != len(a.Buckets) {
				t.Errorf("GET %s: a series of %d counts for %d buckets: %s", path, len(s.Counts), len(a.Buckets), b)
			}
			var st int64
			for i, c := range s.Counts {
				sums[i] += c
				st += c
			}
			if st != s.Total {
				t.Errorf("GET %s: a series' counts add up to %d, its total says %d", path, st, s.Total)
			}
			total += s.Total
		}
		if len(a.Buckets) != 3 || total != a.Total || a.Total != int64(paged) {
			t.Errorf("GET %s: %d buckets, series add up to %d, total %d, paging yields %d", path, len(a.Buckets), total, a.Total, paged)
		}
		return a
	}
	show := func(a answer) string {
		var out []string
		for _, s := range a.Series {
			v, av := "nil", "-"
			if s.Value != nil {
				v = *s.Value
			}
			if s.AttributeValue != nil {
				av = string(s.AttributeValue)
			}
			o := ""
			if s.Other != nil {
				o = fmt.Sprintf(" other=%v", *s.Other)
			}
			out = append(out, fmt.Sprintf("%s(%s)%s %v", v, av, o, s.Counts))
		}
		return strings.Join(out, "; ")
	}

	for _, c := range []struct {
		name, params, want string
	}{
		// 200 (5), then three ties of 4: the missing key (first), "500", 500 (bytewise); the
		// rest (500, 404, null) are other, bucket by bucket.
		{"top three and other", "&by=" + url.QueryEscape(code) + "&series=3",
			`nil(-) [1 2 1]; "500"("500") [0 2 2]; 200(200) [5 0 0]; nil(-) other=true [3 1 2]`},
		// Every value: a number stays a number, JSON null is a value apart from a missing key.
		{"every value", "&by=attributes." + url.QueryEscape(code),
			`nil(-) [1 2 1]; "500"("500") [0 2 2]; 200(200) [5 0 0]; 404(404) [0 0 1]; 500(500) [2 1 1]; null(null) [1 0 0]`},
		{"one series", "&by=" + url.QueryEscape(code) + "&series=1",
			`200(200) [5 0 0]; nil(-) other=true [4 5 5]`},
		// The attribute level, not the field.
		{"an attribute that shadows a field", "&by=attributes.level", `"shadow"("shadow") [9 5 5]`},
		{"the field", "&by=level", `info(-) [9 5 5]`},
		{"an attribute no entry has", "&by=nothing.here", `nil(-) [9 5 5]`},
		// 19 entries over 12 subjects, 10 series by default: s00-s06 hold 2, s07-s09 win the
		// ties of 1 by value; s10 and s11 are other (1.0.0 refused as many values as
		// MAX_STATS_SERIES with 400).
		{"default series", "&by=subject",
			`s00(-) [2 0 0]; s01(-) [1 0 1]; s02(-) [1 1 0]; s03(-) [1 0 1]; s04(-) [0 2 0]; s05(-) [0 2 0]; s06(-) [0 0 2]; s07(-) [0 0 1]; s08(-) [1 0 0]; s09(-) [1 0 0]; nil(-) other=true [2 0 0]`},
		// user_id: u1 on 7 entries, u2 on 2, none on 10: the entries without one rank first.
		{"entries without the field rank by their total", "&by=user_id&series=1",
			`nil(-) [4 4 2]; nil(-) other=true [5 1 3]`},
		{"no trace ids", "&by=trace_id", `nil(-) [9 5 5]`},
		{"none", "&by=none&series=1", `nil(-) [9 5 5]`},
	} {
		if got := show(stats(c.params)); got != c.want {
			t.Errorf("%s: got\n %s\nwant\n %s", c.name, got, c.want)
		}
	}

	// The generated client reads the new fields: the attribute's value as JSON, other.
	three := 3
	r, err := e.client.LogStatsWithResponse(t.Context(), &rest.LogStatsParams{ProjectId: p.Id, StartTime: t0, EndTime: t0 + 179_999, Step: 60_000, By: ptr(rest.LogStatsParamsBy(code)), Series: &three})
	if err != nil || r.JSON200 == nil || len(r.JSON200.Series) != 4 {
		t.Fatalf("stats through the client = %v %d %s", err, r.StatusCode(), r.Body)
	}
	if s := r.JSON200.Series[1]; s.Value.MustGet() != `"500"` || string(s.AttributeValue) != `"500"` || s.Other != nil {
		t.Errorf("the string 500 through the client: %+v", s)
	}
	if s := r.JSON200.Series[2]; string(s.AttributeValue) != "200" {
		t.Errorf("the number 200 through the client: %+v", s)
	}
	if s := r.JSON200.Series[3]; s.Other == nil || !*s.Other || !s.Value.IsNull() || s.AttributeValue != nil || s.Total != 6 {
		t.Errorf("other through the client: %+v", s)
	}

	// Out of bounds: 400 naming the parameter, never 5xx.
	base := "/logs/stats?project_id=" + p.Id + "&start_time=0&end_time=1&step=1000"
	for _, c := range []struct{ query, field string }{
		{base + "&series=0", "?series"},
		{base + "&series=101", "?series"},
		{base + "&series=-1", "?series"},
		{base + "&series=x", "?series"},
		{base + "&by=message", "?by"},
		{base + "&by=attributes.", "?by"},
		{base + "&by=", "?by"},
	} {
		resp, body := e.do("GET", c.query, "", "")
		if resp.StatusCode != 400 || !slices.Contains(fieldsOf(problemOf(t, body)), c.field) {
			t.Errorf("GET %s = %d %s, want 400 naming %s", c.query, resp.StatusCode, body, c.field)
		}
	}
	for _, q := range []string{base + "&series=1", base + "&series=100", base + "&by=attributes.message"} {
		if resp, body := e.do("GET", q, "", ""); resp.StatusCode != 200 {
			t.Errorf("GET %s = %d %s, want 200", q, resp.StatusCode, body)
		}
	}
}

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
