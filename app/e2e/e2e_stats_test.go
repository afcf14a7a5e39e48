package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"example.com/obsvc/api/rest"
)

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
	if s := r.JSON200.Series[1]; s.Value.MustGet() != `"500"` || s.AttributeValue.MustGet() != "500" || s.Other != nil {
		t.Errorf("the string 500 through the client: %+v", s)
	}
	if s := r.JSON200.Series[2]; s.AttributeValue.MustGet() != float64(200) {
		t.Errorf("the number 200 through the client: %+v", s)
	}
	if s := r.JSON200.Series[3]; s.Other == nil || !*s.Other || !s.Value.IsNull() || s.AttributeValue.IsSpecified() || s.Total != 6 {
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
