package e2e

import (
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

// TestValidationAnswersAndLinks covers the validation, pointer and link rules of the REST contract on both
// stores: oversize batches are refused before any per-entry work, error lists are capped, every
// type or range error names its field, and the next-page link is a relative reference.
func TestValidationAnswersAndLinks(t *testing.T) {
	for _, st := range e2eStores() {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				name string
				fn   func(*testing.T, storeOpener)
			}{
				{"OversizeBatchOfEmptyEntries", testOversizeBatchOfEmptyEntries},
				{"ErrorListsAreCapped", testErrorListsAreCapped},
				{"EntryTypeErrorsNameTheirField", testEntryTypeErrorsNameTheirField},
				{"ParameterRangeErrorsNameTheirParameter", testParameterRangeErrors},
				{"LinkIsRelative", testLinkIsRelative},
			} {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.fn(t, st.open)
				})
			}
		})
	}
}

// emptyEntries is a batch of n empty objects, `[{},{},…]`.
func emptyEntries(n int) string {
	var b strings.Builder
	b.Grow(3*n + 2)
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("{}")
	}
	b.WriteByte(']')
	return b.String()
}

func testOversizeBatchOfEmptyEntries(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	limit := domain.DefaultLimits().MaxBatchEntries
	for _, n := range []int{limit + 1, 20_000, 700_000} {
		start := time.Now()
		resp, body := e.do("POST", "/logs", "application/json", emptyEntries(n))
		took := time.Since(start)
		if resp.StatusCode != 413 {
			t.Fatalf("%d empty entries: %d, want 413: %.300s", n, resp.StatusCode, body)
		}
		if len(body) > maxProblemBytes {
			t.Errorf("%d empty entries: a %d-byte answer, want at most %d", n, len(body), maxProblemBytes)
		}
		if want := fmt.Sprint(limit); !strings.Contains(problemOf(t, body).Detail, want) {
			t.Errorf("detail %q does not name the limit %s", problemOf(t, body).Detail, want)
		}
		// Counting is a scan of at most MAX_BODY_BYTES; seconds would mean per-entry work.
		if took > 5*time.Second {
			t.Errorf("%d empty entries took %v to refuse", n, took)
		}
	}
	// The limit is configuration, and a batch at it is validated entry by entry.
	small := newEnv(t, open, func(c *server.Config) { c.MaxBatchEntries = 3 })
	if resp, body := small.do("POST", "/logs", "application/json", emptyEntries(4)); resp.StatusCode != 413 {
		t.Errorf("4 empty entries over a limit of 3: %d, want 413: %s", resp.StatusCode, body)
	}
	resp, body := small.do("POST", "/logs", "application/json", emptyEntries(3))
	if resp.StatusCode != 400 {
		t.Fatalf("3 empty entries at a limit of 3: %d, want 400: %s", resp.StatusCode, body)
	}
	want := []string{"/0/project_id", "/0/message", "/1/project_id", "/1/message", "/2/project_id", "/2/message"}
	if got := fieldsOf(problemOf(t, body)); !slices.Equal(got, want) {
		t.Errorf("errors name %q, want %q", got, want)
	}
}

func testErrorListsAreCapped(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	capped := domain.DefaultLimits().MaxFieldErrors
	const n = 5_000 // two problems each: project_id and message are missing
	resp, body := e.do("POST", "/logs", "application/json", emptyEntries(n))
	if resp.StatusCode != 400 {
		t.Fatalf("%d empty entries: %d, want 400: %.300s", n, resp.StatusCode, body)
	}
	if len(body) > maxProblemBytes {
		t.Errorf("a %d-byte answer, want at most %d", len(body), maxProblemBytes)
	}
	p := problemOf(t, body)
	got := fieldsOf(p)
	if len(got) != capped {
		t.Fatalf("%d errors listed, want the cap %d", len(got), capped)
	}
	if got[0] != "/0/project_id" || got[1] != "/0/message" || got[capped-1] != fmt.Sprintf("/%d/message", capped/2-1) {
		t.Errorf("errors are not in body order: %q … %q", got[:2], got[capped-1])
	}
	if want := fmt.Sprintf("%d more problems not listed", 2*n-capped); !strings.Contains(p.Detail, want) {
		t.Errorf("detail %q does not say %q", p.Detail, want)
	}

	// Wrong types and broken rules of valid-typed fields are listed together, in body order, and
	// capped the same way.
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"project_id":"x","message":"m","level":"","time":"t%d"}`, i)
	}
	b.WriteByte(']')
	resp, body = e.do("POST", "/logs", "application/json", b.String())
	p = problemOf(t, body)
	got = fieldsOf(p)
	if resp.StatusCode != 400 || len(got) != capped || got[0] != "/0/level" || got[1] != "/0/time" {
		t.Fatalf("%d, %d errors, first %q: %.300s", resp.StatusCode, len(got), got[:min(2, len(got))], body)
	}
	if want := fmt.Sprintf("%d more problems not listed", 2*n-capped); !strings.Contains(p.Detail, want) {
		t.Errorf("detail %q does not say %q", p.Detail, want)
	}
}

func testEntryTypeErrorsNameTheirField(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	ok := fmt.Sprintf(`{"project_id":%q,"message":"fine"}`, p.Id)
	entry := func(extra string) string {
		return fmt.Sprintf(`{"project_id":%q,"message":"m",%s}`, p.Id, extra)
	}
	type field struct{ pointer, detail string }
	cases := []struct {
		name string
		body string
		want []field
	}{
		{"time just over int64", `[` + ok + `,` + entry(`"time":9223372036854775808`) + `]`,
			[]field{{"/1/time", "must be between -9223372036854775808 and 9223372036854775807"}}},
		{"time just under int64", `[` + entry(`"time":-9223372036854775809`) + `]`,
			[]field{{"/0/time", "must be between -9223372036854775808 and 9223372036854775807"}}},
		{"time with exponent", `[` + entry(`"time":1e3`) + `]`, []field{{"/0/time", "must be an integer"}}},
		{"time a string", `[` + ok + `,` + ok + `,` + ok + `,` + entry(`"time":"now"`) + `]`, []field{{"/3/time", "must be an integer"}}},
		{"time null", `[` + entry(`"time":null`) + `]`, []field{{"/0/time", "must be an integer"}}},
		{"missing message", fmt.Sprintf(`[{"project_id":%q}]`, p.Id), []field{{"/0/message", "is required"}}},
		{"project_id a number", `[{"project_id":5,"message":"m"}]`, []field{{"/0/project_id", "must be a string"}}},
		{"entry not an object", `[` + ok + `,[1,2],"x",null]`,
			[]field{{"/1", "must be an object"}, {"/2", "must be an object"}, {"/3", "must be an object"}}},
		{"every problem of one entry", `[{"message":{},"level":7,"subject":true,"user_id":[],"time":"x"}]`, []field{
			{"/0/project_id", "is required"}, {"/0/message", "must be a string"}, {"/0/level", "must be a string"},
			{"/0/subject", "must be a string"}, {"/0/user_id", "must be a string"}, {"/0/time", "must be an integer"}}},
		{"not an array", `{"project_id":"x","message":"m"}`, []field{{"", "must be an array of entries"}}},
		{"empty array", `[]`, []field{{"", "must not be empty"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := e.do("POST", "/logs", "application/json", c.body)
			if resp.StatusCode != 400 {
				t.Fatalf("status %d, want 400: %.300s", resp.StatusCode, body)
			}
			pr := problemOf(t, body)
			var got []field
			for _, f := range *pr.Errors {
				if f.Pointer == nil {
					t.Fatalf("an error without a pointer: %s", body)
				}
				got = append(got, field{*f.Pointer, f.Detail})
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("errors = %q, want %q", got, c.want)
			}
		})
	}
	if n := e.logCount(p.Id); n != 0 {
		t.Fatalf("rejected batches stored %d entries", n)
	}
}

func testParameterRangeErrors(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	q := "/logs?project_id=" + p.Id
	cases := []struct{ query, param string }{
		{"&start_time=9223372036854775808", "start_time"},
		{"&start_time=-9223372036854775809", "start_time"},
		{"&end_time=99999999999999999999", "end_time"},
		{"&end_time=1e3", "end_time"},
		{"&limit=2147483648", "limit"},
		{"&limit=99999999999999999999", "limit"},
		{"&limit=1.0", "limit"},
	}
	for _, method := range []string{"GET", "DELETE"} {
		for _, c := range cases {
			if method == "DELETE" && c.param == "limit" {
				continue // DELETE /logs takes no limit
			}
			t.Run(method+c.query, func(t *testing.T) {
				resp, body := e.do(method, q+c.query, "", "")
				if resp.StatusCode != 400 {
					t.Fatalf("status %d, want 400: %s", resp.StatusCode, body)
				}
				if got := fieldsOf(problemOf(t, body)); !slices.Equal(got, []string{"?" + c.param}) {
					t.Errorf("errors name %q, want only ?%s: %s", got, c.param, body)
				}
			})
		}
	}
}

func testLinkIsRelative(t *testing.T, open storeOpener) {
	// Served to any Host, as a service with keys or on an allowed open network is.
	e := newEnv(t, open, func(c *server.Config) { c.AllowOpen = true })
	p := e.project("p")
	seed(t, e, p.Id, 5)
	const evil = "evil.example:666"
	req, err := http.NewRequestWithContext(t.Context(), "GET", e.url+"/logs?project_id="+p.Id+"&limit=2&order=desc", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = evil
	req.Header.Set("X-Forwarded-Host", evil)
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	link := resp.Header.Get("Link")
	if strings.Contains(link, "evil") || !strings.HasPrefix(link, "</logs?") {
		t.Fatalf("Link %q: want a relative reference that ignores the Host header", link)
	}
	next := nextLink(t, resp.Header)
	ref, err := url.Parse(next)
	if err != nil || ref.IsAbs() || ref.Host != "" {
		t.Fatalf("next %q is not a relative reference (%v)", next, err)
	}
	q := ref.Query()
	if q.Get("project_id") != p.Id || q.Get("limit") != "2" || q.Get("order") != "desc" || q.Get("cursor") == "" || len(q["cursor"]) != 1 {
		t.Fatalf("next %q does not keep the query and add one cursor", next)
	}

	// Resolved against the request's URL (RFC 3986 §5), it reads the next page.
	base, _ := url.Parse(e.url + "/logs")
	var got []string
	for next != "" {
		r, err := http.NewRequestWithContext(t.Context(), "GET", base.ResolveReference(ref).String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := e.http.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		var page []rest.LogEntry
		page, err = decodeEntries(resp)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, messages(page)...)
		next = nextLink(t, resp.Header)
		if ref, err = url.Parse(next); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"2", "1", "0"}; !slices.Equal(got, want) {
		t.Errorf("pages after the first, by resolving Link = %v, want %v", got, want)
	}

	// The generated client follows it through its parameters: the cursor is all it needs.
	first, err := e.client.ListLogsWithResponse(t.Context(), &rest.ListLogsParams{ProjectId: p.Id, Limit: ptr[int32](3)})
	if err != nil || first.JSON200 == nil {
		t.Fatalf("first page: %v %d", err, first.StatusCode())
	}
	ref, _ = url.Parse(nextLink(t, first.HTTPResponse.Header))
	cursor := ref.Query().Get("cursor")
	second, err := e.client.ListLogsWithResponse(t.Context(), &rest.ListLogsParams{ProjectId: p.Id, Limit: ptr[int32](3), Cursor: &cursor})
	if err != nil || second.JSON200 == nil {
		t.Fatalf("second page: %v %d", err, second.StatusCode())
	}
	if got, want := append(messages(*first.JSON200), messages(*second.JSON200)...), []string{"0", "1", "2", "3", "4"}; !slices.Equal(got, want) {
		t.Errorf("pages through the generated client = %v, want %v", got, want)
	}
	if l := second.HTTPResponse.Header.Get("Link"); l != "" {
		t.Errorf("the last page has Link %q", l)
	}
}

// decodeEntries reads a 200 listing.
func decodeEntries(resp *http.Response) ([]rest.LogEntry, error) {
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	var page []rest.LogEntry
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		return nil, fmt.Errorf("decode page: %w", err)
	}
	return page, nil
}
