package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/domain"
)

// storeOpener opens a fresh, empty store for one test.
type storeOpener func(t *testing.T) server.Store

func openSQLiteStore(t *testing.T) server.Store {
	t.Helper()
	s, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "e2e.db"), sqlstore.DefaultSQLiteOptions())
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// env is one running server (the real wiring, on a random loopback port) and clients for it.
// Every response the clients receive is validated against openapi.yaml.
type env struct {
	t      *testing.T
	url    string
	store  server.Store
	client *rest.ClientWithResponses
	http   *http.Client
	tr     *apitest.Transport
}

func newEnv(t *testing.T, open storeOpener, tweak func(*server.Config)) *env {
	t.Helper()
	cfg := server.DefaultConfig()
	if tweak != nil {
		tweak(&cfg)
	}
	st := open(t)
	_, srv := serve(t, cfg, st, nil)
	tr := apitest.NewTransport(t, nil)
	hc := &http.Client{Transport: tr}
	c, err := rest.NewClientWithResponses(srv.URL, rest.WithHTTPClient(hc))
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return &env{t: t, url: srv.URL, store: st, client: c, http: hc, tr: tr}
}

// do sends a raw request through the validating client.
func (e *env) do(method, path, contentType, body string) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, b
}

func (e *env) project(name string) rest.Project {
	e.t.Helper()
	r, err := e.client.CreateProjectWithResponse(e.t.Context(), rest.ProjectInput{Name: name})
	if err != nil || r.JSON201 == nil {
		e.t.Fatalf("create project: %v, status %d %s", err, r.StatusCode(), r.Body)
	}
	return *r.JSON201
}

// logCount is how many entries the store holds for a project, read past the API.
func (e *env) logCount(projectID string) int {
	e.t.Helper()
	return countEntries(e.t, e.store, projectID)
}

// countEntries reads a project's entries straight from the store; no project counts as none.
func countEntries(t *testing.T, st domain.Store, projectID string) int {
	t.Helper()
	n := 0
	err := st.ListLogs(t.Context(), domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: projectID}, Limit: 1_000_000}, func(p domain.Page) error {
		for _, err := range p.Entries {
			if err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if domain.KindOf(err) == domain.KindNotFound {
		return 0
	}
	if err != nil {
		t.Fatalf("count logs: %v", err)
	}
	return n
}

func problemOf(t *testing.T, body []byte) rest.Problem {
	t.Helper()
	var p rest.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("not a problem document: %v: %s", err, body)
	}
	return p
}

// fieldsOf lists a problem's errors as "pointer" or "?parameter" strings.
func fieldsOf(p rest.Problem) []string {
	var out []string
	if p.Errors == nil {
		return nil
	}
	for _, f := range *p.Errors {
		switch {
		case f.Pointer != nil:
			out = append(out, *f.Pointer)
		case f.Parameter != nil:
			out = append(out, "?"+*f.Parameter)
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// TestE2E runs the whole REST and Twirp contract against each store.
func TestE2E(t *testing.T) {
	for _, s := range e2eStores() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			runContract(t, s.open)
		})
	}
}

type namedStore struct {
	name string
	open storeOpener
}

func runContract(t *testing.T, open storeOpener) {
	tests := []struct {
		name string
		fn   func(*testing.T, storeOpener)
	}{
		{"ProjectsLifecycle", testProjectsLifecycle},
		{"ProjectInputErrors", testProjectInputErrors},
		{"ProjectIDsThatDoNotResolve", testProjectIDsThatDoNotResolve},
		{"LogsRoundTrip", testLogsRoundTrip},
		{"BadBatchesStoreNothing", testBadBatches},
		{"BatchLimits", testBatchLimits},
		{"ListLogsFilters", testListLogsFilters},
		{"ListLogsParameterErrors", testListLogsParameterErrors},
		{"ListLogsPaging", testListLogsPaging},
		{"DeleteLogs", testDeleteLogs},
		{"DeleteProjectDeletesLogs", testDeleteProjectDeletesLogs},
		{"UnknownRoutes", testUnknownRoutes},
		{"MakeHat", testMakeHat},
		{"IdempotentRetries", testIdempotentRetries},
		{"AttributesRoundTrip", testAttributesRoundTrip},
		{"BadAttributesStoreNothing", testBadAttributes},
		{"RetentionValidation", testRetentionValidation},
		{"RetentionMergePatch", testRetentionMergePatch},
		{"RetentionHidesAndRefuses", testRetentionHidesAndRefuses},
		{"SearchAndStats", testSearchAndStats},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open)
		})
	}
}

func testUnknownRoutes(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	for _, c := range []struct{ method, path string }{{"GET", "/nothing"}, {"GET", "/projects/a/b"}} {
		resp, body := e.do(c.method, c.path, "", "")
		if resp.StatusCode != 404 {
			t.Errorf("%s %s = %d, want 404: %s", c.method, c.path, resp.StatusCode, body)
		}
	}
	for _, c := range []struct{ method, path, allow string }{{"PATCH", "/projects", "GET, HEAD, POST"}, {"POST", "/projects/x", "DELETE, GET, HEAD, PATCH, PUT"}, {"PUT", "/logs", "DELETE, GET, HEAD, POST"}} {
		resp, body := e.do(c.method, c.path, "application/json", "{}")
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s = %d Allow %q, want 405 Allow %q: %s", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow, body)
		}
	}
	if e.tr.Checked() == 0 {
		t.Fatal("no response went through the contract check")
	}
}
