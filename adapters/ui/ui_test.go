package ui_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"example.com/obsvc/adapters/ui"
)

func newServer(t *testing.T) (*ui.Handler, *httptest.Server) {
	t.Helper()
	h, err := ui.NewHandler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func get(t *testing.T, url string, gzip bool) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if gzip {
		// Set by hand, the transport leaves the body compressed: what a browser would receive.
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestPageFitsTheBudget sums what a browser transfers for the page and every asset it loads
// (compressed, as served to a browser that accepts gzip) against the 150 KB budget.
func TestPageFitsTheBudget(t *testing.T) {
	h, srv := newServer(t)
	total := 0
	for _, f := range h.Files() {
		if f == "vendor/uplot/LICENSE" || f == "vendor/uplot/VERSION" {
			continue // served for the record, never loaded by the page
		}
		resp, body := get(t, srv.URL+"/ui/"+f, true)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("/ui/%s = %d, Content-Encoding %q", f, resp.StatusCode, resp.Header.Get("Content-Encoding"))
		}
		t.Logf("%-28s %6d bytes gzipped", f, len(body))
		total += len(body)
	}
	t.Logf("total %d bytes gzipped (budget 150 KB)", total)
	if total > 150*1000 {
		t.Fatalf("the page transfers %d bytes gzipped, over the 150 KB budget", total)
	}
	if total < 20*1000 {
		t.Fatalf("the page transfers only %d bytes: the assets are not all counted", total)
	}
}

// TestPageAndAssets checks the routes: / redirects to /ui, the page and its assets are served
// with the page's policy and revalidated caching, and nothing else is.
func TestPageAndAssets(t *testing.T) {
	h, srv := newServer(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/ui" {
		t.Fatalf("GET / = %d Location %q, want 302 to /ui", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, page := get(t, srv.URL+"/ui", false)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") != ui.Policy || resp.Header.Get("Cache-Control") != "no-cache" ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /ui = %d %v", resp.StatusCode, resp.Header)
	}
	if _, again := get(t, srv.URL+"/ui/", false); !bytes.Equal(again, page) {
		t.Fatal("/ui/ is not the page")
	}
	// Every asset the page names is served, with a JavaScript or CSS type the browser will accept
	// under nosniff; the page has no inline script or style for the policy to refuse.
	refs := regexp.MustCompile(`(?:src|href)="(/ui/[^"]+)"`).FindAllStringSubmatch(string(page), -1)
	if len(refs) < 3 {
		t.Fatalf("the page names %d assets: %s", len(refs), page)
	}
	for _, m := range refs {
		resp, _ := get(t, srv.URL+m[1], false)
		ct := resp.Header.Get("Content-Type")
		if resp.StatusCode != 200 || !(strings.HasPrefix(ct, "text/javascript") || strings.HasPrefix(ct, "text/css")) {
			t.Errorf("%s = %d %q", m[1], resp.StatusCode, ct)
		}
	}
	if regexp.MustCompile(`<script>|<style|style="|\son[a-z]+="`).Match(page) {
		t.Error("the page has inline script or style, which its policy refuses")
	}
	for _, f := range h.Files() {
		if strings.HasSuffix(f, ".js") {
			b, err := os.ReadFile(filepath.Join("assets", f))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte("eval(")) || bytes.Contains(b, []byte("new Function")) {
				t.Errorf("%s evaluates strings, which the policy refuses", f)
			}
		}
	}
	// Revalidation: the entity tag answers 304.
	first, _ := get(t, srv.URL+"/ui/app.js", false)
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/ui/app.js", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("If-None-Match", first.Header.Get("ETag"))
	r304, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r304.Body.Close()
	if r304.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match with the ETag = %d, want 304", r304.StatusCode)
	}
	for _, p := range []string{"/ui/nothing.js", "/ui/vendor/", "/ui/ui.go"} {
		if resp, _ := get(t, srv.URL+p, false); resp.StatusCode != 404 {
			t.Errorf("GET %s = %d, want 404", p, resp.StatusCode)
		}
	}
}

// TestVendoredFilesAreThePinnedOnes checks the vendored uPlot files against the sums recorded in
// VERSION, so an update cannot happen without the record changing with it.
func TestVendoredFilesAreThePinnedOnes(t *testing.T) {
	dir := filepath.Join("assets", "vendor", "uplot")
	f, err := os.Open(filepath.Join(dir, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := regexp.MustCompile(`^([0-9a-f]{64})  (\S+)$`)
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n++
		b, err := os.ReadFile(filepath.Join(dir, m[2]))
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != m[1] {
			t.Errorf("%s has SHA-256 %x, VERSION records %s", m[2], sum, m[1])
		}
	}
	if n != 3 {
		t.Fatalf("VERSION records %d sums, want 3 (the module, its CSS, the license)", n)
	}
}
