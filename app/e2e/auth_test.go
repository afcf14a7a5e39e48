package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
	"example.com/obsvc/domain"
)

func TestAuthorizationMatrix(t *testing.T) {
	forEachStore(t, testAuthorizationMatrix)
}

func testAuthorizationMatrix(t *testing.T, open storeOpener) {
	st := open(t)
	a, b := seedProjects(t, st)
	cfg := server.DefaultConfig()
	cfg.APIKeys = strings.Join([]string{apitest.KeyLine("admin", "admin-secret"), apitest.KeyLine("project "+a.ID, "key-a"), apitest.KeyLine("project "+b.ID, "key-b")}, ",")
	svc, srv := servetest.Serve(t, cfg, st, nil)
	adminCtx := domain.WithPrincipal(t.Context(), domain.Principal{Admin: true})
	client := &http.Client{Transport: apitest.NewTransport(t, nil)}

	who := []struct{ name, header string }{
		{"no key", ""},
		{"wrong key", "Bearer not-a-key"},
		{"basic scheme", "Basic " + "YWRtaW4tc2VjcmV0"},
		{"admin key", "Bearer admin-secret"},
		{"own project key", "bearer key-a"},
		{"other project's key", "Bearer key-b"},
	}
	newProject := func() string {
		p, err := svc.Core.CreateProject(adminCtx, domain.ProjectInput{Name: "throwaway"})
		if err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	logs := fmt.Sprintf(`[{"project_id":%q,"message":"m"}]`, a.ID)
	// An entry of project a, for its context.
	if _, err := svc.Core.CreateLogs(adminCtx, []domain.LogInput{{ProjectID: a.ID, Message: ptr("anchor")}}, ""); err != nil {
		t.Fatal(err)
	}
	var entryID string
	if err := svc.Core.ListLogs(adminCtx, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: a.ID}, Limit: 1}, func(p domain.Page) error {
		for e, err := range p.Entries {
			if err != nil {
				return err
			}
			entryID = e.ID
		}
		return nil
	}); err != nil || entryID == "" {
		t.Fatalf("the anchor entry: %q, %v", entryID, err)
	}
	routes := []struct {
		name, method string
		path         func() string
		body         string
		want         [6]int // per who
	}{
		{"list projects", "GET", func() string { return "/projects" }, "", [6]int{401, 401, 401, 200, 403, 403}},
		{"create project", "POST", func() string { return "/projects" }, `{"name":"n"}`, [6]int{401, 401, 401, 201, 403, 403}},
		{"get project", "GET", func() string { return "/projects/" + a.ID }, "", [6]int{401, 401, 401, 200, 200, 403}},
		{"update project", "PUT", func() string { return "/projects/" + a.ID }, `{"name":"n"}`, [6]int{401, 401, 401, 200, 403, 403}},
		{"delete project", "DELETE", func() string { return "/projects/" + newProject() }, "", [6]int{401, 401, 401, 204, 403, 403}},
		{"create logs", "POST", func() string { return "/logs" }, logs, [6]int{401, 401, 401, 201, 201, 403}},
		{"list logs", "GET", func() string { return "/logs?project_id=" + a.ID }, "", [6]int{401, 401, 401, 200, 200, 403}},
		{"delete logs", "DELETE", func() string { return "/logs?project_id=" + a.ID + "&log_level=none" }, "", [6]int{401, 401, 401, 200, 200, 403}},
		{"log facets", "GET", func() string { return "/logs/facets?project_id=" + a.ID + "&start_time=0&end_time=1&field=level" }, "", [6]int{401, 401, 401, 200, 200, 403}},
		{"log context", "GET", func() string { return "/logs/context?project_id=" + a.ID + "&id=" + entryID }, "", [6]int{401, 401, 401, 200, 200, 403}},
		{"export logs", "GET", func() string { return "/logs/export?project_id=" + a.ID + "&format=csv" }, "", [6]int{401, 401, 401, 200, 200, 403}},
		{"log fields", "GET", func() string { return "/logs/fields?project_id=" + a.ID + "&start_time=0&end_time=1" }, "", [6]int{401, 401, 401, 200, 200, 403}},
		{"make hat", "POST", func() string { return "/twirp/rpc.example.haberdasher.Haberdasher/MakeHat" }, `{"inches":4}`, [6]int{401, 401, 401, 200, 200, 200}},
		{"metrics", "GET", func() string { return "/metrics" }, "", [6]int{401, 401, 401, 200, 403, 403}},
		{"liveness", "GET", func() string { return "/healthz" }, "", [6]int{200, 200, 200, 200, 200, 200}},
		{"readiness", "GET", func() string { return "/readyz" }, "", [6]int{200, 200, 200, 200, 200, 200}},
	}
	for _, rt := range routes {
		for i, w := range who {
			t.Run(rt.name+"/"+w.name, func(t *testing.T) {
				c := client
				if rt.name == "metrics" || rt.name == "liveness" || rt.name == "readiness" {
					c = http.DefaultClient // outside the API spec
				}
				req, _ := http.NewRequestWithContext(t.Context(), rt.method, srv.URL+rt.path(), strings.NewReader(rt.body))
				if rt.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				if w.header != "" {
					req.Header.Set("Authorization", w.header)
				}
				resp, body := roundTrip(t, c, req)
				if resp.StatusCode != rt.want[i] {
					t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, rt.want[i], body)
				}
				switch {
				case resp.StatusCode == 401 && strings.HasPrefix(rt.path(), "/twirp/"):
					if !strings.Contains(string(body), `"code":"unauthenticated"`) {
						t.Errorf("Twirp 401 body %s", body)
					}
				case resp.StatusCode == 401:
					if resp.Header.Get("WWW-Authenticate") != "Bearer" || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
						t.Errorf("401 without WWW-Authenticate Bearer or problem body: %v %s", resp.Header, body)
					}
				case resp.StatusCode == 403 && strings.Contains(string(body), "key-a"):
					t.Errorf("a 403 echoes a secret: %s", body)
				}
			})
		}
	}
	// The project key's writes touched project a only; the other key's attempts stored nothing.
	if n := storetest.CountEntries(t, st, b.ID); n != 0 {
		t.Errorf("project b has %d entries after writes aimed at a", n)
	}
}

func TestProjectKeyBatchNamingAnotherProjectIsForbiddenWithPointers(t *testing.T) {
	st := openSQLiteStore(t)
	a, b := seedProjects(t, st)
	cfg := server.DefaultConfig()
	cfg.APIKeys = apitest.KeyLine("project "+a.ID, "key-a")
	_, srv := servetest.Serve(t, cfg, st, nil)
	body := fmt.Sprintf(`[{"project_id":%[1]q,"message":"ok"},{"project_id":%[2]q,"message":"not mine"},{"project_id":%[1]q,"message":"ok"}]`, a.ID, b.ID)
	req, _ := http.NewRequest("POST", srv.URL+"/logs", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer key-a")
	resp, err := (&http.Client{Transport: apitest.NewTransport(t, nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(got), `"pointer":"/1/project_id"`) {
		t.Fatalf("mixed batch = %d %s, want 403 naming /1/project_id", resp.StatusCode, got)
	}
	if n := storetest.CountEntries(t, st, a.ID); n != 0 {
		t.Errorf("a forbidden batch stored %d entries", n)
	}
}
