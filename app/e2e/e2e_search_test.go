package e2e

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"example.com/obsvc/api/rest"
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
		{base + "&start_time=0&end_time=1&step=1000&by=user", "?by"},
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
