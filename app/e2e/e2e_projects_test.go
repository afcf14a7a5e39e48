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
)

func testProjectsLifecycle(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	ctx := t.Context()

	list, err := e.client.ListProjectsWithResponse(ctx)
	if err != nil || list.StatusCode() != 200 || list.JSON200 == nil || len(*list.JSON200) != 0 {
		t.Fatalf("empty list = %v %d %s", err, list.StatusCode(), list.Body)
	}

	created, err := e.client.CreateProjectWithResponse(ctx, rest.ProjectInput{Name: "checkout"})
	if err != nil || created.StatusCode() != 201 {
		t.Fatalf("create = %v %d %s", err, created.StatusCode(), created.Body)
	}
	p := *created.JSON201
	if loc := created.HTTPResponse.Header.Get("Location"); loc != "/projects/"+p.Id {
		t.Errorf("Location = %q, want /projects/%s", loc, p.Id)
	}
	if p.Name != "checkout" || !p.CreatedAt.Equal(p.UpdatedAt) || time.Since(p.CreatedAt) > time.Minute {
		t.Errorf("created project = %+v", p)
	}
	if len(p.Id) != 36 || p.Id[14] != '7' {
		t.Errorf("id %q is not a UUIDv7", p.Id)
	}

	got, err := e.client.GetProjectWithResponse(ctx, p.Id)
	if err != nil || got.StatusCode() != 200 {
		t.Fatalf("get = %v %d", err, got.StatusCode())
	}
	if !bytes.Equal(bytes.TrimSpace(got.Body), bytes.TrimSpace(created.Body)) {
		t.Errorf("read back %s, created %s: a resource must read back exactly as returned", got.Body, created.Body)
	}

	second := e.project("second")
	third := e.project("third")
	list, _ = e.client.ListProjectsWithResponse(ctx)
	var ids []string
	for _, q := range *list.JSON200 {
		ids = append(ids, q.Id)
	}
	if want := []string{p.Id, second.Id, third.Id}; !slices.Equal(ids, want) {
		t.Errorf("list = %v, want oldest first %v", ids, want)
	}

	// Server-owned fields sent by a client are refused, naming each, on create and on update
	// (TestNothingSentIsIgnored has the other members a project body refuses).
	resp, body := e.do("POST", "/projects", "application/json", `{"name":"own","id":"x","created_at":"2000-01-01T00:00:00Z","updated_at":"2000-01-01T00:00:00Z","extra":1}`)
	named := fieldsOf(problemOf(t, body))
	slices.Sort(named)
	if want := []string{"/created_at", "/extra", "/id", "/updated_at"}; resp.StatusCode != 400 || !slices.Equal(named, want) {
		t.Errorf("server-owned and unknown fields = %d naming %q, want 400 naming %q: %s", resp.StatusCode, named, want, body)
	}

	// Updates: the name changes, updated_at advances even within one clock tick, created_at stays.
	prev := p
	for i := range 3 {
		up, err := e.client.UpdateProjectWithResponse(ctx, p.Id, rest.ProjectInput{Name: fmt.Sprintf("renamed-%d", i)})
		if err != nil || up.StatusCode() != 200 {
			t.Fatalf("update = %v %d %s", err, up.StatusCode(), up.Body)
		}
		u := *up.JSON200
		if u.Name != fmt.Sprintf("renamed-%d", i) || !u.UpdatedAt.After(prev.UpdatedAt) || !u.CreatedAt.Equal(p.CreatedAt) || u.Id != p.Id {
			t.Fatalf("update %d = %+v after %+v", i, u, prev)
		}
		again, _ := e.client.GetProjectWithResponse(ctx, p.Id)
		if !bytes.Equal(bytes.TrimSpace(again.Body), bytes.TrimSpace(up.Body)) {
			t.Errorf("read back %s, updated %s", again.Body, up.Body)
		}
		prev = u
	}
	resp, body = e.do("PUT", "/projects/"+p.Id, "application/json", `{"name":"with-owned","updated_at":"2000-01-01T00:00:00Z"}`)
	if named := fieldsOf(problemOf(t, body)); resp.StatusCode != 400 || !slices.Equal(named, []string{"/updated_at"}) {
		t.Errorf("update with updated_at = %d naming %q, want 400 naming /updated_at: %s", resp.StatusCode, named, body)
	}

	del, err := e.client.DeleteProjectWithResponse(ctx, p.Id)
	if err != nil || del.StatusCode() != 204 || len(del.Body) != 0 {
		t.Fatalf("delete = %v %d %q", err, del.StatusCode(), del.Body)
	}
	for _, check := range []func() int{
		func() int { r, _ := e.client.GetProjectWithResponse(ctx, p.Id); return r.StatusCode() },
		func() int { r, _ := e.client.DeleteProjectWithResponse(ctx, p.Id); return r.StatusCode() },
		func() int {
			r, _ := e.client.UpdateProjectWithResponse(ctx, p.Id, rest.ProjectInput{Name: "x"})
			return r.StatusCode()
		},
	} {
		if got := check(); got != 404 {
			t.Errorf("after delete: status %d, want 404", got)
		}
	}
}

func testProjectInputErrors(t *testing.T, open storeOpener) {
	e := newEnv(t, open, func(c *server.Config) { c.MaxBodyBytes = 4096 })
	p := e.project("target")
	cases := []struct {
		name, contentType, body string
		status                  int
		fields                  []string
	}{
		{"empty name", "application/json", `{"name":""}`, 400, []string{"/name"}},
		{"blank name", "application/json", `{"name":"  \t "}`, 400, []string{"/name"}},
		{"name too long", "application/json", `{"name":"` + strings.Repeat("n", 257) + `"}`, 400, []string{"/name"}},
		{"missing name", "application/json", `{}`, 400, []string{"/name"}},
		{"name of wrong type", "application/json", `{"name":5}`, 400, []string{"/name"}},
		{"null name", "application/json", `{"name":null}`, 400, []string{"/name"}},
		{"not an object", "application/json", `["name"]`, 400, []string{""}},
		{"malformed JSON", "application/json", `{"name":`, 400, []string{""}},
		{"empty body", "application/json", ``, 400, nil},
		{"not JSON", "text/plain", `name=x`, 415, nil},
		{"form post", "application/x-www-form-urlencoded", `name=x`, 415, nil},
		{"no content type", "", `{"name":"x"}`, 415, nil},
		{"body over the limit", "application/json", `{"name":"x","pad":"` + strings.Repeat("p", 5000) + `"}`, 413, nil},
	}
	for _, method := range []string{"POST", "PUT"} {
		for _, c := range cases {
			t.Run(method+" "+c.name, func(t *testing.T) {
				path := "/projects"
				if method == "PUT" {
					path += "/" + p.Id
				}
				resp, body := e.do(method, path, c.contentType, c.body)
				wantAnswer(t, resp, body, c.status, c.fields)
			})
		}
	}
	// Nothing of the above was stored or changed.
	list, _ := e.client.ListProjectsWithResponse(t.Context())
	if n := len(*list.JSON200); n != 1 {
		t.Errorf("%d projects after bad input, want 1", n)
	}
	got, _ := e.client.GetProjectWithResponse(t.Context(), p.Id)
	if got.JSON200.Name != "target" || !got.JSON200.UpdatedAt.Equal(p.UpdatedAt) {
		t.Errorf("a rejected update changed the project: %+v", got.JSON200)
	}
	// Limits are characters, not bytes: 256 multi-byte characters are fine.
	r, _ := e.client.CreateProjectWithResponse(t.Context(), rest.ProjectInput{Name: strings.Repeat("é", 256)})
	if r.StatusCode() != 201 {
		t.Errorf("256 two-byte characters: status %d, want 201", r.StatusCode())
	}
}

func testProjectIDsThatDoNotResolve(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	for _, id := range []string{server.NewID(), "not-a-uuid", "01936F0E-8C2A-7B3E-9D4F-2A6B8C0D1E2F", "' OR 1=1 --", "..%2F..%2Fetc%2Fpasswd", "%00", strings.Repeat("a", 300)} {
		for _, method := range []string{"GET", "PUT", "DELETE"} {
			resp, body := e.do(method, "/projects/"+id, "application/json", `{"name":"x"}`)
			if resp.StatusCode != 404 {
				t.Errorf("%s /projects/%s = %d, want 404: %s", method, id, resp.StatusCode, body)
			}
		}
	}
}

func testDeleteProjectDeletesLogs(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	keep := e.project("keep")
	seed(t, e, p.Id, 5)
	seed(t, e, keep.Id, 5)
	if r, _ := e.client.DeleteProjectWithResponse(t.Context(), p.Id); r.StatusCode() != 204 {
		t.Fatalf("delete = %d", r.StatusCode())
	}
	if n := e.logCount(p.Id); n != 0 {
		t.Errorf("%d entries outlived their project", n)
	}
	if n := e.logCount(keep.Id); n != 5 {
		t.Errorf("another project's entries: %d, want 5", n)
	}
	if r, _ := e.client.ListLogsWithResponse(t.Context(), &rest.ListLogsParams{ProjectId: p.Id}); r.StatusCode() != 404 {
		t.Errorf("list logs of a deleted project = %d, want 404", r.StatusCode())
	}
}

const dayMs = int64(24 * time.Hour / time.Millisecond)

// retentionOf is a project's retention as its JSON shows it: a number or "null".
func retentionOf(t *testing.T, body []byte) string {
	t.Helper()
	var p map[string]json.RawMessage
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("not a project: %s", body)
	}
	r, ok := p["retention_days"]
	if !ok {
		t.Fatalf("retention_days missing from %s", body)
	}
	return string(r)
}

func testRetentionValidation(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	for _, c := range []struct {
		body string
		want int
		ret  string
	}{
		{`{"name":"p"}`, 201, "null"},
		{`{"name":"p","retention_days":null}`, 201, "null"},
		{`{"name":"p","retention_days":1}`, 201, "1"},
		{`{"name":"p","retention_days":3650}`, 201, "3650"},
		{`{"name":"p","retention_days":0}`, 400, ""},
		{`{"name":"p","retention_days":3651}`, 400, ""},
		{`{"name":"p","retention_days":-5}`, 400, ""},
		{`{"name":"p","retention_days":"30"}`, 400, ""},
		{`{"name":"p","retention_days":1.5}`, 400, ""},
	} {
		resp, body := e.do("POST", "/projects", "application/json", c.body)
		if resp.StatusCode != c.want {
			t.Errorf("POST %s = %d %s, want %d", c.body, resp.StatusCode, body, c.want)
			continue
		}
		if c.want == 201 {
			if got := retentionOf(t, body); got != c.ret {
				t.Errorf("POST %s: retention_days %s, want %s", c.body, got, c.ret)
			}
			continue
		}
		if f := fieldsOf(problemOf(t, body)); !slices.Equal(f, []string{"/retention_days"}) {
			t.Errorf("POST %s: errors %v, want /retention_days", c.body, f)
		}
	}
	// PUT replaces: without retention_days the project keeps its entries forever.
	resp, body := e.do("POST", "/projects", "application/json", `{"name":"p","retention_days":7}`)
	id := problemless(t, resp, body)
	resp, body = e.do("PUT", "/projects/"+id, "application/json", `{"name":"q"}`)
	if resp.StatusCode != 200 || retentionOf(t, body) != "null" {
		t.Errorf("PUT without retention_days = %d %s, want 200 with null", resp.StatusCode, body)
	}
	resp, body = e.do("PUT", "/projects/"+id, "application/json", `{"name":"q","retention_days":3651}`)
	if resp.StatusCode != 400 {
		t.Errorf("PUT with 3651 = %d %s, want 400", resp.StatusCode, body)
	}
}

// problemless returns the id of a created project, failing on anything but 201.
func problemless(t *testing.T, resp *http.Response, body []byte) string {
	t.Helper()
	var p rest.Project
	if resp.StatusCode != 201 || json.Unmarshal(body, &p) != nil {
		t.Fatalf("create = %d %s", resp.StatusCode, body)
	}
	return p.Id
}

func testRetentionMergePatch(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	resp, body := e.do("POST", "/projects", "application/json", `{"name":"p","retention_days":30}`)
	id := problemless(t, resp, body)
	const mp = "application/merge-patch+json"
	for _, c := range []struct {
		ct, body string
		want     int
		name     string
		ret      string
	}{
		{mp, `{}`, 200, "p", "30"},
		{mp, `{"name":"renamed"}`, 200, "renamed", "30"},
		{mp, `{"retention_days":7}`, 200, "renamed", "7"},
		{mp, `{"retention_days":null}`, 200, "renamed", "null"},
		{mp, `{"retention_days":0}`, 400, "", ""},
		{mp, `{"retention_days":3651}`, 400, "", ""},
		{mp, `{"retention_days":"7"}`, 400, "", ""},
		{mp, `{"name":null}`, 400, "", ""},
		{mp, `[]`, 400, "", ""},
		{mp, `"x"`, 400, "", ""},
		{mp, `null`, 400, "", ""},
		{"application/json", `{"retention_days":7}`, 415, "", ""},
		{"text/plain", `{"retention_days":7}`, 415, "", ""},
	} {
		resp, body := e.do("PATCH", "/projects/"+id, c.ct, c.body)
		if resp.StatusCode != c.want {
			t.Errorf("PATCH %s %s = %d %s, want %d", c.ct, c.body, resp.StatusCode, body, c.want)
			continue
		}
		if c.want != 200 {
			continue
		}
		var p rest.Project
		_ = json.Unmarshal(body, &p)
		if p.Name != c.name || retentionOf(t, body) != c.ret {
			t.Errorf("PATCH %s = %s, want name %s, retention %s", c.body, body, c.name, c.ret)
		}
		_, got := e.do("GET", "/projects/"+id, "", "")
		if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(body)) {
			t.Errorf("read back %s, patched %s", got, body)
		}
	}
	if resp, body := e.do("PATCH", "/projects/"+server.NewID(), mp, `{}`); resp.StatusCode != 404 {
		t.Errorf("PATCH of no project = %d %s, want 404", resp.StatusCode, body)
	}
	// Every way of reading projects shows the field.
	_, list := e.do("GET", "/projects", "", "")
	if !strings.Contains(string(list), `"retention_days":null`) {
		t.Errorf("list without retention_days: %s", list)
	}
}

func listTimes(t *testing.T, e *env, id string) []int64 {
	t.Helper()
	resp, body := e.do("GET", "/logs?project_id="+id, "", "")
	var es []rest.LogEntry
	if resp.StatusCode != 200 || json.Unmarshal(body, &es) != nil {
		t.Fatalf("list = %d %s", resp.StatusCode, body)
	}
	var out []int64
	for _, x := range es {
		out = append(out, x.Time)
	}
	return out
}

func testRetentionHidesAndRefuses(t *testing.T, open storeOpener) {
	e, p := newEnvWithProject(t, open)
	now := time.Now().UnixMilli()
	old, recent := now-10*dayMs, now-time.Hour.Milliseconds()
	batch := fmt.Sprintf(`[{"project_id":%q,"message":"old","time":%d},{"project_id":%q,"message":"recent","time":%d}]`, p.Id, old, p.Id, recent)
	if resp, body := e.do("POST", "/logs", "application/json", batch); resp.StatusCode != 201 {
		t.Fatalf("batch = %d %s", resp.StatusCode, body)
	}
	if got := listTimes(t, e, p.Id); !slices.Equal(got, []int64{old, recent}) {
		t.Fatalf("kept forever: listed %v", got)
	}
	// Shortening the retention hides the old entry from the next read on.
	if resp, body := e.do("PATCH", "/projects/"+p.Id, "application/merge-patch+json", `{"retention_days":1}`); resp.StatusCode != 200 {
		t.Fatalf("PATCH = %d %s", resp.StatusCode, body)
	}
	if got := listTimes(t, e, p.Id); !slices.Equal(got, []int64{recent}) {
		t.Fatalf("after shortening the retention: listed %v, want only %d", got, recent)
	}
	// A batch holding an expired entry is refused whole, naming it.
	batch = fmt.Sprintf(`[{"project_id":%q,"message":"fine"},{"project_id":%q,"message":"late","time":%d},{"project_id":%q,"message":"later","time":1}]`, p.Id, p.Id, old, p.Id)
	resp, body := e.do("POST", "/logs", "application/json", batch)
	if resp.StatusCode != 422 {
		t.Fatalf("expired batch = %d %s, want 422", resp.StatusCode, body)
	}
	if f := fieldsOf(problemOf(t, body)); !slices.Equal(f, []string{"/1/time", "/2/time"}) {
		t.Fatalf("errors %v, want /1/time and /2/time", f)
	}
	if n := e.logCount(p.Id); n != 2 {
		t.Fatalf("%d entries stored after a refused batch, want the 2 from before", n)
	}
	// DELETE removes what matches, expired or not.
	resp, body = e.do("DELETE", "/logs?project_id="+p.Id, "", "")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"deleted":2`) {
		t.Fatalf("DELETE = %d %s, want 2 deleted", resp.StatusCode, body)
	}
}
