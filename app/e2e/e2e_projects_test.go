package e2e

import (
	"bytes"
	"fmt"
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
