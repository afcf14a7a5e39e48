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
