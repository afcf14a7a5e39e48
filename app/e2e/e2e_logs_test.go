package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
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
