package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"testing"

	"example.com/obsvc/api/rest"
)

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
