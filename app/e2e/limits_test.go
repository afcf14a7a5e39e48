package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/app/server"
)

func TestInFlightCapShedsWith503(t *testing.T) {
	e := newEnv(t, openSQLiteStore, func(c *server.Config) { c.MaxInFlight = 1 })
	p := e.project("p")

	// Hold one request in flight: its body arrives slowly.
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", e.url+"/logs", pr)
	req.Header.Set("Content-Type", "application/json")
	first := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	// More than the client transport buffers (4 KiB), so the headers and this part of the
	// body really leave the client now.
	if _, err := fmt.Fprintf(pw, `[{"project_id":%q,"subject":%q,`, p.Id, strings.Repeat("s", 1000)); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(pw, `"user_id":%q,`, strings.Repeat("u", 1000)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(pw, strings.Repeat(" ", 8192)); err != nil {
		t.Fatal(err)
	}

	// Let it arrive and take the only slot (a request racing ahead would take it instead, and
	// the slow one would be the one shed).
	select {
	case st := <-first:
		t.Fatalf("the slow request was answered before its body was complete: %d", st)
	case <-time.After(300 * time.Millisecond):
	}
	// While it is in flight, more requests are refused at once, not queued.
	var shedStatus int
	var retryAfter string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp, body := e.do("POST", "/logs", "application/json", fmt.Sprintf(`[{"project_id":%q,"message":"shed"}]`, p.Id))
		if resp.StatusCode == 503 {
			shedStatus, retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
			if !strings.Contains(string(body), "limit") {
				t.Errorf("503 body %s", body)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if shedStatus != 503 || retryAfter == "" {
		t.Fatalf("second request while one is in flight: %d, Retry-After %q; want 503 with Retry-After", shedStatus, retryAfter)
	}
	if resp, _ := apitest.Get(t, e.url+"/healthz"); resp.StatusCode != 200 {
		t.Errorf("/healthz was shed: %d", resp.StatusCode)
	}
	_, _ = io.WriteString(pw, `"message":"slow"}]`)
	_ = pw.Close()
	if got := <-first; got != 201 {
		t.Fatalf("the in-flight request = %d, want 201", got)
	}
	if n := e.logCount(p.Id); n != 1 {
		t.Fatalf("%d entries stored, want only the in-flight request's 1", n)
	}
}

func TestWriteRateLimitAnswers429(t *testing.T) {
	e := newEnv(t, openSQLiteStore, func(c *server.Config) { c.WriteRate = 0.01; c.WriteBurst = 2 })
	for i := range 2 {
		if r, _ := e.do("POST", "/projects", "application/json", fmt.Sprintf(`{"name":"p%d"}`, i)); r.StatusCode != 201 {
			t.Fatalf("write %d within the burst = %d", i, r.StatusCode)
		}
	}
	resp, body := e.do("POST", "/projects", "application/json", `{"name":"over"}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("write over the rate = %d Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if r, _ := e.client.ListProjectsWithResponse(t.Context()); r.StatusCode() != 200 || len(*r.JSON200) != 2 {
		t.Fatalf("reads are not rate limited, and the refused write stored nothing: %d, %d projects", r.StatusCode(), len(*r.JSON200))
	}
}
