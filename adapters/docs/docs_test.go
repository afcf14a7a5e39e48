package docs_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"example.com/obsvc/adapters/docs"
	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/api/rest"
)

func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	h, err := docs.NewHandler(rest.SpecYAML())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestSpecIsServedByteForByte(t *testing.T) {
	srv := newServer(t)
	root, err := os.ReadFile("../../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	resp, body := apitest.Get(t, srv.URL+"/openapi.yaml")
	if resp.StatusCode != 200 || !bytes.Equal(body, root) {
		t.Fatalf("/openapi.yaml = %d, %d bytes; want the %d bytes of openapi.yaml exactly", resp.StatusCode, len(body), len(root))
	}
	resp, body = apitest.Get(t, srv.URL+"/openapi.json")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !bytes.Contains(body, []byte(`"operationId":"createLogs"`)) {
		t.Fatalf("/openapi.json = %d %q %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// TestDocsRenderEveryOperation loads /docs in headless Chromium and checks that the rendered
// page shows every operation of the spec.
func TestDocsRenderEveryOperation(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped under -short (make quick); make test runs it")
	}
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no Chromium under CI=true: .ci/run installs it")
		}
		t.Skip("!!! no Chromium: the /docs browser test is SKIPPED (apt-get install chromium)")
	}
	srv := newServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=20000", "--dump-dom", srv.URL+"/docs/")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	doc, err := rest.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	page := string(dom)
	ops := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops++
			// Swagger UI renders each operation as a block with its method, path and summary.
			if !strings.Contains(page, op.Summary) || !strings.Contains(page, "opblock-summary-path") || !strings.Contains(strings.ToLower(page), `data-path="`+strings.ToLower(path)+`"`) {
				t.Errorf("operation %s %s (%s) is not on the rendered page", method, path, op.Summary)
			}
		}
	}
	if ops != 26 {
		t.Errorf("the spec has %d operations, the test expects 26", ops)
	}
	if t.Failed() {
		t.Logf("rendered page (first 3000 bytes):\n%.3000s", page)
	}
}

// TestDocsPagesCarryAStrictPolicy checks the reference page's Content-Security-Policy: inline
// scripts only by hash, nothing framed. TestDocsRenderEveryOperation shows the page works under it.
func TestDocsPagesCarryAStrictPolicy(t *testing.T) {
	srv := newServer(t)
	resp, _ := apitest.Get(t, srv.URL+"/docs/")
	csp := resp.Header.Get("Content-Security-Policy")
	script := ""
	for _, d := range strings.Split(csp, ";") {
		if d = strings.TrimSpace(d); strings.HasPrefix(d, "script-src ") {
			script = d
		}
	}
	if resp.StatusCode != 200 || !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(script, "'sha256-") || strings.Contains(script, "unsafe") {
		t.Fatalf("/docs/ = %d with Content-Security-Policy %q", resp.StatusCode, csp)
	}
}
