package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"example.com/obsvc/adapters/ui"
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
		dir = filepath.Join("..", ".artifacts", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestExplorerInChromium drives the log explorer (/ui) in headless Chromium against a seeded
// server with API keys, on both stores: a wrong key shows the message and the right one works,
// the table lists the newest entries, scrolling loads every further page without duplicates, a
// row opens from the keyboard, clicking a user filters by it, the page fits a phone screen, a key
// of one project works with its project in the URL, and nothing is written to the console but the
// refusals the test provokes.
func TestExplorerInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test skipped under -short (make quick); make test runs it")
	}
	browser := findChromium(t)
	for _, s := range e2eStores() {
		t.Run(s.name, func(t *testing.T) { testExplorer(t, browser, s) })
	}
}

const (
	explorerKey = "explorer-secret"         // an admin's
	projectKey  = "explorer-project-secret" // project a's
)

// seedExplorer posts n entries to project p over the last 40 minutes, newest last, through the
// API, and returns their ids newest first as GET /logs lists them.
func seedExplorer(t *testing.T, base, p string, n int) []string {
	t.Helper()
	now := time.Now().UnixMilli()
	levels := []string{"info", "info", "warn", "error", "debug", "info", "fatal"}
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
	body, err := json.Marshal(batch)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, base+"/logs", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+explorerKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /logs = %d", resp.StatusCode)
	}
	// The ids, newest first, as the API lists them.
	req, err = http.NewRequest(http.MethodGet, fmt.Sprintf("%s/logs?project_id=%s&order=desc&limit=%d", base, p, n+1), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+explorerKey)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	var listed []struct {
		ID string `json:"id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&listed)
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

// apiGet GETs url with the explorer's key and decodes the JSON answer into v.
func apiGet(t *testing.T, url string, v any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+explorerKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
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
	cfg := defaultConfig()
	cfg.APIKeys = keyLine("admin", explorerKey) + "," + keyLine("project "+a.ID, projectKey)
	_, srv := serve(t, cfg, st, nil)
	const n = 250
	ids := seedExplorer(t, srv.URL, a.ID, n)

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

	rows := `(document.querySelectorAll('#rows tr.entry').length)`
	message := `(document.getElementById('message').hidden ? '' : document.getElementById('message').textContent)`
	poll := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
			msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](message))
			n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](rows))
			if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
				_ = os.WriteFile(filepath.Join(screenshotDir(t), "explorer-"+s.name+"-failed.png"), png, 0o644)
			}
			t.Fatalf("%s: %v (message %q, %d rows)", what, err, msg, n)
		}
	}
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
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(srv.URL+"/?project="+a.ID)); err != nil {
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
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/ui?project="+a.ID)); err != nil {
		t.Fatal(err)
	}
	poll("back to the last hour", rows+` === 100`)
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("q"), "ORDERS/24")); err != nil {
		t.Fatal(err)
	}
	poll("q narrows the table", rows+` === 11 && [...document.querySelectorAll('#rows tr.entry td:nth-child(5)')].every(td => td.textContent.includes('orders/24')) && document.getElementById('hist-total').dataset.total === '11'`)

	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/ui?project="+a.ID)); err != nil {
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

	// A key of one project may not list projects: the page says how to open it, and then works.
	tab, cancelTab := chromedp.NewContext(ctx) // a new tab: an empty sessionStorage
	defer cancelTab()
	tabConsoleDone := collect(tab)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(srv.URL+"/ui"),
		chromedp.SendKeys(chromedp.ID("key"), projectKey+kb.Enter)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[any](message+`.includes('/ui?project=')`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("project key without a project in the URL: no message saying how to open it: %v", err)
	}
	if err := chromedp.Do(tab, chromedp.Navigate(srv.URL+"/ui?project="+a.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[any](rows+` === 100 && `+message+` === ''`, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("project key with its project: %v", err)
	}
	cancelTab()
	<-tabConsoleDone

	cancel()
	<-consoleDone
	mu.Lock()
	defer mu.Unlock()
	if len(console) > 0 {
		t.Fatalf("console errors:\n%s", strings.Join(console, "\n"))
	}
}
