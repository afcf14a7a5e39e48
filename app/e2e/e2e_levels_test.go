package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"

	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	"example.com/obsvc/api/rest"
)

func TestLevelsAreCanonical(t *testing.T) {
	forEachStore(t, testLevelsAreCanonical)
}

// levelCase is one level as a client sends it, and what it reads back as.
type levelCase struct {
	sent, level, severityText string // severityText "" when the attribute is absent
}

// restLevels are the levels POST /logs is tested with: the spellings of Python logging, syslog,
// log4j, java.util.logging, .NET, zap and slog, and custom levels.
var restLevels = []levelCase{
	{"ERROR", "error", ""}, {"error", "error", ""}, {"Error", "error", ""}, {"err", "error", "err"}, {"SEVERE", "error", "SEVERE"},
	{"WARNING", "warn", "WARNING"}, {"warning", "warn", "warning"}, {"WARN", "warn", ""},
	{"CRITICAL", "fatal", "CRITICAL"}, {"crit", "fatal", "crit"}, {"emerg", "fatal", "emerg"}, {"EMERGENCY", "fatal", "EMERGENCY"},
	{"alert", "fatal", "alert"}, {"panic", "fatal", "panic"}, {"DPANIC", "fatal", "DPANIC"}, {"FATAL", "fatal", ""},
	{"INFO", "info", ""}, {"Information", "info", "Information"}, {"notice", "info", "notice"},
	{"DEBUG", "debug", ""}, {"fine", "debug", "fine"}, {"TRACE", "trace", ""}, {"Verbose", "trace", "Verbose"},
	{"Audit", "audit", ""}, {"AUDIT", "audit", ""},
}

// testLevelsAreCanonical: both ingest paths (POST /logs; OTLP in protobuf and JSON) store
// canonical levels with severity_text where the spelling differed beyond case, and every filter
// (listing, stats, delete, tail) compares log_level in any spelling the same way.
func testLevelsAreCanonical(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	p := e.project("levels")
	want := map[string]levelCase{} // by message

	// POST /logs, one entry per spelling, plus a severity_text of the client's own.
	var batch rest.CreateLogsJSONRequestBody
	for i, c := range restLevels {
		msg := fmt.Sprintf("rest %d %s", i, c.sent)
		batch = append(batch, rest.LogEntryInput{ProjectId: p.Id, Message: msg, Level: ptr(c.sent), Time: ptr(int64(1000 + i))})
		want[msg] = c
	}
	batch = append(batch, rest.LogEntryInput{ProjectId: p.Id, Message: "rest own", Level: ptr("WARNING"), Attributes: rest.Attributes(`{"severity_text":"mine"}`), Time: ptr[int64](1999)})
	want["rest own"] = levelCase{"WARNING", "warn", "mine"}
	if cr, err := e.client.CreateLogsWithResponse(t.Context(), nil, batch); err != nil || cr.JSON201 == nil {
		t.Fatalf("create = %v %d %s", err, cr.StatusCode(), cr.Body)
	}

	// OTLP: severity_number with severity_text, and severity_text alone, in both encodings.
	otlp := []struct {
		number logspb.SeverityNumber
		text   string
		want   levelCase
	}{
		{logspb.SeverityNumber_SEVERITY_NUMBER_WARN, "WARNING", levelCase{"WARNING", "warn", "WARNING"}},
		{logspb.SeverityNumber_SEVERITY_NUMBER_ERROR, "Error", levelCase{"Error", "error", ""}},
		{logspb.SeverityNumber_SEVERITY_NUMBER_FATAL, "CRITICAL", levelCase{"CRITICAL", "fatal", "CRITICAL"}},
		{logspb.SeverityNumber_SEVERITY_NUMBER_UNSPECIFIED, "WARNING", levelCase{"WARNING", "warn", "WARNING"}},
		{logspb.SeverityNumber_SEVERITY_NUMBER_UNSPECIFIED, "Critical", levelCase{"Critical", "fatal", "Critical"}},
		{logspb.SeverityNumber_SEVERITY_NUMBER_UNSPECIFIED, "ERR", levelCase{"ERR", "error", "ERR"}},
		{logspb.SeverityNumber_SEVERITY_NUMBER_UNSPECIFIED, "Audit", levelCase{"Audit", "audit", ""}},
		{logspb.SeverityNumber_SEVERITY_NUMBER_INFO, "", levelCase{"", "info", ""}},
	}
	for _, ct := range []string{ctProto, ctJSON} {
		var records []*logspb.LogRecord
		for i, c := range otlp {
			msg := fmt.Sprintf("otlp %s %d %s", ct, i, c.text)
			records = append(records, &logspb.LogRecord{TimeUnixNano: uint64(2000+i) * 1e6, SeverityNumber: c.number, SeverityText: c.text, Body: str(msg)})
			want[msg] = c.want
		}
		a := postOTLP(t, http.DefaultClient, e.url, otlpCall{contentType: ct, body: encodeOTLP(t, ct, otlpRequest(records...)), headers: map[string]string{"X-Project-Id": p.Id}})
		if a.status != 200 || a.resp.GetPartialSuccess().GetRejectedLogRecords() != 0 {
			t.Fatalf("OTLP %s = %d %s", ct, a.status, a.raw)
		}
	}

	perLevel := map[string][]string{} // level → messages, in time order
	for _, le := range listAll(t, e, p.Id) {
		w, ok := want[le.Message]
		if !ok {
			t.Fatalf("unknown entry %q", le.Message)
		}
		var attrs map[string]any
		if le.Attributes != nil {
			if err := json.Unmarshal(le.Attributes, &attrs); err != nil {
				t.Fatal(err)
			}
		}
		st, has := attrs["severity_text"]
		if le.Level != w.level || (w.severityText == "") == has || (has && st != w.severityText) {
			t.Errorf("%q: level %q attributes %s; want %q with severity_text %q", le.Message, le.Level, le.Attributes, w.level, w.severityText)
		}
		perLevel[le.Level] = append(perLevel[le.Level], le.Message)
	}
	if len(perLevel) != 7 {
		t.Errorf("levels stored: %v, want the six and audit", slices.Sorted(maps.Keys(perLevel)))
	}

	// Filters: log_level in any spelling, alone or repeated.
	list := func(levels ...string) []string {
		t.Helper()
		return e.listMessages(t, rest.ListLogsParams{ProjectId: p.Id, LogLevel: &levels})
	}
	for _, c := range []struct {
		filter []string
		levels []string
	}{
		{[]string{"ERROR"}, []string{"error"}},
		{[]string{"err"}, []string{"error"}},
		{[]string{"warning"}, []string{"warn"}},
		{[]string{"Critical", "AUDIT"}, []string{"fatal", "audit"}},
		{[]string{"WARN", "Warning", "warn"}, []string{"warn"}},
	} {
		var wantMsgs []string
		for _, l := range c.levels {
			wantMsgs = append(wantMsgs, perLevel[l]...)
		}
		got := list(c.filter...)
		slices.Sort(got)
		slices.Sort(wantMsgs)
		if len(got) == 0 || !slices.Equal(got, wantMsgs) {
			t.Errorf("log_level=%q: got %q, want %q", c.filter, got, wantMsgs)
		}
	}
	// Stats: one series per canonical level, the filter canonical too.
	sr, err := e.client.LogStatsWithResponse(t.Context(), &rest.LogStatsParams{ProjectId: p.Id, StartTime: 0, EndTime: 59_999, Step: 60_000})
	if err != nil || sr.JSON200 == nil {
		t.Fatalf("stats = %v %d %s", err, sr.StatusCode(), sr.Body)
	}
	series := map[string]int64{}
	for _, s := range sr.JSON200.Series {
		series[s.Value.MustGet()] = s.Total
	}
	for l, msgs := range perLevel {
		if series[l] != int64(len(msgs)) {
			t.Errorf("stats series %q = %d, want %d (all %v)", l, series[l], len(msgs), series)
		}
	}
	if len(series) != len(perLevel) {
		t.Errorf("stats series %v, want one per level of %v", series, slices.Sorted(maps.Keys(perLevel)))
	}
	sr, err = e.client.LogStatsWithResponse(t.Context(), &rest.LogStatsParams{ProjectId: p.Id, StartTime: 0, EndTime: 59_999, Step: 60_000, LogLevel: &[]string{"WARNING"}})
	if err != nil || sr.JSON200 == nil || sr.JSON200.Total != int64(len(perLevel["warn"])) {
		t.Errorf("stats log_level=WARNING = %v %s, want %d", err, sr.Body, len(perLevel["warn"]))
	}

	// The live tail matches the same way.
	l := mustTail(t, "tail", nil, e.url+"/logs/tail?project_id="+p.Id+"&log_level=Warning", "")
	tailBatch := rest.CreateLogsJSONRequestBody{
		{ProjectId: p.Id, Message: "tail 1", Level: ptr("WARNING")},
		{ProjectId: p.Id, Message: "tail 2", Level: ptr("error")},
		{ProjectId: p.Id, Message: "tail 3", Level: ptr("warn")},
		{ProjectId: p.Id, Message: "tail end", Level: ptr("Warn")},
	}
	if cr, err := e.client.CreateLogsWithResponse(t.Context(), nil, tailBatch); err != nil || cr.JSON201 == nil {
		t.Fatalf("create = %v %d %s", err, cr.StatusCode(), cr.Body)
	}
	if got := msgs(l.until("tail end")); !slices.Equal(got, []string{"tail 1", "tail 3", "tail end"}) {
		t.Errorf("tail log_level=Warning read %q", got)
	}

	// Delete by a spelling removes the level's entries.
	dr, err := e.client.DeleteLogsWithResponse(t.Context(), &rest.DeleteLogsParams{ProjectId: p.Id, LogLevel: &[]string{"CRIT"}})
	if err != nil || dr.JSON200 == nil || dr.JSON200.Deleted != int64(len(perLevel["fatal"])) {
		t.Fatalf("delete log_level=CRIT = %v %d %s, want %d", err, dr.StatusCode(), dr.Body, len(perLevel["fatal"]))
	}
	if left := list("fatal"); len(left) != 0 {
		t.Errorf("fatal entries left after the delete: %q", left)
	}
}
