package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/adapters/ui"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
	"example.com/obsvc/domain"
)

// findChromium returns the system's Chromium. Without one the browser tests skip loudly, except
// under CI=true, where .ci/run installs it and its absence is a failure.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium under CI=true: .ci/run installs it")
	}
	t.Skip("!!! no Chromium: the log explorer browser test is SKIPPED (apt-get install chromium)")
	return ""
}

// screenshotDir is where the browser tests write their screenshots: SCREENSHOT_DIR, or
// .artifacts/screenshots at the repository's root (git ignores it; CI keeps it).
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SCREENSHOT_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", ".artifacts", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestExplorerInChromium drives the log explorer (/ui) in headless Chromium against a seeded
// server with API keys, on both stores: a wrong key shows the message and the right one works,
// the table lists the newest entries, scrolling loads every further page without duplicates, the
// histogram's total is the API's, a click on a bar narrows the range, typing in q narrows the
// table, a row opens from the keyboard, clicking a user filters by it, the page fits a phone
// screen, Live shows entries posted after it was switched on at the top within 2 seconds, once,
// also across a dropped stream and under a filter, a key of one project works with its project
// in the URL, the Content-Security-Policy is sent and enforced, and nothing is written to the
// console but the refusals the test provokes.
func TestExplorerInChromium(t *testing.T) {
	browser := browserSuite(t)
	for _, s := range e2eStores() {
		t.Run(s.name, func(t *testing.T) { testExplorer(t, browser, s) })
	}
}

// browserSuite skips a browser suite under -short and -race and returns Chromium's path.
func browserSuite(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped under -short (make quick); make test runs it")
	}
	if raceDetector {
		// The race detector sees only the server, whose handlers the end-to-end tests already
		// run under it; here it would only slow the server down beneath a browser that waits
		// (several times this test's 45 s in make race) and stretch Live's 2-second deadline.
		t.Skip("browser test skipped under -race (make race); make test runs it")
	}
	return findChromium(t)
}

const (
	explorerKey = "explorer-secret"         // an admin's
	projectKey  = "explorer-project-secret" // project a's
)

// seedLevels are the levels of the seeded entries, in turn, as loggers spell them: the API stores
// them canonical (WARNING as warn, CRITICAL as fatal), and Audit, a custom level, as audit.
var seedLevels = []string{"INFO", "info", "WARNING", "Error", "debug", "Audit", "CRITICAL"}

// seedExplorer posts n entries to project p over the last 40 minutes, newest last, through the
// API, and returns their ids newest first as GET /logs lists them.
func seedExplorer(t *testing.T, base, p string, n int) []string {
	t.Helper()
	now := time.Now().UnixMilli()
	levels := seedLevels
	batch := make([]map[string]any, n)
	for i := range batch {
		batch[i] = map[string]any{
			"project_id": p,
			"message":    fmt.Sprintf("GET /api/orders/%d completed with status %d", i, []int{200, 201, 404, 502}[i%4]),
			"level":      levels[i%len(levels)],
			"time":       now - int64(n-i)*9000, // 9 s apart: distinct times, newest last
			"subject":    []string{"checkout", "payments", "search"}[i%3],
			"user_id":    fmt.Sprintf("u-%d", i%5),
			"trace_id":   fmt.Sprintf("%032x", i+1),
			"attributes": map[string]any{"http.method": "GET", "order": i},
		}
	}
	postLogs(t, base, batch)
	// The ids, newest first, as the API lists them.
	resp := explorerDo(t, http.MethodGet, fmt.Sprintf("%s/logs?project_id=%s&order=desc&limit=%d", base, p, n+1), nil)
	var listed []struct {
		ID string `json:"id"`
	}
	err := json.NewDecoder(resp.Body).Decode(&listed)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil || len(listed) != n {
		t.Fatalf("GET /logs = %d, %d entries, %v", resp.StatusCode, len(listed), err)
	}
	ids := make([]string, n)
	for i, e := range listed {
		ids[i] = e.ID
	}
	return ids
}

// explorerDo sends a request with the explorer's key (a body as JSON) and returns the answer,
// whose body the caller closes.
func explorerDo(t *testing.T, method, url string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+explorerKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// postLogs posts a batch through the API with the explorer's key.
func postLogs(t *testing.T, base string, batch []map[string]any) {
	t.Helper()
	body, err := json.Marshal(batch)
	if err != nil {
		t.Fatal(err)
	}
	resp := explorerDo(t, http.MethodPost, base+"/logs", bytes.NewReader(body))
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /logs = %d", resp.StatusCode)
	}
}

// apiGet GETs url with the explorer's key and decodes the JSON answer into v.
func apiGet(t *testing.T, url string, v any) {
	t.Helper()
	resp := explorerDo(t, http.MethodGet, url, nil)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func testExplorer(t *testing.T, browser string, s namedStore) {
	st := s.open(t)
	a, _ := seedProjects(t, st)
	cfg := server.DefaultConfig()
	cfg.APIKeys = apitest.KeyLine("admin", explorerKey) + "," + apitest.KeyLine("project "+a.ID, projectKey)
	_, srv := servetest.Serve(t, cfg, st, nil)
	const n = 250
	ids := seedExplorer(t, srv.URL, a.ID, n)

	// The browser reaches the server through a proxy that can drop its live tails.
	drops, pageURL := newDropProxy(t, srv.URL)

	// The page's policy is on the page, and the page loads without a key.
	resp, err := http.Get(srv.URL + "/ui")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") != ui.Policy {
		t.Fatalf("GET /ui without a key = %d, Content-Security-Policy %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1280, 800))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()

	// Collect the console from the start: every message but the browser's own network log
	// (which reports the 401s this test provokes, and GET /logs/stats where the server lacks
	// it) is a failure.
	var mu sync.Mutex
	var console []string
	collect := func(ctx context.Context) <-chan struct{} {
		messages := chromedp.Console(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for m, err := range messages {
				if err != nil {
					return
				}
				if (m.Type == chromedp.ConsoleError || m.IsException()) && m.Source != "network" {
					mu.Lock()
					console = append(console, m.String()+" at "+m.URL)
					mu.Unlock()
				}
			}
		}()
		return done
	}
	consoleDone := collect(ctx)
	// Any breach of the Content-Security-Policy is written to the console, so it fails the test.
	reportCSP := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `document.addEventListener('securitypolicyviolation', (e) => console.error('Content-Security-Policy violation: ' + e.violatedDirective + ' ' + e.blockedURI))`,
		})
		return err
	})
	if err := chromedp.Do(ctx, reportCSP); err != nil {
		t.Fatal(err)
	}

	rows := `(document.querySelectorAll('#rows tr.entry').length)`
	message := `(document.getElementById('message').hidden ? '' : document.getElementById('message').textContent)`
	pollFor := func(what, expr string, limit time.Duration) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(limit))); err != nil {
			msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](message))
			n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](rows))
			if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
				_ = os.WriteFile(filepath.Join(screenshotDir(t), "explorer-"+s.name+"-failed.png"), png, 0o644)
			}
			t.Fatalf("%s: %v (message %q, %d rows)", what, err, msg, n)
		}
	}
	poll := func(what, expr string) { t.Helper(); pollFor(what, expr, 15*time.Second) }
	eval := func(expr string) []string {
		t.Helper()
		// Through JSON text: the result of expr, an array of strings, as the page sees it.
		text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(`+expr+`)`))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		var v []string
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatalf("%s = %.200s: %v", expr, text, err)
		}
		return v
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(screenshotDir(t), "explorer-"+s.name+"-"+name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s", path)
	}

	// Without a key the page says so; a wrong key is refused with a message; the right one works.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(pageURL+"/?project="+a.ID)); err != nil {
		t.Fatal(err)
	}
	poll("no key: the message asks for one", message+`.includes('needs an API key')`)
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("key"), "wrong-key"), chromedp.Click(chromedp.ID("key-save"))); err != nil {
		t.Fatal(err)
	}
	poll("wrong key: the message says it was not accepted", message+`.includes('did not accept this API key')`)
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("key"), explorerKey+kb.Enter)); err != nil {
		t.Fatal(err)
	}
	poll("right key: the first page", rows+` === 100 && `+message+` === ''`)
	if got := eval(`[...document.querySelectorAll('#rows tr.entry')].map(r => r.dataset.id)`); !slices.Equal(got, ids[:100]) {
		t.Fatalf("first page shows %d ids, not the 100 newest entries: %.3q vs %.3q", len(got), got, ids)
	}
	if u, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`)); strings.Contains(u, explorerKey) {
		t.Fatalf("the key is in the URL: %s", u)
	}
	shot("1280x800")

	// Infinite scroll: every page follows the Link cursor, newest first, none twice.
	for want := 200; ; want += 100 {
		want = min(want, n)
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.body.scrollHeight)`)); err != nil {
			t.Fatal(err)
		}
		poll(fmt.Sprintf("scroll to %d rows", want), fmt.Sprintf("%s >= %d", rows, want))
		if want == n {
			break
		}
	}
	poll("the end of the range", `document.getElementById('more').textContent.includes('No more entries')`)
	if got := eval(`[...document.querySelectorAll('#rows tr.entry')].map(r => r.dataset.id)`); !slices.Equal(got, ids) {
		t.Fatalf("after scrolling the table holds %d rows; want all %d entries once each, newest first", len(got), n)
	}

	// The histogram's total is the API's count for the same question, and the number of rows.
	q := eval(`[document.getElementById('hist').dataset.query]`)[0]
	var stats struct {
		Step    int64   `json:"step"`
		Buckets []int64 `json:"buckets"`
		Total   int64   `json:"total"`
		Series  []struct {
			Counts []int64 `json:"counts"`
		} `json:"series"`
	}
	apiGet(t, srv.URL+"/logs/stats?"+q, &stats)
	if stats.Total != n {
		t.Fatalf("GET /logs/stats?%s total = %d, want %d", q, stats.Total, n)
	}
	poll("histogram total", fmt.Sprintf(`document.getElementById('hist-total').dataset.total === '%d'`, stats.Total))

	// A click on a bar narrows the range to that bucket: the table then lists exactly its entries.
	nb := len(stats.Buckets)
	bar := nb - 3 // a whole bucket among the newest entries
	var inBar int64
	for _, s := range stats.Series {
		inBar += s.Counts[bar]
	}
	if inBar == 0 || inBar >= n {
		t.Fatalf("bucket %d of %d holds %d entries; the seed should put a few in it", bar, nb, inBar)
	}
	box, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`window.scrollTo(0, 0), (() => { const r = document.querySelector('#hist .u-over').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()`))
	if err != nil || len(box) != 4 {
		t.Fatalf("the chart's plot area: %v %v", box, err)
	}
	// The x scale runs from the first bucket's start to the last one's start plus a step.
	span := float64(stats.Buckets[nb-1] + stats.Step - stats.Buckets[0])
	x := box[0] + box[2]*(float64(stats.Buckets[bar]-stats.Buckets[0])+float64(stats.Step)/2)/span
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(x, box[1]+box[3]/2)); err != nil {
		t.Fatal(err)
	}
	poll("a click on a bar narrows the range", fmt.Sprintf(`location.search.includes('range=abs') && %s === %d && document.getElementById('hist-total').dataset.total === '%d'`, rows, inBar, inBar))

	// Typing in q narrows the table: orders/24 and orders/240 to 249.
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL+"/ui?project="+a.ID)); err != nil {
		t.Fatal(err)
	}
	poll("back to the last hour", rows+` === 100`)
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("q"), "ORDERS/24")); err != nil {
		t.Fatal(err)
	}
	poll("q narrows the table", rows+` === 11 && [...document.querySelectorAll('#rows tr.entry td:nth-child(5)')].every(td => td.textContent.includes('orders/24')) && document.getElementById('hist-total').dataset.total === '11'`)

	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL+"/ui?project="+a.ID)); err != nil {
		t.Fatal(err)
	}
	poll("back to the last hour", rows+` === 100`)

	// Level chips: each finds every spelling of its level, and a level outside the six (from
	// the stats of the range) gets a chip of its own; a link naming a spelling checks its chip.
	count := func(level string) int {
		c := 0
		for i := range n {
			if domain.CanonicalLevel(seedLevels[i%len(seedLevels)]) == level {
				c++
			}
		}
		return c
	}
	poll("a chip for the custom level", `!!document.querySelector('#levels input[value="audit"]')`)
	for _, level := range []string{"warn", "fatal", "audit"} {
		chip := chromedp.CSS(fmt.Sprintf(`#levels input[value=%q]`, level))
		if err := chromedp.Do(ctx, chromedp.Click(chip)); err != nil {
			t.Fatal(err)
		}
		poll("the "+level+" chip", fmt.Sprintf(`%s === %d && [...document.querySelectorAll('#rows tr.entry td:nth-child(2)')].every(td => td.textContent === %q) && location.search.includes('level=%s')`, rows, count(level), level, level))
		if err := chromedp.Do(ctx, chromedp.Click(chip)); err != nil {
			t.Fatal(err)
		}
		poll("the "+level+" chip off", rows+` === 100 && !location.search.includes('level=')`)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL+"/ui?project="+a.ID+"&level=WARNING")); err != nil {
		t.Fatal(err)
	}
	poll("a link with level=WARNING", fmt.Sprintf(`%s === %d && document.querySelector('#levels input[value="warn"]').checked`, rows, count("warn")))
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL+"/ui?project="+a.ID)); err != nil {
		t.Fatal(err)
	}
	poll("back to the last hour", rows+` === 100`)

	// The keyboard opens a row: its fields and attributes.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0); document.querySelector('#rows tr.entry').focus()`),
		chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	poll("Enter on the second row opens it", `(() => { const d = document.querySelector('#rows tr.entry:nth-child(2) + tr.detail'); return d && d.textContent.includes('"order"') && d.textContent.includes('`+ids[1]+`'); })()`)

	// Clicking a user filters by it: exactly that user's entries, and the choice is in the URL.
	user := eval(`[document.querySelector('#rows tr.entry td:nth-child(4) button').textContent]`)[0]
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#rows tr.entry td:nth-child(4) button`))); err != nil {
		t.Fatal(err)
	}
	poll("user filter", fmt.Sprintf(`%s === %d && [...document.querySelectorAll('#rows tr.entry td:nth-child(4)')].every(td => td.textContent === %q) && location.search.includes('user=%s')`, rows, n/5, user, user))

	// A phone: the page reloads from its URL (the key stays in the tab), fits the width, and shows entries.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	poll("phone: reloaded with the filter", fmt.Sprintf(`%s === %d && document.getElementById('user').value === %q`, rows, n/5, user))
	if w := eval(`[String(document.documentElement.scrollWidth)]`)[0]; w != "390" {
		t.Errorf("on a 390-pixel screen the page is %s pixels wide", w)
	}
	shot("390x844")

	// Live: switched on, the page follows GET /logs/tail, and an entry posted then shows at the
	// top within 2 seconds, once. When the network drops the stream, the page reconnects with
	// the last event's id, so an entry written while it was away shows too, once.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(pageURL+"/ui?project="+a.ID)); err != nil {
		t.Fatal(err)
	}
	poll("back to the last hour", rows+` === 100`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("live"))); err != nil {
		t.Fatal(err)
	}
	poll("live on", `document.getElementById('status').dataset.live === 'on' && location.search.includes('live=1') && `+rows+` === 100`)
	var posted []string // newest first
	post := func(message string) {
		t.Helper()
		postLogs(t, srv.URL, []map[string]any{{"project_id": a.ID, "message": message, "level": "warn", "user_id": "u-live", "time": time.Now().UnixMilli()}})
		posted = append([]string{message}, posted...)
	}
	// atTop: the newest rows are the posted entries, newest first, each once, above the 100 listed.
	atTop := func() string {
		want, _ := json.Marshal(posted)
		return fmt.Sprintf(`(() => { const m = [...document.querySelectorAll('#rows tr.entry td:nth-child(5)')].map(td => td.textContent); const want = %s; return m.length === 100 + want.length && want.every((w, i) => m[i] === w && m.lastIndexOf(w) === i); })()`, want)
	}
	post("live: posted after Live was switched on")
	pollFor("a live entry at the top within 2 s", atTop(), 2*time.Second)

	lastID, release := drops.drop()
	poll("the page notices the drop", `document.getElementById('status').dataset.live === 'reconnecting'`)
	for deadline := time.Now().Add(15 * time.Second); len(drops.requests()) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the page did not reconnect after the drop")
		}
	}
	post("live: posted while the page was disconnected")
	release()
	pollFor("the entry written during the drop, within 2 s of the reconnection", atTop(), 2*time.Second)
	post("live: posted after the reconnection")
	pollFor("a live entry after the reconnection, within 2 s", atTop(), 2*time.Second)
	tails := drops.requests()
	if len(tails) != 2 {
		t.Fatalf("the page opened %d tails; want 2 (one, and one after the drop)", len(tails))
	}
	for i, r := range tails {
		if r.Header.Get("Authorization") != "Bearer "+explorerKey || strings.Contains(r.URL.RawQuery, explorerKey) {
			t.Errorf("tail %d: the key is not (only) in the Authorization header: %q, query %q", i, r.Header.Get("Authorization"), r.URL.RawQuery)
		}
	}
	if got := tails[0].Header.Get("Last-Event-ID"); got != "" {
		t.Errorf("the first tail resumes from %q; it should start at the present", got)
	}
	if got := tails[1].Header.Get("Last-Event-ID"); lastID == "" || got != lastID {
		t.Errorf("after the drop the page resumed with Last-Event-ID %q; the last event it had was %q", got, lastID)
	}

	// Live under a filter: only the entries that match it show, however the stream filters.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("q"), "LIVE:")); err != nil {
		t.Fatal(err)
	}
	poll("q under Live", `location.search.includes('q=LIVE') && document.getElementById('status').dataset.live === 'on' && `+rows+` === 3`)
	postLogs(t, srv.URL, []map[string]any{
		{"project_id": a.ID, "message": "not shown: the filter does not match", "level": "warn", "time": time.Now().UnixMilli()},
		{"project_id": a.ID, "message": "not shown either: live, but an hour and a half old", "level": "warn", "time": time.Now().Add(-90 * time.Minute).UnixMilli()},
		{"project_id": a.ID, "message": "live: matches the filter", "level": "warn", "time": time.Now().UnixMilli()},
	})
	pollFor("q under Live: the matching entry alone", `[...document.querySelectorAll('#rows tr.entry td:nth-child(5)')].map(td => td.textContent).join('|') === 'live: matches the filter|`+strings.Join(posted, "|")+`'`, 2*time.Second)
	// A key of one project may not list projects: the page says how to open it, and then works.
	tab, cancelTab := chromedp.NewContext(ctx) // a new tab: an empty sessionStorage
	defer cancelTab()
	tabConsoleDone := collect(tab)
	if err := chromedp.Do(tab, reportCSP, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(pageURL+"/ui"),
		chromedp.SendKeys(chromedp.ID("key"), projectKey+kb.Enter)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[any](message+`.includes('/ui?project=')`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("project key without a project in the URL: no message saying how to open it: %v", err)
	}
	if err := chromedp.Do(tab, chromedp.Navigate(pageURL+"/ui?project="+a.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[any](rows+` === 100 && `+message+` === ''`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("project key with its project: %v", err)
	}
	cancelTab()
	<-tabConsoleDone

	// The policy is enforced, not only sent: in a tab of its own (whose console is not checked),
	// a script written into the page is refused and reported.
	probe, cancelProbe := chromedp.NewContext(ctx)
	defer cancelProbe()
	if err := chromedp.Do(probe, chromedp.Navigate(pageURL+"/ui"), chromedp.Evaluate[chromedp.Void](`window.violations = [];
		document.addEventListener('securitypolicyviolation', (e) => violations.push(e.violatedDirective));
		document.head.append(Object.assign(document.createElement('script'), { textContent: 'window.inlineRan = true' }))`)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(probe, chromedp.Poll[any](`violations.some((d) => d.startsWith('script-src')) && window.inlineRan === undefined`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("an inline script was not refused under the Content-Security-Policy: %v", err)
	}
	cancelProbe()

	cancel()
	<-consoleDone
	mu.Lock()
	defer mu.Unlock()
	if len(console) > 0 {
		t.Fatalf("console errors:\n%s", strings.Join(console, "\n"))
	}
}

// dropProxy stands between the browser and the server as the network would: it passes every
// request on, and the test can drop the live tails it carries (as a lost connection does) and
// hold the page's reconnection back until it lets it through. It records each tail request and
// the id of the last event it passed to the page.
type dropProxy struct {
	proxy *httputil.ReverseProxy

	mu     sync.Mutex
	tails  []*http.Request          // every tail request, as the page sent it
	open   map[*http.Request]func() // cuts the tails under way
	held   chan struct{}            // while not nil, new tails wait for it to close
	lastID string                   // the id of the last event passed on
}

func newDropProxy(t *testing.T, target string) (*dropProxy, string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{open: map[*http.Request]func(){}}
	p.proxy = &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		FlushInterval: -1, // each event at once
		ErrorLog:      log.New(io.Discard, "", 0),
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.URL.Path == server.TailPath {
				resp.Body = &idRecorder{ReadCloser: resp.Body, p: p}
			}
			return nil
		},
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *dropProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != server.TailPath {
		p.proxy.ServeHTTP(w, r)
		return
	}
	ctx, cut := context.WithCancel(r.Context())
	defer cut()
	p.mu.Lock()
	p.tails = append(p.tails, r.Clone(context.Background()))
	held := p.held
	p.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return
		}
	}
	r = r.WithContext(ctx)
	p.mu.Lock()
	p.open[r] = cut
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.open, r)
		p.mu.Unlock()
	}()
	// A cut ends the copy mid-stream: the proxy aborts the connection to the browser, which
	// sees a network error, as it would if the network went away.
	p.proxy.ServeHTTP(w, r)
}

// drop cuts every tail under way and holds new ones back until release is called; it returns
// the id of the last event the page was given.
func (p *dropProxy) drop() (lastID string, release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	held := make(chan struct{})
	p.held = held
	for _, cut := range p.open {
		cut()
	}
	return p.lastID, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.held = nil
		close(held)
	}
}

// requests returns the tail requests so far.
func (p *dropProxy) requests() []*http.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.tails)
}

// idRecorder notes the id of each event of a tail as it passes.
type idRecorder struct {
	io.ReadCloser
	p       *dropProxy
	partial []byte // the unfinished line
}

func (r *idRecorder) Read(b []byte) (int, error) {
	n, err := r.ReadCloser.Read(b)
	r.partial = append(r.partial, b[:n]...)
	for {
		line, rest, ok := bytes.Cut(r.partial, []byte("\n"))
		if !ok {
			break
		}
		if id, ok := bytes.CutPrefix(line, []byte("id: ")); ok {
			r.p.mu.Lock()
			r.p.lastID = string(id)
			r.p.mu.Unlock()
		}
		r.partial = rest
	}
	return n, err
}
