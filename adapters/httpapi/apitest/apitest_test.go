package apitest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// exchange runs one request against a handler that answers with the given status, headers and
// body, and returns what the Checker says of it.
func exchange(t *testing.T, method, target string, status int, header map[string]string, body string) error {
	t.Helper()
	c, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	req, err := http.NewRequest(method, srv.URL+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return c.Check(req, resp, b)
}

const project = `{"id":"01936f0e-8c2a-7b3e-9d4f-2a6b8c0d1e2f","name":"p","created_at":"2026-11-23T10:00:00Z","updated_at":"2026-11-23T10:00:00Z","retention_days":null}`

const problem = `{"type":"about:blank","title":"Not Found","status":404,"detail":"no project"}`

// exchangeCase is one response to check: the request it answers, its status, headers and
// body, and (for a wrong one) what the checker's error must mention.
type exchangeCase struct {
	name, method, target string
	status               int
	header               map[string]string
	body                 string
	want                 string
}

func TestCheckerAcceptsContractResponses(t *testing.T) {
	json := map[string]string{"Content-Type": "application/json"}
	prob := map[string]string{"Content-Type": "application/problem+json"}
	cases := []exchangeCase{
		{"get project", "GET", "/projects/x", 200, json, project, ""},
		{"list projects", "GET", "/projects", 200, json, "[" + project + "]", ""},
		{"not found", "GET", "/projects/x", 404, prob, problem, ""},
		{"create project", "POST", "/projects", 201, map[string]string{"Content-Type": "application/json", "Location": "/projects/x"}, project, ""},
		{"unknown route problem", "GET", "/nope", 404, prob, problem, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := exchange(t, c.method, c.target, c.status, c.header, c.body); err != nil {
				t.Fatalf("a valid response was rejected: %v", err)
			}
		})
	}
}

func TestCheckerRejectsWrongResponses(t *testing.T) {
	json := map[string]string{"Content-Type": "application/json"}
	prob := map[string]string{"Content-Type": "application/problem+json"}
	cases := []exchangeCase{
		{"wrong field type", "GET", "/projects/x", 200, json, `{"id":1,"name":"p","created_at":"2026-11-23T10:00:00Z","updated_at":"2026-11-23T10:00:00Z","retention_days":null}`, "id"},
		{"missing required field", "GET", "/projects/x", 200, json, `{"id":"x","name":"p"}`, "created_at"},
		{"undeclared status", "GET", "/projects/x", 500, prob, `{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"x"}`, "500"},
		{"missing Location header", "POST", "/projects", 201, json, project, "Location"},
		{"error as plain text", "GET", "/projects/x", 404, map[string]string{"Content-Type": "text/plain"}, "not found", "Content-Type"},
		{"problem status mismatch", "GET", "/projects/x", 404, prob, `{"type":"about:blank","title":"Not Found","status":400,"detail":"x"}`, "status"},
		{"unknown route answered 200", "GET", "/nope", 200, json, "{}", "not in the spec"},
		{"unknown route plain text", "GET", "/nope", 404, map[string]string{"Content-Type": "text/plain"}, "404 page not found", "problem+json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := exchange(t, c.method, c.target, c.status, c.header, c.body)
			if err == nil {
				t.Fatal("a response that breaks the contract passed")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
}
