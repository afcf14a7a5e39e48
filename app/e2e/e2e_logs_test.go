package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/domain"
)

func testLogsRoundTrip(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	before := time.Now().UnixMilli()
	body := fmt.Sprintf(`[
		{"project_id":%[1]q,"message":"full","level":"error","time":1795428000123,"subject":"checkout","user_id":"u-1","unknown":{"nested":[1,2]}},
		{"project_id":%[1]q,"message":"defaults"},
		{"project_id":%[1]q,"message":"","subject":"","user_id":""},
		{"project_id":%[1]q,"message":"big time","time":9007199254740993},
		{"project_id":%[1]q,"message":"negative time","time":-1}
	]`, p.Id)
	resp, b := e.do("POST", "/logs", "application/json", body)
	if resp.StatusCode != 201 || strings.TrimSpace(string(b)) != `{"created":5}` {
		t.Fatalf("create logs = %d %s", resp.StatusCode, b)
	}
	after := time.Now().UnixMilli()

	resp, b = e.do("GET", "/logs?project_id="+p.Id, "", "")
	if resp.StatusCode != 200 || resp.Header.Get("Link") != "" {
		t.Fatalf("list = %d, Link %q", resp.StatusCode, resp.Header.Get("Link"))
	}
	var raw []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if len(raw) != 5 {
		t.Fatalf("got %d entries, want 5", len(raw))
	}
	byMsg := map[string]map[string]any{}
	for _, r := range raw {
		byMsg[r["message"].(string)] = r
		if r["id"] == "" || r["project_id"] != p.Id {
			t.Errorf("entry %v lacks id or project", r)
		}
	}
	full := byMsg["full"]
	if full["level"] != "error" || full["time"] != json.Number("1795428000123") || full["subject"] != "checkout" || full["user_id"] != "u-1" {
		t.Errorf("full entry = %v", full)
	}
	if _, ok := full["unknown"]; ok {
		t.Errorf("an unknown member is a field of the entry: %v", full)
	}
	if attrs, _ := full["attributes"].(map[string]any); fmt.Sprint(attrs["unknown"]) != "map[nested:[1 2]]" {
		t.Errorf("an unknown member was not kept in attributes: %v", full)
	}
	def := byMsg["defaults"]
	if def["level"] != "info" {
		t.Errorf("default level = %v, want info", def["level"])
	}
	if tm, _ := def["time"].(json.Number).Int64(); tm < before || tm > after {
		t.Errorf("default time %d not within [%d, %d]", tm, before, after)
	}
	for _, k := range []string{"subject", "user_id"} {
		if _, ok := def[k]; ok {
			t.Errorf("optional %s not sent but returned: %v", k, def)
		}
		if v, ok := byMsg[""][k]; !ok || v != "" {
			t.Errorf("empty %s sent but returned as %v (present %v)", k, v, ok)
		}
	}
	if byMsg["big time"]["time"] != json.Number("9007199254740993") {
		t.Errorf("int64 time lost precision: %v", byMsg["big time"]["time"])
	}
	// Ascending by time: negative first, then the explicit 2026 time, the server-time pair, then 2^53+1.
	var order []string
	for _, r := range raw {
		order = append(order, r["message"].(string))
	}
	if order[0] != "negative time" || order[4] != "big time" {
		t.Errorf("order = %q", order)
	}

	// A batch with one time reads back in the order it was sent.
	var batch rest.CreateLogsJSONRequestBody
	for i := range 50 {
		batch = append(batch, rest.LogEntryInput{ProjectId: p.Id, Message: fmt.Sprint(i), Time: ptr[int64](42)})
	}
	cr, err := e.client.CreateLogsWithResponse(t.Context(), nil, batch)
	if err != nil || cr.StatusCode() != 201 || cr.JSON201.Created != 50 {
		t.Fatalf("batch = %v %d %s", err, cr.StatusCode(), cr.Body)
	}
	lr, err := e.client.ListLogsWithResponse(t.Context(), &rest.ListLogsParams{ProjectId: p.Id, StartTime: ptr[int64](42), EndTime: ptr[int64](42)})
	if err != nil || lr.StatusCode() != 200 || len(*lr.JSON200) != 50 {
		t.Fatalf("list batch = %v %d", err, lr.StatusCode())
	}
	for i, le := range *lr.JSON200 {
		if le.Message != fmt.Sprint(i) {
			t.Fatalf("entry %d has message %q: the batch's order was not kept", i, le.Message)
		}
	}
}

func testBadBatches(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	ok := fmt.Sprintf(`{"project_id":%q,"message":"fine"}`, p.Id)
	ghost := server.NewID()
	cases := []struct {
		name, contentType, body string
		status                  int
		fields                  []string
	}{
		{"malformed JSON", "application/json", `[` + ok + `,{"project_id":`, 400, []string{""}},
		{"trailing garbage", "application/json", `[` + ok + `] x`, 400, nil},
		{"not an array", "application/json", ok, 400, []string{""}},
		{"empty array", "application/json", `[]`, 400, []string{""}},
		{"null", "application/json", `null`, 400, nil},
		{"entry not an object", "application/json", `[` + ok + `,5]`, 400, []string{"/1"}},
		{"missing message", "application/json", fmt.Sprintf(`[%s,{"project_id":%q}]`, ok, p.Id), 400, []string{"/1/message"}},
		{"missing project_id", "application/json", `[` + ok + `,{"message":"m"}]`, 400, []string{"/1/project_id"}},
		{"message of wrong type", "application/json", fmt.Sprintf(`[{"project_id":%q,"message":1}]`, p.Id), 400, []string{"/0/message"}},
		{"time of wrong type", "application/json", fmt.Sprintf(`[%s,%s,{"project_id":%q,"message":"m","time":"now"}]`, ok, ok, p.Id), 400, []string{"/2/time"}},
		{"time not an integer", "application/json", fmt.Sprintf(`[{"project_id":%q,"message":"m","time":1.5}]`, p.Id), 400, []string{"/0/time"}},
		{"time out of int64", "application/json", fmt.Sprintf(`[{"project_id":%q,"message":"m","time":99999999999999999999}]`, p.Id), 400, []string{"/0/time"}},
		{"empty level", "application/json", fmt.Sprintf(`[%s,{"project_id":%q,"message":"m","level":""}]`, ok, p.Id), 400, []string{"/1/level"}},
		{"level too long", "application/json", fmt.Sprintf(`[{"project_id":%q,"message":"m","level":%q}]`, p.Id, strings.Repeat("l", 33)), 400, []string{"/0/level"}},
		{"message too long", "application/json", fmt.Sprintf(`[{"project_id":%q,"message":%q}]`, p.Id, strings.Repeat("m", 64<<10+1)), 400, []string{"/0/message"}},
		{"message too long in bytes", "application/json", fmt.Sprintf(`[{"project_id":%q,"message":%q}]`, p.Id, strings.Repeat("é", 40<<10)), 400, []string{"/0/message"}},
		{"null level", "application/json", fmt.Sprintf(`[{"project_id":%q,"message":"m","level":null}]`, p.Id), 400, []string{"/0/level"}},
		{"several problems", "application/json", fmt.Sprintf(`[{"project_id":%q,"message":"m","level":""},%s,{"project_id":%q}]`, p.Id, ok, p.Id), 400, []string{"/0/level", "/2/message"}},
		{"unknown project among valid entries", "application/json", fmt.Sprintf(`[%s,{"project_id":%q,"message":"m"},%s]`, ok, ghost, ok), 422, []string{"/1/project_id"}},
		{"malformed project id", "application/json", fmt.Sprintf(`[%s,{"project_id":"nope","message":"m"}]`, ok), 422, []string{"/1/project_id"}},
		{"not JSON", "text/plain", `[` + ok + `]`, 415, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := e.do("POST", "/logs", c.contentType, c.body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, c.status, body)
			}
			if c.fields != nil {
				if got := fieldsOf(problemOf(t, body)); !slices.Equal(got, c.fields) {
					t.Errorf("errors name %q, want %q", got, c.fields)
				}
			}
			if n := e.logCount(p.Id); n != 0 {
				t.Fatalf("a rejected batch stored %d entries", n)
			}
		})
	}
}

func testBatchLimits(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	entry := fmt.Sprintf(`{"project_id":%q,"message":"m"}`, p.Id)
	batch := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat(entry+",", n), ",") + "]" }

	resp, body := e.do("POST", "/logs", "application/json", batch(10_001))
	if resp.StatusCode != 413 {
		t.Fatalf("10,001 entries: %d, want 413: %.300s", resp.StatusCode, body)
	}
	if n := e.logCount(p.Id); n != 0 {
		t.Fatalf("an oversize batch stored %d entries", n)
	}
	resp, body = e.do("POST", "/logs", "application/json", batch(10_000))
	if resp.StatusCode != 201 {
		t.Fatalf("10,000 entries: %d, want 201: %.300s", resp.StatusCode, body)
	}
	if n := e.logCount(p.Id); n != 10_000 {
		t.Fatalf("stored %d entries, want 10000", n)
	}

	// Over 10 MiB of body: 413 whatever the entry count.
	big := fmt.Sprintf(`{"project_id":%q,"message":%q}`, p.Id, strings.Repeat("x", 60_000))
	resp, body = e.do("POST", "/logs", "application/json", "["+strings.TrimSuffix(strings.Repeat(big+",", 180), ",")+"]")
	if resp.StatusCode != 413 {
		t.Fatalf("10.3 MB body: %d, want 413: %.300s", resp.StatusCode, body)
	}
	if n := e.logCount(p.Id); n != 10_000 {
		t.Fatalf("an oversize body changed the store: %d entries", n)
	}

	// Both limits are configuration.
	small := newEnv(t, open, func(c *server.Config) { c.MaxBatchEntries = 3; c.MaxBodyBytes = 1000 })
	sp := small.project("p")
	entry = fmt.Sprintf(`{"project_id":%q,"message":"m"}`, sp.Id)
	if resp, _ := small.do("POST", "/logs", "application/json", "["+strings.Repeat(entry+",", 3)+entry+"]"); resp.StatusCode != 413 {
		t.Errorf("4 entries over a limit of 3: %d, want 413", resp.StatusCode)
	}
	if resp, _ := small.do("POST", "/logs", "application/json", "["+strings.Repeat(entry+",", 2)+entry+"]"); resp.StatusCode != 201 {
		t.Errorf("3 entries at a limit of 3: %d, want 201", resp.StatusCode)
	}
	if resp, _ := small.do("POST", "/logs", "application/json", fmt.Sprintf(`[{"project_id":%q,"message":%q}]`, sp.Id, strings.Repeat("m", 1000))); resp.StatusCode != 413 {
		t.Errorf("body over 1000 bytes: %d, want 413", resp.StatusCode)
	}

	// So are the attribute limits.
	tight := newEnv(t, open, func(c *server.Config) { c.MaxAttributes = 2; c.MaxAttrKeyChars = 3; c.MaxAttrBytes = 40 })
	tp := tight.project("p")
	attrs := func(a string) string {
		return fmt.Sprintf(`[{"project_id":%q,"message":"m"},{"project_id":%q,"message":"m","attributes":%s}]`, tp.Id, tp.Id, a)
	}
	for _, c := range []struct{ attrs, want string }{
		{`{"a":1,"b":2,"c":3}`, "at most 2 keys"},
		{`{"abcd":1}`, "/1/attributes"},
		{`{"a":"` + strings.Repeat("x", 40) + `"}`, "/1/attributes"},
	} {
		resp, body := tight.do("POST", "/logs", "application/json", attrs(c.attrs))
		if resp.StatusCode != 400 || !strings.Contains(string(body), c.want) {
			t.Errorf("attributes %s over the configured limits: %d %s, want 400 naming %q", c.attrs, resp.StatusCode, body, c.want)
		}
	}
	if resp, body := tight.do("POST", "/logs", "application/json", attrs(`{"a":1,"abc":"x"}`)); resp.StatusCode != 201 {
		t.Errorf("attributes within the configured limits: %d %s, want 201", resp.StatusCode, body)
	}
	if n := tight.logCount(tp.Id); n != 2 {
		t.Errorf("after three refused batches and one stored: %d entries, want 2", n)
	}
}

func testListLogsFilters(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	other := e.project("other")
	seed(t, e, p.Id, 12)
	seed(t, e, other.Id, 3)
	desc := rest.Desc
	cases := []struct {
		name   string
		params rest.ListLogsParams
		want   []string
	}{
		{"project", rest.ListLogsParams{}, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}},
		{"user", rest.ListLogsParams{UserId: ptr("alice")}, []string{"0", "2", "4", "6", "8", "10"}},
		{"level", rest.ListLogsParams{LogLevel: ptr([]string{"error"})}, []string{"1", "4", "7", "10"}},
		{"start inclusive", rest.ListLogsParams{StartTime: ptr[int64](180)}, []string{"8", "9", "10", "11"}},
		{"end inclusive", rest.ListLogsParams{EndTime: ptr[int64](120)}, []string{"0", "1", "2"}},
		{"start equals end", rest.ListLogsParams{StartTime: ptr[int64](150), EndTime: ptr[int64](150)}, []string{"5"}},
		{"all combined", rest.ListLogsParams{UserId: ptr("alice"), LogLevel: ptr([]string{"info"}), StartTime: ptr[int64](100), EndTime: ptr[int64](190)}, []string{"0", "6"}},
		{"newest first", rest.ListLogsParams{Order: &desc, LogLevel: ptr([]string{"debug"})}, []string{"11", "8", "5", "2"}},
		{"nothing matches", rest.ListLogsParams{UserId: ptr("nobody")}, nil},
		{"limit", rest.ListLogsParams{Limit: ptr[int32](2)}, []string{"0", "1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.params.ProjectId = p.Id
			r, err := e.client.ListLogsWithResponse(t.Context(), &c.params)
			if err != nil || r.StatusCode() != 200 {
				t.Fatalf("list = %v %d %s", err, r.StatusCode(), r.Body)
			}
			if got := messages(*r.JSON200); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func testListLogsParameterErrors(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	seed(t, e, p.Id, 3)
	q := "/logs?project_id=" + p.Id
	cases := []struct {
		name, query string
		status      int
		fields      []string
	}{
		{"missing project_id", "/logs", 400, []string{"?project_id"}},
		{"unknown project", "/logs?project_id=" + server.NewID(), 404, nil},
		{"malformed project id", "/logs?project_id=nope", 404, nil},
		{"start after end", q + "&start_time=5&end_time=4", 400, []string{"?start_time"}},
		{"start not a number", q + "&start_time=yesterday", 400, []string{"?start_time"}},
		{"end not a number", q + "&end_time=1.5", 400, []string{"?end_time"}},
		{"limit zero", q + "&limit=0", 400, []string{"?limit"}},
		{"limit over the maximum", q + "&limit=10001", 400, []string{"?limit"}},
		{"limit negative", q + "&limit=-1", 400, []string{"?limit"}},
		{"limit not a number", q + "&limit=ten", 400, []string{"?limit"}},
		{"unknown order", q + "&order=sideways", 400, []string{"?order"}},
		{"cursor not ours", q + "&cursor=bm90LWEtY3Vyc29y", 400, []string{"?cursor"}},
		{"cursor not base64", q + "&cursor=%25%25%25", 400, []string{"?cursor"}},
		{"cursor of the other order", q + "&order=desc&cursor=" + domain.EncodeCursor(domain.Cursor{Time: 1, ID: server.NewID()}), 400, []string{"?cursor"}},
	}
	listingOnly := func(query string) bool {
		return strings.Contains(query, "limit=") || strings.Contains(query, "order=") || strings.Contains(query, "cursor=")
	}
	for _, method := range []string{"GET", "DELETE"} {
		for _, c := range cases {
			if method == "DELETE" && listingOnly(c.query) {
				continue // DELETE /logs takes no paging parameters
			}
			t.Run(method+" "+c.name, func(t *testing.T) {
				resp, body := e.do(method, c.query, "", "")
				wantAnswer(t, resp, body, c.status, c.fields)
			})
		}
	}
	if n := e.logCount(p.Id); n != 3 {
		t.Errorf("rejected deletes removed entries: %d left, want 3", n)
	}
}

func testDeleteLogs(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	other := e.project("other")
	seed(t, e, p.Id, 12)
	seed(t, e, other.Id, 12)
	del := func(params rest.DeleteLogsParams) int64 {
		t.Helper()
		r, err := e.client.DeleteLogsWithResponse(t.Context(), &params)
		if err != nil || r.StatusCode() != 200 {
			t.Fatalf("delete %+v = %v %d %s", params, err, r.StatusCode(), r.Body)
		}
		return r.JSON200.Deleted
	}
	if n := del(rest.DeleteLogsParams{ProjectId: p.Id, UserId: ptr("alice"), LogLevel: ptr([]string{"info"})}); n != 2 {
		t.Errorf("delete alice/info = %d, want 2", n)
	}
	// 150, 160 and 170 are entries 5, 6 and 7; entry 6 (alice, info) is gone already.
	if n := del(rest.DeleteLogsParams{ProjectId: p.Id, StartTime: ptr[int64](150), EndTime: ptr[int64](170)}); n != 2 {
		t.Errorf("delete [150, 170] = %d, want 2", n)
	}
	if n := del(rest.DeleteLogsParams{ProjectId: p.Id}); n != 8 {
		t.Errorf("delete the rest = %d, want 8", n)
	}
	if n := del(rest.DeleteLogsParams{ProjectId: p.Id}); n != 0 {
		t.Errorf("delete again = %d, want 0", n)
	}
	if n := e.logCount(other.Id); n != 12 {
		t.Errorf("the other project has %d entries, want 12", n)
	}
	r, _ := e.client.DeleteLogsWithResponse(t.Context(), &rest.DeleteLogsParams{ProjectId: server.NewID()})
	if r.StatusCode() != 404 {
		t.Errorf("delete in an unknown project = %d, want 404", r.StatusCode())
	}
}

func testIdempotentRetries(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	body := fmt.Sprintf(`[{"project_id":%[1]q,"message":"a"},{"project_id":%[1]q,"message":"b"}]`, p.Id)
	post := func(key, body string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", e.url+"/logs", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, b := roundTrip(t, e.http, req)
		return resp, b
	}
	resp, b := post("batch-1", body)
	if resp.StatusCode != 201 || resp.Header.Get("Idempotency-Replayed") != "" || strings.TrimSpace(string(b)) != `{"created":2}` {
		t.Fatalf("first = %d %q %s", resp.StatusCode, resp.Header.Get("Idempotency-Replayed"), b)
	}
	for range 3 {
		resp, b = post("batch-1", body)
		if resp.StatusCode != 201 || resp.Header.Get("Idempotency-Replayed") != "true" || strings.TrimSpace(string(b)) != `{"created":2}` {
			t.Fatalf("retry = %d %q %s, want the original 201 replayed", resp.StatusCode, resp.Header.Get("Idempotency-Replayed"), b)
		}
	}
	if n := e.logCount(p.Id); n != 2 {
		t.Fatalf("%d entries after retries, want 2", n)
	}
	resp, b = post("batch-1", strings.Replace(body, `"b"`, `"c"`, 1))
	if resp.StatusCode != 422 {
		t.Fatalf("same key, other body = %d %s, want 422", resp.StatusCode, b)
	}
	for _, bad := range []string{strings.Repeat("k", 256), "tab\tkey"} {
		resp, b = post(bad, body)
		if resp.StatusCode != 400 || !strings.Contains(string(b), `"parameter":"Idempotency-Key"`) {
			t.Errorf("key %q = %d %s, want 400 naming the header", bad, resp.StatusCode, b)
		}
	}
	// Without a key every send stores again; another key is another batch.
	post("", body)
	post("batch-2", body)
	if n := e.logCount(p.Id); n != 6 {
		t.Fatalf("%d entries, want 6", n)
	}
}

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

func testListLogsPaging(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	const total = 23
	var in []rest.LogEntryInput
	for i := range total {
		in = append(in, rest.LogEntryInput{ProjectId: p.Id, Message: fmt.Sprint(i), Time: ptr(int64(i / 3)), UserId: ptr("u")})
	}
	if r, err := e.client.CreateLogsWithResponse(t.Context(), nil, in); err != nil || r.StatusCode() != 201 {
		t.Fatalf("seed: %v", err)
	}
	for _, order := range []string{"asc", "desc"} {
		for _, limit := range []int{1, 5, 22, 23, 24} {
			t.Run(fmt.Sprintf("%s/limit=%d", order, limit), func(t *testing.T) {
				next := fmt.Sprintf("%s/logs?project_id=%s&user_id=u&order=%s&limit=%d", e.url, p.Id, order, limit)
				var got []string
				for pages := 0; next != ""; pages++ {
					if pages > total+1 {
						t.Fatal("paging does not end")
					}
					u, err := url.Parse(next)
					if err != nil || u.Path != "/logs" || (pages > 0 && (u.IsAbs() || u.Host != "")) {
						t.Fatalf("next link %q is not a relative reference to /logs", next)
					}
					resp, body := e.do("GET", u.RequestURI(), "", "")
					if resp.StatusCode != 200 {
						t.Fatalf("page %d: %d %s", pages, resp.StatusCode, body)
					}
					var page []rest.LogEntry
					if err := json.Unmarshal(body, &page); err != nil {
						t.Fatal(err)
					}
					if len(page) > limit {
						t.Fatalf("page of %d entries over limit %d", len(page), limit)
					}
					got = append(got, messages(page)...)
					next = nextLink(t, resp.Header)
					if next != "" && len(page) != limit {
						t.Fatalf("a page with a next link holds %d entries, want %d", len(page), limit)
					}
				}
				var want []string
				for i := range total {
					want = append(want, fmt.Sprint(i))
				}
				if order == "desc" {
					slices.Reverse(want)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("pages = %v, want %v", got, want)
				}
			})
		}
	}
	// The default page size is 1,000: a listing of 1,001 entries has a next page.
	var more rest.CreateLogsJSONRequestBody
	for range 1001 - total {
		more = append(more, rest.LogEntryInput{ProjectId: p.Id, Message: "m", Time: ptr[int64](1000)})
	}
	if r, err := e.client.CreateLogsWithResponse(t.Context(), nil, more); err != nil || r.StatusCode() != 201 {
		t.Fatalf("seed more: %v", err)
	}
	r, _ := e.client.ListLogsWithResponse(t.Context(), &rest.ListLogsParams{ProjectId: p.Id})
	if len(*r.JSON200) != 1000 || nextLink(t, r.HTTPResponse.Header) == "" {
		t.Fatalf("default page = %d entries, Link %q; want 1000 and a next link", len(*r.JSON200), r.HTTPResponse.Header.Get("Link"))
	}
	r, _ = e.client.ListLogsWithResponse(t.Context(), &rest.ListLogsParams{ProjectId: p.Id, Limit: ptr[int32](10_000)})
	if len(*r.JSON200) != 1001 || r.HTTPResponse.Header.Get("Link") != "" {
		t.Fatalf("limit 10000 = %d entries, Link %q; want 1001 and none", len(*r.JSON200), r.HTTPResponse.Header.Get("Link"))
	}
}
