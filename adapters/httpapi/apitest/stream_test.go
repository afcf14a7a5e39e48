package apitest

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestStreamChecks: the hand-written event stream, left out of the generated spec, is checked
// against the whole document: its head and each event's data.
func TestStreamChecks(t *testing.T) {
	c, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	good := `{"id":"01936f0e-9a10-7c2d-8e3f-4a5b6c7d8e9f","project_id":"01936f0e-8c2a-7b3e-9d4f-2a6b8c0d1e2f","message":"m","level":"error","time":1795428000123}`
	if err := c.CheckEvent("LogEntry", []byte(good)); err != nil {
		t.Errorf("a valid entry: %v", err)
	}
	for _, bad := range []string{`{"id":1}`, `{"message":"m"}`, `not json`} {
		if err := c.CheckEvent("LogEntry", []byte(bad)); err == nil {
			t.Errorf("event data %s passed", bad)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/logs/tail?project_id=p", nil)
	ok := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}}
	if err := c.CheckStream(req, ok); err != nil {
		t.Errorf("a 200 stream: %v", err)
	}
	wrong := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}}
	if err := c.CheckStream(req, wrong); err == nil {
		t.Error("a 200 stream as application/json passed")
	}
	teapot := &http.Response{StatusCode: http.StatusTeapot, Header: http.Header{"Content-Type": {"text/event-stream"}}}
	if err := c.CheckStream(req, teapot); err == nil {
		t.Error("a status the spec does not list passed")
	}
}
