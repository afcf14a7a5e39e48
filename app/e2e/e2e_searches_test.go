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

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
	"example.com/obsvc/domain"
)

// saveSearch saves a search through the API and returns it.
func (e *env) saveSearch(projectID, name, query string, rangeSeconds int32) rest.Search {
	e.t.Helper()
	r, err := e.client.CreateSearchWithResponse(e.t.Context(), rest.SearchInput{ProjectId: projectID, Name: name, Query: query, RangeSeconds: rangeSeconds})
	if err != nil || r.JSON201 == nil {
		e.t.Fatalf("save search %q: %v, status %d %s", name, err, r.StatusCode(), r.Body)
	}
	return *r.JSON201
}

func (e *env) searchNames(projectID string) []string {
	e.t.Helper()
	r, err := e.client.ListSearchesWithResponse(e.t.Context(), &rest.ListSearchesParams{ProjectId: projectID})
	if err != nil || r.JSON200 == nil {
		e.t.Fatalf("list searches: %v, status %d %s", err, r.StatusCode(), r.Body)
	}
	names := []string{}
	for _, s := range *r.JSON200 {
		names = append(names, s.Name)
	}
	return names
}

func testSavedSearchesRoundTrip(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	ctx := t.Context()
	if names := e.searchNames(p.Id); len(names) != 0 {
		t.Fatalf("a new project has searches %q", names)
	}
	created, err := e.client.CreateSearchWithResponse(ctx, rest.SearchInput{ProjectId: p.Id, Name: "checkout errors", Query: "level:error AND subject:checkout", RangeSeconds: 3600})
	if err != nil || created.StatusCode() != 201 {
		t.Fatalf("create = %v %d %s", err, created.StatusCode(), created.Body)
	}
	s := *created.JSON201
	if loc := created.HTTPResponse.Header.Get("Location"); loc != "/searches/"+s.Id {
		t.Errorf("Location = %q, want /searches/%s", loc, s.Id)
	}
	if len(s.Id) != 36 || s.Id[14] != '7' {
		t.Errorf("id %q is not a UUIDv7", s.Id)
	}
	if s.ProjectId != p.Id || s.Name != "checkout errors" || s.Query != "level:error AND subject:checkout" || s.RangeSeconds != 3600 ||
		!s.CreatedAt.Equal(s.UpdatedAt) || time.Since(s.CreatedAt) > time.Minute {
		t.Errorf("created search = %+v", s)
	}
	got, err := e.client.GetSearchWithResponse(ctx, s.Id)
	if err != nil || got.StatusCode() != 200 {
		t.Fatalf("get = %v %d %s", err, got.StatusCode(), got.Body)
	}
	if !bytes.Equal(bytes.TrimSpace(got.Body), bytes.TrimSpace(created.Body)) {
		t.Errorf("read back %s, created %s: a resource must read back exactly as returned", got.Body, created.Body)
	}
	// An empty query (every entry) and the longest range are kept; the list is by name, bytewise.
	all := e.saveSearch(p.Id, "Everything", "", domain.MaxSearchRangeSeconds)
	e.saveSearch(p.Id, "b", "-level:debug", 60)
	if names, want := e.searchNames(p.Id), []string{"Everything", "b", "checkout errors"}; !slices.Equal(names, want) {
		t.Errorf("list = %q, want %q", names, want)
	}
	if all.Query != "" || all.RangeSeconds != domain.MaxSearchRangeSeconds {
		t.Errorf("saved %+v", all)
	}
	// A name's bound is in characters, not bytes: 200 two-byte characters fit.
	long := e.saveSearch(p.Id, strings.Repeat("é", domain.MaxSearchNameChars), "", 60)
	if del, err := e.client.DeleteSearchWithResponse(ctx, long.Id); err != nil || del.StatusCode() != 204 {
		t.Fatalf("delete the long-named search: %v %d", err, del.StatusCode())
	}

	// A merge patch: what it names changes, the rest stays; updated_at advances, created_at stays.
	prev := s
	for i, patch := range []string{`{"range_seconds":60}`, `{"name":"renamed"}`, `{"query":"level:warn","name":"renamed again"}`, `{}`} {
		resp, body := e.do("PATCH", "/searches/"+s.Id, "application/merge-patch+json", patch)
		if resp.StatusCode != 200 {
			t.Fatalf("patch %s = %d %s", patch, resp.StatusCode, body)
		}
		u := decode[rest.Search](t, body)
		if !u.UpdatedAt.After(prev.UpdatedAt) || !u.CreatedAt.Equal(s.CreatedAt) || u.Id != s.Id || u.ProjectId != p.Id {
			t.Fatalf("patch %d: %+v after %+v", i, u, prev)
		}
		prev = u
	}
	if prev.Name != "renamed again" || prev.Query != "level:warn" || prev.RangeSeconds != 60 {
		t.Errorf("after the patches: %+v", prev)
	}
	patched, err := e.client.PatchSearchWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, s.Id, rest.SearchPatch{RangeSeconds: ptr[int32](120)})
	if err != nil || patched.JSON200 == nil || patched.JSON200.RangeSeconds != 120 || patched.JSON200.Name != "renamed again" {
		t.Fatalf("patch through the client: %v %d %s", err, patched.StatusCode(), patched.Body)
	}

	del, err := e.client.DeleteSearchWithResponse(ctx, s.Id)
	if err != nil || del.StatusCode() != 204 {
		t.Fatalf("delete = %v %d %s", err, del.StatusCode(), del.Body)
	}
	for _, method := range []string{"GET", "DELETE"} {
		resp, body := e.do(method, "/searches/"+s.Id, "", "")
		wantAnswer(t, resp, body, 404, nil)
	}
	resp, body := e.do("PATCH", "/searches/"+s.Id, "application/merge-patch+json", `{"name":"x"}`)
	wantAnswer(t, resp, body, 404, nil)
	if names, want := e.searchNames(p.Id), []string{"Everything", "b"}; !slices.Equal(names, want) {
		t.Errorf("list after the delete = %q, want %q", names, want)
	}
	// Malformed ids and the list of a project that does not exist are 404s.
	resp, body = e.do("GET", "/searches/not-an-id", "", "")
	wantAnswer(t, resp, body, 404, nil)
	resp, body = e.do("GET", "/searches?project_id=01936f0e-8c2a-7b3e-9d4f-2a6b8c0d1e2f", "", "")
	wantAnswer(t, resp, body, 404, nil)
}

func testSavedSearchErrors(t *testing.T, open storeOpener) {
	e := newEnv(t, open, func(c *server.Config) { c.MaxSearches = 3 })
	p := e.project("p")
	other := e.project("other")
	s := e.saveSearch(p.Id, "errors", "level:error", 3600)
	e.saveSearch(p.Id, "warnings", "level:warn", 3600)
	e.saveSearch(other.Id, "errors", "level:error", 3600) // the same name in another project
	body := func(name, query string, rangeSeconds int) string {
		return fmt.Sprintf(`{"project_id":%q,"name":%q,"query":%q,"range_seconds":%d}`, p.Id, name, query, rangeSeconds)
	}
	post := func(b string) (*http.Response, []byte) { return e.do("POST", "/searches", "application/json", b) }
	patch := func(b string) (*http.Response, []byte) {
		return e.do("PATCH", "/searches/"+s.Id, "application/merge-patch+json", b)
	}

	// A taken name, on create and on rename.
	resp, b := post(body("errors", "", 60))
	wantAnswer(t, resp, b, 409, []string{"/name"})
	resp, b = patch(`{"name":"warnings"}`)
	wantAnswer(t, resp, b, 409, []string{"/name"})

	// A query the parser refuses: 400 naming /query with the detail GET /logs gives, position
	// included.
	const bad = `level:error AND (a))`
	resp, b = post(body("bad", bad, 60))
	wantAnswer(t, resp, b, 400, []string{"/query"})
	saved := problemOf(t, b)
	resp, lb := e.do("GET", "/logs?project_id="+p.Id+"&query="+url.QueryEscape(bad), "", "")
	wantAnswer(t, resp, lb, 400, []string{"?query"})
	listed := problemOf(t, lb)
	if (*saved.Errors)[0].Detail != (*listed.Errors)[0].Detail || !strings.Contains((*saved.Errors)[0].Detail, " at 20") {
		t.Errorf("a saved query's error %q, GET /logs's %q: want the same, with the position", (*saved.Errors)[0].Detail, (*listed.Errors)[0].Detail)
	}
	resp, b = patch(`{"query":"(level:error"}`)
	wantAnswer(t, resp, b, 400, []string{"/query"})

	for _, c := range []struct {
		name, body string
		fields     []string
	}{
		{"range of zero", body("r", "", 0), []string{"/range_seconds"}},
		{"range past 366 days", body("r", "", domain.MaxSearchRangeSeconds+1), []string{"/range_seconds"}},
		{"empty name", body("", "", 60), []string{"/name"}},
		{"name of 201 characters", body(strings.Repeat("n", 201), "", 60), []string{"/name"}},
		{"name beginning with a space", body(" errors", "", 60), []string{"/name"}},
		{"name ending with a newline", body("errors\n", "", 60), []string{"/name"}},
		{"unknown member", `{"project_id":"` + p.Id + `","name":"n","query":"","range_seconds":60,"extra":1}`, []string{"/extra"}},
		{"server-owned id", `{"id":"x","project_id":"` + p.Id + `","name":"n","query":"","range_seconds":60}`, []string{"/id"}},
		{"no range", `{"project_id":"` + p.Id + `","name":"n","query":""}`, []string{"/range_seconds"}},
		{"a range as a string", `{"project_id":"` + p.Id + `","name":"n","query":"","range_seconds":"60"}`, []string{"/range_seconds"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, b := post(c.body)
			wantAnswer(t, resp, b, 400, c.fields)
		})
	}
	for _, c := range []struct {
		name, body string
		fields     []string
	}{
		{"null name", `{"name":null}`, []string{"/name"}},
		{"null range", `{"range_seconds":null}`, []string{"/range_seconds"}},
		{"a search stays in its project", `{"project_id":"` + other.Id + `"}`, []string{"/project_id"}},
		{"empty name", `{"name":""}`, []string{"/name"}},
		{"range of zero", `{"range_seconds":0}`, []string{"/range_seconds"}},
		{"unknown member", `{"range":60}`, []string{"/range"}},
	} {
		t.Run("patch "+c.name, func(t *testing.T) {
			resp, b := patch(c.body)
			wantAnswer(t, resp, b, 400, c.fields)
		})
	}
	resp, b = e.do("PATCH", "/searches/"+s.Id, "application/json", `{"name":"x"}`)
	wantAnswer(t, resp, b, 415, nil)

	// A project that does not exist.
	resp, b = post(`{"project_id":"01936f0e-8c2a-7b3e-9d4f-2a6b8c0d1e2f","name":"n","query":"","range_seconds":60}`)
	wantAnswer(t, resp, b, 422, []string{"/project_id"})

	// The bound: the third search fits, the fourth is a 409 that says the bound.
	e.saveSearch(p.Id, "third", "", 60)
	resp, b = post(body("fourth", "", 60))
	wantAnswer(t, resp, b, 409, nil)
	if prob := problemOf(t, b); !strings.Contains(prob.Detail, "3") {
		t.Errorf("the refusal does not say the bound: %s", b)
	}
	// Nothing refused was stored or changed.
	if names, want := e.searchNames(p.Id), []string{"errors", "third", "warnings"}; !slices.Equal(names, want) {
		t.Errorf("searches after the refusals = %q, want %q", names, want)
	}
	got, err := e.client.GetSearchWithResponse(t.Context(), s.Id)
	if err != nil || got.JSON200 == nil || *got.JSON200 != s {
		t.Errorf("the patched-at search after the refusals: %v %s, want %+v", err, got.Body, s)
	}
}

func testDeleteProjectDeletesSearches(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	p, kept := e.project("p"), e.project("kept")
	s := e.saveSearch(p.Id, "errors", "level:error", 60)
	k := e.saveSearch(kept.Id, "errors", "level:error", 60)
	del, err := e.client.DeleteProjectWithResponse(t.Context(), p.Id)
	if err != nil || del.StatusCode() != 204 {
		t.Fatalf("delete project = %v %d %s", err, del.StatusCode(), del.Body)
	}
	resp, b := e.do("GET", "/searches/"+s.Id, "", "")
	wantAnswer(t, resp, b, 404, nil)
	got, err := e.client.GetSearchWithResponse(t.Context(), k.Id)
	if err != nil || got.JSON200 == nil || *got.JSON200 != k {
		t.Errorf("another project's search after the delete: %v %d %s", err, got.StatusCode(), got.Body)
	}
}

// TestSavedSearchKeys checks what each key may do with saved searches: a project key saves,
// lists, reads, changes and deletes its own project's; another project's search is a 404, worded
// as for an id that names nothing, and that search stays as it was; another project's list or
// a save into it is a 403; the admin key does everything.
func TestSavedSearchKeys(t *testing.T) {
	forEachStore(t, testSavedSearchKeys)
}

func testSavedSearchKeys(t *testing.T, open storeOpener) {
	st := open(t)
	a, b := seedProjects(t, st)
	cfg := server.DefaultConfig()
	cfg.APIKeys = strings.Join([]string{apitest.KeyLine("admin", "admin-secret"), apitest.KeyLine("project "+a.ID, "key-a"), apitest.KeyLine("project "+b.ID, "key-b")}, ",")
	_, srv := servetest.Serve(t, cfg, st, nil)
	client := &http.Client{Transport: apitest.NewTransport(t, nil)}
	call := func(key, method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		switch method {
		case "POST":
			req.Header.Set("Content-Type", "application/json")
		case "PATCH":
			req.Header.Set("Content-Type", "application/merge-patch+json")
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, out := roundTrip(t, client, req)
		return resp.StatusCode, out
	}
	save := func(key, project, name string) (int, rest.Search) {
		t.Helper()
		code, out := call(key, "POST", "/searches", fmt.Sprintf(`{"project_id":%q,"name":%q,"query":"","range_seconds":60}`, project, name))
		if code != 201 {
			return code, rest.Search{}
		}
		return code, decode[rest.Search](t, out)
	}
	code, own := save("key-a", a.ID, "a's")
	if code != 201 {
		t.Fatalf("a project key saving into its project: %d", code)
	}
	code, theirs := save("admin-secret", b.ID, "b's")
	if code != 201 {
		t.Fatalf("the admin key saving into b: %d", code)
	}
	if code, _ := save("key-a", b.ID, "x"); code != 403 {
		t.Errorf("a project key saving into another project: %d, want 403", code)
	}
	if code, _ := save("", a.ID, "x"); code != 401 {
		t.Errorf("no key: %d, want 401", code)
	}

	unknown := "01936f0e-8c2a-7b3e-9d4f-2a6b8c0d1e2f"
	for _, c := range []struct {
		method, body string
	}{{"GET", ""}, {"PATCH", `{"name":"taken over"}`}, {"DELETE", ""}} {
		code, out := call("key-a", c.method, "/searches/"+theirs.Id, c.body)
		ucode, uout := call("key-a", c.method, "/searches/"+unknown, c.body)
		if code != 404 || ucode != 404 {
			t.Errorf("%s another project's search with a project key: %d, an unknown id %d; want 404 for both", c.method, code, ucode)
		}
		// The two answers differ in the id they quote (and their request ids), in nothing else.
		po, pu := problemOf(t, out), problemOf(t, uout)
		po.RequestId, pu.RequestId = nil, nil
		po.Detail = strings.ReplaceAll(po.Detail, theirs.Id, unknown)
		if fmt.Sprintf("%+v", po) != fmt.Sprintf("%+v", pu) {
			t.Errorf("%s: another project's search answers %s, an unknown id %s", c.method, out, uout)
		}
	}
	if code, out := call("admin-secret", "GET", "/searches/"+theirs.Id, ""); code != 200 || decode[rest.Search](t, out) != theirs {
		t.Errorf("b's search after a's key tried it: %d %s", code, out)
	}
	if code, _ := call("key-a", "GET", "/searches?project_id="+b.ID, ""); code != 403 {
		t.Errorf("a project key listing another project: %d, want 403", code)
	}
	code, out := call("key-a", "GET", "/searches?project_id="+a.ID, "")
	if list := decode[[]rest.Search](t, out); code != 200 || len(list) != 1 || list[0] != own {
		t.Errorf("a project key's own list: %d %s", code, out)
	}
	code, out = call("key-b", "GET", "/searches/"+own.Id, "")
	if code != 404 {
		t.Errorf("b's key reading a's search: %d %s", code, out)
	}
	for _, c := range []struct{ key, method, body string }{
		{"key-a", "GET", ""}, {"key-a", "PATCH", `{"name":"mine"}`}, {"admin-secret", "PATCH", `{"range_seconds":5}`}, {"key-a", "DELETE", ""},
	} {
		if code, out := call(c.key, c.method, "/searches/"+own.Id, c.body); code/100 != 2 {
			t.Errorf("%s %s of the key's own search: %d %s", c.key, c.method, code, out)
		}
	}
	if code, out := call("admin-secret", "DELETE", "/searches/"+theirs.Id, ""); code != 204 {
		t.Errorf("the admin key deleting b's search: %d %s", code, out)
	}
}

// decode reads a JSON body as a T, failing the test if it is not one.
func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %T: %v: %s", v, err, body)
	}
	return v
}
