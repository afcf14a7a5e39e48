package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"example.com/obsvc/api/rest"
)

// testAttributesRoundTrip: attributes, trace_id and span_id go in through the generated client
// and come back as sent (numbers exactly, keys verbatim, ids in lower case); entries without
// them come back without them; trace_id filters listing and deleting.
func testAttributesRoundTrip(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	const trace, span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	attrs := `{"big":12345678901234567890,"exp":1E400,"frac":1.50,"http.method":"GET","list":[1,"2",null,true,{"k":[]}],"nested":{"a.b":{"c":false}},"ключ.имя":"значение"}`
	batch := rest.CreateLogsJSONRequestBody{
		{ProjectId: p.Id, Message: "traced", Time: ptr[int64](1), Attributes: rest.Attributes(attrs), TraceId: ptr(strings.ToUpper(trace)), SpanId: ptr(strings.ToUpper(span))},
		{ProjectId: p.Id, Message: "same trace", Time: ptr[int64](2), TraceId: ptr(trace)},
		{ProjectId: p.Id, Message: "other trace", Time: ptr[int64](3), TraceId: ptr("0af7651916cd43dd8448eb211c80319c"), Attributes: rest.Attributes(`{}`)},
		{ProjectId: p.Id, Message: "bare", Time: ptr[int64](4)},
	}
	cr, err := e.client.CreateLogsWithResponse(t.Context(), nil, batch)
	if err != nil || cr.JSON201 == nil || cr.JSON201.Created != 4 {
		t.Fatalf("create = %v %d %s", err, cr.StatusCode(), cr.Body)
	}

	lr, err := e.client.ListLogsWithResponse(t.Context(), &rest.ListLogsParams{ProjectId: p.Id})
	if err != nil || lr.JSON200 == nil || len(*lr.JSON200) != 4 {
		t.Fatalf("list = %v %d %s", err, lr.StatusCode(), lr.Body)
	}
	got := *lr.JSON200
	if string(got[0].Attributes) != attrs || *got[0].TraceId != trace || *got[0].SpanId != span {
		t.Errorf("traced entry = attributes %s trace %v span %v\nwant attributes %s", got[0].Attributes, *got[0].TraceId, *got[0].SpanId, attrs)
	}
	if string(got[2].Attributes) != `{}` {
		t.Errorf("empty attributes came back as %q", got[2].Attributes)
	}
	// Fields not sent are omitted from the body, not sent as null.
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(lr.Body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"attributes", "trace_id", "span_id"} {
		if v, ok := raw[3][k]; ok {
			t.Errorf("bare entry has %s = %s", k, v)
		}
	}
	if _, ok := raw[1]["attributes"]; ok {
		t.Errorf("an entry without attributes returns them: %s", raw[1]["attributes"])
	}
	// The big integer is in the body as sent, not as a float.
	if !bytes.Contains(lr.Body, []byte(`"big":12345678901234567890`)) {
		t.Errorf("body lost the big integer: %s", lr.Body)
	}

	// The trace filter, in either case.
	for _, q := range []string{trace, strings.ToUpper(trace)} {
		tr, err := e.client.ListLogsWithResponse(t.Context(), &rest.ListLogsParams{ProjectId: p.Id, TraceId: ptr(q)})
		if err != nil || tr.JSON200 == nil {
			t.Fatalf("list by trace = %v %d %s", err, tr.StatusCode(), tr.Body)
		}
		var msgs []string
		for _, le := range *tr.JSON200 {
			msgs = append(msgs, le.Message)
		}
		if !slices.Equal(msgs, []string{"traced", "same trace"}) {
			t.Errorf("list by trace %s = %q", q, msgs)
		}
	}
	dr, err := e.client.DeleteLogsWithResponse(t.Context(), &rest.DeleteLogsParams{ProjectId: p.Id, TraceId: ptr(trace)})
	if err != nil || dr.JSON200 == nil || dr.JSON200.Deleted != 2 {
		t.Fatalf("delete by trace = %v %d %s", err, dr.StatusCode(), dr.Body)
	}
	if n := e.logCount(p.Id); n != 2 {
		t.Fatalf("%d entries left after deleting the trace, want 2", n)
	}
	if e.tr.Checked() == 0 {
		t.Fatal("no response went through the contract check")
	}
}

// testBadAttributes: each bad attributes, trace_id or span_id answers 400 naming its pointer or
// parameter, and stores nothing.
func testBadAttributes(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	p := e.project("p").Id
	entryWith := func(field string) string {
		return fmt.Sprintf(`[{"project_id":%q,"message":"ok"},{"project_id":%q,"message":"m",%s}]`, p, p, field)
	}
	keys := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"k%d":1`, i)
		}
		return "{" + b.String() + "}"
	}
	cases := []struct {
		name, body string
		names      []string
	}{
		{"attributes an array", entryWith(`"attributes":[1]`), []string{"/1/attributes"}},
		{"attributes a string", entryWith(`"attributes":"{}"`), []string{"/1/attributes"}},
		{"attributes null", entryWith(`"attributes":null`), []string{"/1/attributes"}},
		{"129 keys", entryWith(`"attributes":` + keys(129)), []string{"/1/attributes"}},
		{"a key of 257 characters", entryWith(`"attributes":{"` + strings.Repeat("k", 257) + `":1}`), []string{"/1/attributes"}},
		{"an empty key", entryWith(`"attributes":{"":1}`), []string{"/1/attributes"}},
		{"over 64 KiB", entryWith(`"attributes":{"k":"` + strings.Repeat("x", 64<<10) + `"}`), []string{"/1/attributes"}},
		{"NUL in a value", entryWith(`"attributes":{"k":"a\u0000b"}`), []string{"/1/attributes"}},
		{"NUL in a nested key", entryWith(`"attributes":{"k":{"a\u0000":1}}`), []string{"/1/attributes"}},
		{"invalid UTF-8", entryWith("\"attributes\":{\"k\":\"\xff\"}"), []string{"/1/attributes/k"}}, // the value itself, found before any decode
		{"nested 33 levels", entryWith(`"attributes":{"k":` + strings.Repeat("[", 32) + strings.Repeat("]", 32) + `}`), []string{"/1/attributes"}},
		{"trace_id of 31 digits", entryWith(`"trace_id":"4bf92f3577b34da6a3ce929d0e0e473"`), []string{"/1/trace_id"}},
		{"trace_id all zero", entryWith(`"trace_id":"00000000000000000000000000000000"`), []string{"/1/trace_id"}},
		{"trace_id not hex", entryWith(`"trace_id":"4bf92f3577b34da6a3ce929d0e0e473x"`), []string{"/1/trace_id"}},
		{"trace_id a number", entryWith(`"trace_id":1`), []string{"/1/trace_id"}},
		{"span_id of 17 digits", entryWith(`"span_id":"00f067aa0ba902b70"`), []string{"/1/span_id"}},
		{"span_id all zero", entryWith(`"span_id":"0000000000000000"`), []string{"/1/span_id"}},
		{"span_id null", entryWith(`"span_id":null`), []string{"/1/span_id"}},
		{"every problem named", entryWith(`"attributes":[],"trace_id":"x","span_id":"y","level":""`), []string{"/1/level", "/1/trace_id", "/1/span_id", "/1/attributes"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := e.do("POST", "/logs", "application/json", c.body)
			if resp.StatusCode != 400 {
				t.Fatalf("status %d, want 400: %.300s", resp.StatusCode, body)
			}
			if got := fieldsOf(problemOf(t, body)); !slices.Equal(got, c.names) {
				t.Errorf("errors name %q, want %q: %.300s", got, c.names, body)
			}
			if n := e.logCount(p); n != 0 {
				t.Fatalf("a rejected batch stored %d entries", n)
			}
		})
	}
	for _, bad := range []string{"4bf92f3577b34da6a3ce929d0e0e473", "00000000000000000000000000000000", "4bf92f3577b34da6a3ce929d0e0e473x", "%00" + strings.Repeat("a", 31)} {
		for _, method := range []string{"GET", "DELETE"} {
			resp, body := e.do(method, "/logs?project_id="+p+"&trace_id="+bad, "", "")
			if got := fieldsOf(problemOf(t, body)); resp.StatusCode != 400 || !slices.Equal(got, []string{"?trace_id"}) {
				t.Errorf("%s trace_id=%s = %d naming %q, want 400 naming ?trace_id", method, bad, resp.StatusCode, got)
			}
		}
	}
}
