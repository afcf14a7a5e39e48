package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
	"example.com/obsvc/domain"
)

// browserPage is one Chromium tab on the explorer, with the helpers a browser test steps with.
type browserPage struct {
	t    *testing.T
	ctx  context.Context
	name string // the prefix of its screenshots

	mu      sync.Mutex
	console []string
}

// openBrowserPage starts a headless Chromium at 1280x800 whose console errors (but the
// network's own log of refused requests) and Content-Security-Policy breaches are collected;
// check them with consoleClean.
func openBrowserPage(t *testing.T, name string) *browserPage {
	t.Helper()
	browser := findChromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1280, 800))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	p := &browserPage{t: t, ctx: ctx, name: name}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if (m.Type == chromedp.ConsoleError || m.IsException()) && m.Source != "network" {
				p.mu.Lock()
				p.console = append(p.console, m.String()+" at "+m.URL)
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done; cancelAlloc() })
	reportCSP := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `document.addEventListener('securitypolicyviolation', (e) => console.error('Content-Security-Policy violation: ' + e.violatedDirective + ' ' + e.blockedURI))`,
		})
		return err
	})
	// A zone that is neither UTC nor a whole hour away, so the page's local times are told apart.
	tz := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Kolkata"})
		return err
	})
	p.do(reportCSP, tz, chromedp.EmulateViewport(1280, 800))
	return p
}

func (p *browserPage) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatal(err)
	}
}

// poll waits up to limit for expr to be true, and fails with a screenshot when it is not.
func (p *browserPage) poll(what, expr string, limit time.Duration) {
	p.t.Helper()
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(limit))); err != nil {
		p.shot("failed")
		msg, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.getElementById('message').textContent + ' | ' + location.search`))
		p.t.Fatalf("%s: %v (%s)", what, err, msg)
	}
}

// str evaluates expr, whose value is converted to a string.
func (p *browserPage) str(expr string) string {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`String(`+expr+`)`))
	if err != nil {
		p.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func (p *browserPage) shot(name string) {
	p.t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatal(err)
	}
	path := filepath.Join(screenshotDir(p.t), "explorer-"+p.name+"-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot %s", path)
}

// key types keys into the focused element, each as a key press.
func (p *browserPage) key(keys ...string) {
	p.t.Helper()
	for _, k := range keys {
		p.do(chromedp.KeyEvent(k))
	}
}

// slash presses "/" as a keyboard does: one keyDown carrying its text, whose default (typing the
// character) the page may prevent, then keyUp.
func (p *browserPage) slash() {
	p.t.Helper()
	p.do(func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeKeyDown, input.DispatchKeyEventTypeKeyUp} {
			params := input.DispatchKeyEventParams{Type: typ, Key: "/", Code: "Slash", WindowsVirtualKeyCode: 191}
			if typ == input.DispatchKeyEventTypeKeyDown {
				params.Text = "/"
			}
			if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, params); err != nil {
				return chromedp.Void{}, err
			}
		}
		return chromedp.Void{}, nil
	})
}

// clickAt clicks the middle of the element expr evaluates to, as a mouse would.
func (p *browserPage) clickAt(expr string, opts ...chromedp.MouseOption) {
	p.t.Helper()
	// Scrolled into view first, as a person would: the fields panel scrolls sideways.
	box, err := chromedp.Run(p.ctx, chromedp.Evaluate[[]float64](`(() => { const e = (`+expr+`); e.scrollIntoView({ block: 'nearest', inline: 'nearest' }); const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`))
	if err != nil || len(box) != 2 {
		p.t.Fatalf("%s: %v %v", expr, box, err)
	}
	p.do(chromedp.MouseClickXY(box[0], box[1], opts...))
}

func (p *browserPage) consoleClean() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.console) > 0 {
		p.t.Fatalf("console errors:\n%s", strings.Join(p.console, "\n"))
	}
}

// levelStats is the part of a GET /logs/stats answer the tests compare with the chart.
type levelStats struct {
	Total  int64 `json:"total"`
	Series []struct {
		Value  any     `json:"value"`
		Counts []int64 `json:"counts"`
	} `json:"series"`
}

// TestExplorerQueryInChromium drives the explorer's second edition in headless Chromium on both
// stores: the histogram's legend hides a series without recolouring the others, a custom level
// has the same colour in its chip and its series, Live keeps the histogram's total current with a
// bounded number of requests, the query bar (/ focuses it, field and value autocompletion from
// the keyboard, Enter runs, Escape clears, a syntax error under the bar with a caret at the
// parser's position), and Back and Forward walk zooms.
func TestExplorerQueryInChromium(t *testing.T) {
	browserSuite(t)
	for _, s := range e2eStores() {
		t.Run(s.name, func(t *testing.T) { testExplorerQuery(t, s) })
	}
}

func testExplorerQuery(t *testing.T, s namedStore) {
	st := s.open(t)
	a, _ := seedProjects(t, st)
	cfg := server.DefaultConfig()
	cfg.APIKeys = apitest.KeyLine("admin", explorerKey)
	_, srv := servetest.Serve(t, cfg, st, nil)
	const n = 250
	seedExplorer(t, srv.URL, a.ID, n)

	p := openBrowserPage(t, s.name)
	rows := `document.querySelectorAll('#rows tr.entry').length`
	total := `document.getElementById('hist-total').dataset.total`
	p.do(chromedp.Navigate(srv.URL + "/ui?project=" + a.ID))
	p.do(chromedp.SendKeys(chromedp.ID("key"), explorerKey+kb.Enter))
	p.poll("the first page", rows+` === 100 && `+total+` === '250'`, 15*time.Second)

	// 5. Time: one format in the browser's zone, said; round bucket edges; whole-number count
	// ticks; a tooltip per bar with its range and counts; a UTC switch that is remembered.
	kolkata := time.FixedZone("IST", 5*3600+1800)
	firstTime := func(zone *time.Location) (got, want string) {
		ms, _ := strconv.ParseInt(p.str(`document.querySelector('#rows tr.entry').dataset.time`), 10, 64)
		return p.str(`document.querySelector('#rows tr.entry td').textContent`), time.UnixMilli(ms).In(zone).Format("2006-01-02 15:04:05.000")
	}
	if got, want := firstTime(kolkata); got != want {
		t.Fatalf("local time in the table %q; want %q", got, want)
	}
	// (Chromium names the zone by its older alias, Asia/Calcutta.)
	if got := p.str(`document.querySelector('th .tz-label').textContent`); !strings.HasPrefix(got, "UTC+05:30 Asia/") {
		t.Fatalf("the zone is said as %q", got)
	}
	hq, _ := url.ParseQuery(p.str(`document.getElementById('hist').dataset.query`))
	startT, _ := strconv.ParseInt(hq.Get("start_time"), 10, 64)
	step, _ := strconv.ParseInt(hq.Get("step"), 10, 64)
	if step == 0 || startT%step != 0 {
		t.Fatalf("the buckets start at %d, not a multiple of the step %d", startT, step)
	}
	var xticks []string
	var yticks []float64
	_ = json.Unmarshal([]byte(p.str(`document.getElementById('hist').dataset.xticks`)), &xticks)
	_ = json.Unmarshal([]byte(p.str(`document.getElementById('hist').dataset.yticks`)), &yticks)
	if len(xticks) < 2 || !strings.Contains(xticks[0], "\n20") {
		t.Fatalf("time ticks %q: want clock times, the first with its date", xticks)
	}
	for _, x := range xticks {
		if hm, _, _ := strings.Cut(x, "\n"); len(hm) != 5 || hm[2] != ':' {
			t.Fatalf("time tick %q is not 24-hour HH:MM", x)
		}
	}
	for _, y := range yticks {
		if y != float64(int64(y)) {
			t.Fatalf("count ticks %v: not whole numbers", yticks)
		}
	}
	var tipStats struct {
		Step    int64   `json:"step"`
		Buckets []int64 `json:"buckets"`
		Series  []struct {
			Counts []int64 `json:"counts"`
		} `json:"series"`
	}
	apiGet(t, srv.URL+"/logs/stats?"+p.str(`document.getElementById('hist').dataset.query`), &tipStats)
	nb := len(tipStats.Buckets)
	bar := nb - 3
	var inBar int64
	for _, s := range tipStats.Series {
		inBar += s.Counts[bar]
	}
	overBox, err := chromedp.Run(p.ctx, chromedp.Evaluate[[]float64](`(() => { const r = document.querySelector('#hist .u-over').getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()`))
	if err != nil || len(overBox) != 4 {
		t.Fatalf("the chart's plot area: %v %v", overBox, err)
	}
	span := float64(tipStats.Buckets[nb-1] + tipStats.Step - tipStats.Buckets[0])
	x := overBox[0] + overBox[2]*(float64(tipStats.Buckets[bar]-tipStats.Buckets[0])+float64(tipStats.Step)/2)/span
	p.do(chromedp.MouseEvent(chromedp.MouseMoved, x, overBox[1]+overBox[3]/2))
	tipFrom := time.UnixMilli(tipStats.Buckets[bar]).In(kolkata).Format("2006-01-02 15:04:05")
	tipTo := time.UnixMilli(tipStats.Buckets[bar] + tipStats.Step - 1).In(kolkata).Format("15:04:05")
	p.poll("the bar's tooltip", fmt.Sprintf(`(() => { const b = document.querySelector('#hist .hist-tip'); return b && !b.hidden && b.dataset.index === '%d' && b.textContent.startsWith(%q) && b.textContent.endsWith('total %d'); })()`, bar, tipFrom+" – "+tipTo, inBar), 5*time.Second)
	p.shot("time-tooltip")
	p.do(chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('tz'); s.value = 'utc'; s.dispatchEvent(new Event('change')); })()`))
	p.poll("UTC", `document.querySelector('th .tz-label').textContent === 'UTC' && `+rows+` === 100`, 15*time.Second)
	if got, want := firstTime(time.UTC); got != want {
		t.Fatalf("UTC time in the table %q; want %q", got, want)
	}
	p.do(chromedp.Reload())
	p.poll("UTC is remembered", `document.getElementById('tz').value === 'utc' && document.querySelector('th .tz-label').textContent === 'UTC' && `+rows+` === 100`, 15*time.Second)
	if got, want := firstTime(time.UTC); got != want {
		t.Fatalf("after a reload, the time in the table %q; want %q", got, want)
	}
	p.do(chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('tz'); s.value = 'local'; s.dispatchEvent(new Event('change')); })()`))
	p.poll("local again", `document.querySelector('th .tz-label').textContent !== 'UTC' && `+rows+` === 100 && document.getElementById('hist').dataset.bands`, 15*time.Second)

	// 1. The legend: hiding info leaves every other series drawn with its own counts and colour.
	var stats levelStats
	apiGet(t, srv.URL+"/logs/stats?"+p.str(`document.getElementById('hist').dataset.query`), &stats)
	want := map[string][]int64{}
	for _, s := range stats.Series {
		want[fmt.Sprint(s.Value)] = s.Counts
	}
	legend := func(label string) string {
		return fmt.Sprintf(`[...document.querySelectorAll('#hist .u-legend .u-series')].find(r => r.textContent.trim().startsWith(%q)).querySelector('th')`, label+" ")
	}
	type band struct {
		Series string  `json:"series"`
		Color  string  `json:"color"`
		Counts []int64 `json:"counts"`
	}
	bands := func() map[string]band {
		var bs []band
		if err := json.Unmarshal([]byte(p.str(`document.getElementById('hist').dataset.bands`)), &bs); err != nil {
			t.Fatal(err)
		}
		m := map[string]band{}
		for _, b := range bs {
			m[b.Series] = b
		}
		return m
	}
	p.clickAt(legend("info"))
	p.poll("info hidden", `!document.getElementById('hist').dataset.bands.includes('"info"')`, 5*time.Second)
	colors := map[string]string{"warn": "#e39b1b", "error": "#d64541", "debug": "#6b7d99", "fatal": "#7d3c98"}
	got := bands()
	for level, c := range colors {
		b, ok := got[level]
		if !ok || b.Color != c || fmt.Sprint(b.Counts) != fmt.Sprint(want[level]) {
			t.Fatalf("with info hidden, %s is drawn as %+v; want colour %s and counts %v", level, b, c, want[level])
		}
	}
	// A level outside the six has one colour, in its chip and in the chart.
	audit, ok := got["audit"]
	if !ok {
		t.Fatalf("no audit series among %v", got)
	}
	r, g, b := hexRGB(t, audit.Color)
	if chip := p.str(`getComputedStyle(document.querySelector('#levels input[value="audit"]').parentElement.querySelector('.swatch')).backgroundColor`); chip != fmt.Sprintf("rgb(%d, %d, %d)", r, g, b) {
		t.Fatalf("the audit chip is %s; its series is %s", chip, audit.Color)
	}
	p.shot("legend-info-hidden")
	p.clickAt(legend("info"))
	p.poll("info shown again", `document.getElementById('hist').dataset.bands.includes('"info"')`, 5*time.Second)

	// Live: the histogram's total follows new entries, refreshed at most every 2 seconds.
	statsRequests := `performance.getEntriesByType('resource').filter(e => e.name.includes('/logs/stats')).length`
	p.do(chromedp.Click(chromedp.ID("live")))
	p.poll("live on", `document.getElementById('status').dataset.live === 'on'`, 15*time.Second)
	before, _ := strconv.Atoi(p.str(statsRequests))
	for i := range 6 {
		postLogs(t, srv.URL, []map[string]any{{"project_id": a.ID, "message": fmt.Sprintf("live %d", i), "level": "warn", "time": time.Now().UnixMilli()}})
		time.Sleep(150 * time.Millisecond)
	}
	p.poll("Live updates the total", total+` === '256' && `+rows+` === 106`, 6*time.Second)
	time.Sleep(2500 * time.Millisecond) // any refresh still pending
	after, _ := strconv.Atoi(p.str(statsRequests))
	if d := after - before; d < 1 || d > 2 {
		t.Fatalf("six entries in a second under Live made %d requests to GET /logs/stats; want 1 or 2", d)
	}
	p.shot("live-histogram")
	p.do(chromedp.Click(chromedp.ID("live")))
	p.poll("live off", rows+` === 100 && !location.search.includes('live=1')`, 15*time.Second)

	// 2. The query bar: "/" focuses it; a field name, then its values, from the keyboard.
	p.do(chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
	p.slash()
	p.poll("/ focuses the query bar, and is not typed", `document.activeElement.id === 'query' && document.getElementById('query').value === ''`, 2*time.Second)
	p.do(chromedp.SendKeys(chromedp.ID("query"), "subj"))
	suggestions := `[...document.querySelectorAll('#suggest li')].map(li => li.textContent).join('|')`
	p.poll("field names offered", suggestions+` === 'subject'`, 5*time.Second)
	p.key(kb.Enter)
	p.poll("a field chosen: its values offered, most common first", `document.getElementById('query').value === 'subject:' && `+suggestions+` === 'checkout (84)|payments (83)|search (83)'`, 5*time.Second)
	p.shot("query-values")
	p.key(kb.ArrowDown, kb.Enter)
	p.poll("the value chosen", `document.getElementById('query').value === 'subject:payments '`, 5*time.Second)
	p.key(kb.Enter)
	p.poll("Enter runs the query", fmt.Sprintf(`new URLSearchParams(location.search).get('query') === 'subject:payments' && %s === 83 && %s === '83' && [...document.querySelectorAll('#rows tr.entry td:nth-child(3)')].every(td => td.textContent === 'payments')`, rows, total), 15*time.Second)
	// An attribute key from GET /logs/fields, chosen with Tab; a value quoted as the grammar needs.
	p.do(chromedp.SendKeys(chromedp.ID("query"), "http.m"))
	p.poll("attribute keys offered", suggestions+` === 'http.method'`, 5*time.Second)
	p.key(kb.Tab)
	p.poll("its values", `document.getElementById('query').value === 'subject:payments http.method:' && `+suggestions+` === 'GET (83)'`, 5*time.Second)
	p.key(kb.Escape)
	p.poll("Escape closes the list first", `document.getElementById('suggest').hidden && document.getElementById('query').value !== ''`, 2*time.Second)
	p.key(kb.Escape)
	p.poll("then clears the query", `document.getElementById('query').value === '' && !location.search.includes('query=') && `+rows+` === 100`, 15*time.Second)

	// A syntax error: the parser's message under the bar, and a caret at its position.
	bad := "level:error )"
	resp := explorerDo(t, http.MethodGet, srv.URL+"/logs?project_id="+a.ID+"&query="+url.QueryEscape(bad), nil)
	var problem struct {
		Errors []struct {
			Parameter string `json:"parameter"`
			Detail    string `json:"detail"`
		} `json:"errors"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&problem)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || len(problem.Errors) != 1 || problem.Errors[0].Parameter != "query" {
		t.Fatalf("GET /logs?query=%s = %d %+v", bad, resp.StatusCode, problem)
	}
	parserSays := problem.Errors[0].Detail
	p.do(chromedp.SendKeys(chromedp.ID("query"), bad))
	p.key(kb.Enter)
	p.poll("the error under the bar", `!document.getElementById('query-error').hidden`, 15*time.Second)
	if got := p.str(`document.querySelector('#query-error .query-msg').textContent`); got != parserSays {
		t.Fatalf("under the bar %q; the API said %q", got, parserSays)
	}
	pos, _ := strconv.Atoi(p.str(`document.getElementById('query-error').dataset.position`))
	wantCaret := bad + "\n" + strings.Repeat(" ", min(pos-1, len(bad))) + "^"
	if got := p.str(`document.querySelector('#query-error pre.caret').textContent`); pos < 1 || got != wantCaret {
		t.Fatalf("caret %q at %d; want %q", got, pos, wantCaret)
	}
	if msg := p.str(`document.getElementById('message').hidden`); msg != "true" {
		t.Fatalf("the query's error is also in the page's message box")
	}
	p.shot("query-error")
	p.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('query').focus()`))
	p.key(kb.Escape)
	p.poll("cleared", `document.getElementById('query-error').hidden && `+rows+` === 100`, 15*time.Second)

	// 4. Fields: the top values of the fields, with the API's exact counts; the histogram split
	// by one; a click narrows the query, a Shift-click excludes.
	var facets struct {
		Facets []struct {
			Field  string `json:"field"`
			Values []struct {
				Value any   `json:"value"`
				Count int64 `json:"count"`
			} `json:"values"`
			Other   int64 `json:"other"`
			Missing int64 `json:"missing"`
		} `json:"facets"`
	}
	p.poll("the fields panel", `!!document.querySelector('#fields button.value[data-field="http.method"]')`, 15*time.Second)
	// The panel keeps one height whatever arrives (so the table below never moves): every card,
	// five values and its "other" line included, fits in it uncut.
	if cut := p.str(`(() => { const b = document.getElementById('fields'); const bottom = b.getBoundingClientRect().top + b.clientTop + b.clientHeight; return JSON.stringify([...b.children].filter((c) => c.getBoundingClientRect().bottom > bottom + 0.5).map((c) => c.querySelector('h3').textContent + ' ' + Math.round(c.getBoundingClientRect().height) + 'px in ' + b.clientHeight + 'px')); })()`); cut != "[]" {
		t.Fatalf("fields panel cards cut off at the bottom: %s", cut)
	}
	facetQuery := p.str(`new URLSearchParams(document.getElementById('hist').dataset.query)`)
	fq, _ := url.ParseQuery(facetQuery)
	fq.Del("step")
	fq.Del("by")
	fq.Del("series")
	fq.Set("limit", "5")
	for _, f := range []string{"level", "subject", "user_id", "http.method", "order"} {
		fq.Add("field", f)
	}
	apiGet(t, srv.URL+"/logs/facets?"+fq.Encode(), &facets)
	shown := p.str(`JSON.stringify([...document.querySelectorAll('#fields button.value')].map(b => [b.dataset.field, b.dataset.value, b.querySelector('.n').textContent]))`)
	for _, f := range facets.Facets {
		for _, v := range f.Values {
			cell, _ := json.Marshal([]string{f.Field, fmt.Sprint(v.Value), strconv.FormatInt(v.Count, 10)})
			if !strings.Contains(shown, string(cell)) {
				t.Fatalf("the fields panel lacks %s: %s", cell, shown)
			}
		}
	}
	p.do(chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('split'); s.value = 'subject'; s.dispatchEvent(new Event('change')); })()`))
	p.poll("split by subject", `location.search.includes('by=subject') && new URLSearchParams(document.getElementById('hist').dataset.query).get('by') === 'subject' && document.getElementById('hist').dataset.bands.includes('"checkout"')`, 15*time.Second)
	var split levelStats
	apiGet(t, srv.URL+"/logs/stats?"+p.str(`document.getElementById('hist').dataset.query`), &split)
	got = bands()
	if len(got) != len(split.Series) {
		t.Fatalf("split by subject: %d bands for %d series", len(got), len(split.Series))
	}
	for _, s := range split.Series {
		k := "(none)"
		if s.Value != nil {
			k = fmt.Sprint(s.Value)
		}
		if fmt.Sprint(got[k].Counts) != fmt.Sprint(s.Counts) {
			t.Fatalf("split by subject: %s drawn %v; the API counts %v", k, got[k].Counts, s.Counts)
		}
	}
	p.shot("fields-split")
	p.clickAt(`document.querySelector('#fields button.value[data-field="subject"][data-value="checkout"]')`)
	p.poll("a click narrows", fmt.Sprintf(`new URLSearchParams(location.search).get('query') === 'subject:checkout' && %s === '84'`, total), 15*time.Second)
	p.poll("the panel follows", `document.getElementById('fields').dataset.query === 'subject:checkout' && !!document.querySelector('#fields button.value[data-field="level"][data-value="info"]')`, 15*time.Second)
	p.clickAt(`document.querySelector('#fields button.value[data-field="level"][data-value="info"]')`, chromedp.ButtonModifiers(chromedp.ModifierShift))
	checkoutNotInfo := 0
	for i := range n {
		if i%3 == 0 && domain.CanonicalLevel(seedLevels[i%len(seedLevels)]) != "info" {
			checkoutNotInfo++
		}
	}
	p.poll("a Shift-click excludes", fmt.Sprintf(`new URLSearchParams(location.search).get('query') === 'subject:checkout -level:info' && %s === '%d' && [...document.querySelectorAll('#rows tr.entry')].every(r => r.children[2].textContent === 'checkout' && r.children[1].textContent !== 'info')`, total, checkoutNotInfo), 15*time.Second)
	p.shot("fields-narrowed")
	p.do(chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('split'); s.value = 'level'; s.dispatchEvent(new Event('change')); })()`))
	p.poll("split by level again", `!location.search.includes('by=')`, 15*time.Second)
	p.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('query').focus()`))
	p.key(kb.Escape)
	p.poll("query cleared", `document.getElementById('query').value === '' && `+rows+` === 100`, 15*time.Second)

	// 3. History: zoom out, then in on a bar; Back and Forward walk them, each reloaded.
	search := func() string { return p.str(`location.search`) }
	start := search()
	p.do(chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`), chromedp.Click(chromedp.ID("zoom-out")))
	p.poll("zoomed out", `location.search.includes('range=abs')`, 5*time.Second)
	p.poll("zoomed out: reloaded", total+` === '256'`, 15*time.Second)
	out := search()
	from := func(s string) string { v, _ := url.ParseQuery(strings.TrimPrefix(s, "?")); return v.Get("from") }
	if f, _ := strconv.ParseInt(from(out), 10, 64); f == 0 {
		t.Fatalf("zoom out: %s", out)
	}
	p.clickAt(`document.querySelector('#hist .u-over')`)
	p.poll("zoomed in on a bar", fmt.Sprintf(`location.search !== %q && location.search.includes('range=abs')`, out), 5*time.Second)
	in := search()
	histFrom := `new URLSearchParams(document.getElementById('hist').dataset.query).get('start_time')`
	p.poll("zoomed in: reloaded", histFrom+` === `+strconv.Quote(from(in)), 15*time.Second)
	p.do(chromedp.Evaluate[chromedp.Void](`history.back()`))
	p.poll("Back: the zoomed-out range", fmt.Sprintf(`location.search === %q && %s === %q && %s === '256'`, out, histFrom, from(out), total), 15*time.Second)
	p.do(chromedp.Evaluate[chromedp.Void](`history.back()`))
	p.poll("Back: the last hour", fmt.Sprintf(`location.search === %q && %s === 100`, start, rows), 15*time.Second)
	p.do(chromedp.Evaluate[chromedp.Void](`history.forward()`))
	p.poll("Forward: zoomed out again", fmt.Sprintf(`location.search === %q && %s === %q`, out, histFrom, from(out)), 15*time.Second)
	p.shot("history-forward")

	// 6. Messages keep their line breaks: two lines in the table, all of them expanded, wrapped
	// between words, and only a token longer than the line broken.
	long := strings.Repeat("x", 400)
	probe := "probe: payment declined\n  at Checkout.pay (checkout.js:42)\n  at main (main.js:7)\n" + long + "\n" + strings.Repeat("wrapped words only ", 30)
	postLogs(t, srv.URL, []map[string]any{{"project_id": a.ID, "message": probe, "level": "error", "time": time.Now().UnixMilli()}})
	p.do(chromedp.Navigate(srv.URL + "/ui?project=" + a.ID + "&q=probe"))
	p.poll("the probe", rows+` === 1`, 15*time.Second)
	var m struct {
		Text, WhiteSpace, Wrap, Break string
		Lines, FullLines              float64
		Width                         float64
	}
	read := func(sel string) {
		t.Helper()
		text := p.str(`JSON.stringify((() => { const e = document.querySelector(` + strconv.Quote(sel) + `); const cs = getComputedStyle(e); const lh = parseFloat(cs.lineHeight) || 1.4 * parseFloat(cs.fontSize); return { Text: e.textContent, WhiteSpace: cs.whiteSpace, Wrap: cs.overflowWrap, Break: cs.wordBreak, Lines: e.clientHeight / lh, FullLines: e.scrollHeight / lh, Width: document.documentElement.scrollWidth }; })())`)
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			t.Fatal(err)
		}
	}
	read("#rows tr.entry .msg-preview")
	if m.Text != probe || m.WhiteSpace != "pre-wrap" || m.Wrap != "anywhere" || m.Break != "normal" || m.Lines < 1.5 || m.Lines > 2.5 || m.FullLines < 3 || m.Width > 1280 {
		t.Fatalf("the table's preview: %+v; want the message, pre-wrap, overflow-wrap anywhere, word-break normal, two lines shown of more, nothing wider than the page", m)
	}
	p.clickAt(`document.querySelector('#rows tr.entry td:nth-child(2)')`)
	p.poll("expanded", `!!document.querySelector('tr.detail .msg')`, 5*time.Second)
	read("tr.detail .msg")
	if m.Text != probe || m.WhiteSpace != "pre-wrap" || m.Wrap != "anywhere" || m.Break != "normal" || m.Lines < 6 || m.Lines != m.FullLines || m.Width > 1280 {
		t.Fatalf("the expanded message: %+v; want all its lines, wrapped, nothing wider than the page", m)
	}
	p.shot("multiline")

	// 7. Saved searches: save the query and range under a name, a taken name refused with the
	// reason, open it from a clean view, delete it; the API holds what the menu says.
	p.do(chromedp.Navigate(srv.URL + "/ui?project=" + a.ID + "&range=24h&query=" + url.QueryEscape("subject:checkout")))
	p.poll("a query over a day", total+` === '84'`, 15*time.Second)
	p.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('saved').open = true`))
	p.poll("the menu, empty", `document.getElementById('saved-list').textContent.includes('No saved searches')`, 15*time.Second)
	name := `checkout <b>"only"</b>`
	p.do(chromedp.SendKeys(chromedp.ID("saved-name"), name), chromedp.Click(chromedp.ID("saved-save")))
	p.poll("saved", fmt.Sprintf(`[...document.querySelectorAll('#saved-list li.saved-item')].map(li => li.querySelector('.saved-open').textContent + '|' + li.querySelector('.saved-query').textContent).join() === %q`, name+"|subject:checkout"), 15*time.Second)
	var saved []struct {
		ID           string `json:"id"`
		Name         string `json:"name"`
		Query        string `json:"query"`
		RangeSeconds int    `json:"range_seconds"`
	}
	apiGet(t, srv.URL+"/searches?project_id="+a.ID, &saved)
	if len(saved) != 1 || saved[0].Name != name || saved[0].Query != "subject:checkout" || saved[0].RangeSeconds != 86400 {
		t.Fatalf("GET /searches = %+v", saved)
	}
	p.do(chromedp.SendKeys(chromedp.ID("saved-name"), name), chromedp.Click(chromedp.ID("saved-save")))
	p.poll("a taken name", `document.getElementById('saved-msg').textContent.includes('already exists')`, 15*time.Second)
	p.shot("saved-searches")
	p.do(chromedp.Navigate(srv.URL + "/ui?project=" + a.ID))
	p.poll("a clean view", rows+` === 100 && `+total+` === '257'`, 15*time.Second)
	p.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('saved').open = true`))
	p.poll("listed", `!!document.querySelector('#saved-list .saved-open')`, 15*time.Second)
	p.do(chromedp.Click(chromedp.CSS(`#saved-list .saved-open`)))
	p.poll("opened", `new URLSearchParams(location.search).get('query') === 'subject:checkout' && new URLSearchParams(location.search).get('range') === '24h' && `+total+` === '84'`, 15*time.Second)
	p.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('saved').open = true`))
	p.poll("listed again", `!!document.querySelector('#saved-list .saved-delete')`, 15*time.Second)
	p.do(chromedp.Click(chromedp.CSS(`#saved-list .saved-delete`)))
	p.poll("deleted", `document.getElementById('saved-list').textContent.includes('No saved searches')`, 15*time.Second)
	apiGet(t, srv.URL+"/searches?project_id="+a.ID, &saved)
	if len(saved) != 0 {
		t.Fatalf("after Delete, GET /searches = %+v", saved)
	}

	// Hostile content renders as text, in the table, the expanded entry and the fields panel.
	evil := `<img src=x onerror="window.pwned=1">`
	hostile := "hostile-probe " + evil + " </script>\u202egnp.exe"
	postLogs(t, srv.URL, []map[string]any{{"project_id": a.ID, "message": hostile, "level": "error", "subject": "<b>bold</b>", "user_id": evil, "time": time.Now().UnixMilli(), "attributes": map[string]any{"evil": evil}}})
	p.do(chromedp.Navigate(srv.URL + "/ui?project=" + a.ID + "&q=hostile-probe"))
	p.poll("the hostile entry", rows+` === 1 && !!document.querySelector('#fields button.value[data-field="evil"]')`, 15*time.Second)
	p.clickAt(`document.querySelector('#rows tr.entry td:nth-child(2)')`)
	p.poll("expanded", `!!document.querySelector('tr.detail .msg')`, 5*time.Second)
	texts := p.str(`JSON.stringify([document.querySelector('#rows tr.entry .msg-preview').textContent, document.querySelector('tr.detail .msg').textContent, document.querySelector('#rows tr.entry td:nth-child(3)').textContent, document.querySelector('#rows tr.entry td:nth-child(4)').textContent, document.querySelector('#fields button.value[data-field="evil"] .v').textContent, document.querySelector('#fields button.value[data-field="subject"] .v').textContent])`)
	var shownTexts []string
	_ = json.Unmarshal([]byte(texts), &shownTexts)
	if wantTexts := []string{hostile, hostile, "<b>bold</b>", evil, evil, "<b>bold</b>"}; !slices.Equal(shownTexts, wantTexts) {
		t.Fatalf("hostile content shown as %q; want the text %q", shownTexts, wantTexts)
	}
	if got := p.str(`document.querySelectorAll('main img, main b, main script:not([src])').length + ':' + String(window.pwned)`); got != "0:undefined" {
		t.Fatalf("hostile content became markup: %s", got)
	}
	// A project named in markup, holding a 64 KiB message of markup, script ends and bidi
	// controls: the name in the project menu and the whole message in the expanded entry are
	// their text, and nothing of them becomes an element.
	hostileName := evil + "</script>\u202e"
	body, _ := json.Marshal(map[string]any{"name": hostileName})
	resp = explorerDo(t, http.MethodPost, srv.URL+"/projects", bytes.NewReader(body))
	var named struct {
		ID string `json:"id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&named)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || err != nil {
		t.Fatalf("POST /projects with a hostile name = %d, %v", resp.StatusCode, err)
	}
	big := []rune(strings.Repeat(evil+" </script><script>window.pwned=2</script>\u202e\u2066 ", 1200))
	for len(string(big)) > 64<<10 {
		big = big[:len(big)-1]
	}
	postLogs(t, srv.URL, []map[string]any{{"project_id": named.ID, "message": string(big), "level": "error", "time": time.Now().UnixMilli()}})
	p.do(chromedp.Navigate(srv.URL + "/ui?project=" + named.ID))
	p.poll("the 64 KiB entry", rows+` === 1`, 15*time.Second)
	p.clickAt(`document.querySelector('#rows tr.entry td:nth-child(2)')`)
	p.poll("expanded", `!!document.querySelector('tr.detail .msg')`, 5*time.Second)
	shownBig := p.str(`JSON.stringify([document.querySelector('#project option:checked').textContent, document.querySelector('tr.detail .msg').textContent])`)
	var bigTexts []string
	_ = json.Unmarshal([]byte(shownBig), &bigTexts)
	if len(bigTexts) != 2 || bigTexts[0] != hostileName || bigTexts[1] != string(big) {
		var name string
		var msgBytes int
		if len(bigTexts) == 2 {
			name, msgBytes = bigTexts[0], len(bigTexts[1])
		}
		t.Fatalf("a hostile project name and a 64 KiB message shown as %d texts, the name %q, the message %d bytes; want the name %q and the %d-byte message", len(bigTexts), name, msgBytes, hostileName, len(string(big)))
	}
	if got := p.str(`document.querySelectorAll('main img, main b, main script:not([src]), header img, header script:not([src])').length + ':' + String(window.pwned)`); got != "0:undefined" {
		t.Fatalf("the hostile project or message became markup: %s", got)
	}

	// 8. States: an unknown project said plainly (and no other shown); placeholders keep the
	// layout while the table loads; an empty result says what to try; a failure offers a retry.
	p.do(chromedp.Navigate(srv.URL + "/ui?project=no-such-project"))
	p.poll("an unknown project", `document.getElementById('message').textContent.includes('No project has the id “no-such-project”') && document.getElementById('project').value === '' && `+rows+` === 0 && !document.querySelector('#hist canvas')`, 15*time.Second)
	time.Sleep(300 * time.Millisecond) // nothing else arrives
	if got := p.str(rows + ` + document.querySelectorAll('#hist canvas').length`); got != "0" {
		t.Fatalf("a link to an unknown project shows data: %s", got)
	}
	p.shot("unknown-project")
	p.do(chromedp.Navigate(srv.URL + "/ui?project=" + a.ID + "&query=nosuchwordanywhere"))
	p.poll("the empty state", `!!document.querySelector('#more .empty') && [...document.querySelectorAll('#more .empty button')].map(b => b.textContent).join('|') === 'Widen the range to the last 7 days|Remove the query' && document.querySelector('#more .empty code').textContent.includes('POST')`, 15*time.Second)
	if h, _ := strconv.ParseFloat(p.str(`document.getElementById('hist').getBoundingClientRect().height`), 64); h < 180 {
		t.Fatalf("the chart's box is %v pixels high with nothing in it; it keeps at least 180", h)
	}
	p.shot("empty")
	p.do(chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#more .empty button')].find(b => b.textContent === 'Remove the query').click()`))
	p.poll("the query removed", rows+` === 100 && !location.search.includes('query=')`, 15*time.Second)
	if got := p.str(`(document.getElementById('filters').requestSubmit(), document.querySelectorAll('#rows tr.placeholder').length)`); got != "8" {
		t.Fatalf("while the table loads it holds %s placeholder rows; want 8", got)
	}
	p.poll("placeholders replaced", rows+` === 100 && document.querySelectorAll('#rows tr.placeholder').length === 0`, 15*time.Second)
	block := func(patterns ...string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
				return chromedp.Void{}, err
			}
			bp := []*network.BlockPattern{}
			for _, u := range patterns {
				bp = append(bp, &network.BlockPattern{URLPattern: u, Block: true})
			}
			_, err := cdp.Call(ctx, t, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: bp})
			return chromedp.Void{}, err
		}
	}
	p.do(block(srv.URL+"/logs?*"), chromedp.Evaluate[chromedp.Void](`document.getElementById('filters').requestSubmit()`))
	p.poll("a failure, with a retry", `!!document.getElementById('retry') && `+rows+` === 0`, 15*time.Second)
	p.shot("error-retry")
	p.do(block("*://blocked.invalid/*")) // nothing of the page's
	time.Sleep(300 * time.Millisecond)   // the network service applies it
	p.do(chromedp.Click(chromedp.ID("retry")))
	p.poll("retried", rows+` === 100 && !document.getElementById('retry')`, 15*time.Second)

	// 9. Dark mode follows the system and has a remembered switch; on a phone the filters wait
	// behind a button, bars stay several pixels wide and nothing is cut off.
	scheme := func(v string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
			return chromedp.Void{}, err
		}
	}
	bg := `getComputedStyle(document.body).backgroundColor`
	const dark, light = "rgb(20, 24, 31)", "rgb(255, 255, 255)"
	setTheme := func(v string) {
		p.do(chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('theme'); s.value = '` + v + `'; s.dispatchEvent(new Event('change')); })()`))
	}
	p.do(scheme("dark"), chromedp.Navigate(srv.URL+"/ui?project="+a.ID))
	p.poll("dark by the system's choice", fmt.Sprintf(`%s === %q && %s === 100 && !!document.querySelector('#hist canvas')`, bg, dark, rows), 15*time.Second)
	p.shot("dark-1280x800")
	setTheme("light")
	p.poll("light by choice", fmt.Sprintf(`%s === %q`, bg, light), 5*time.Second)
	p.do(chromedp.Reload())
	p.poll("the choice remembered", fmt.Sprintf(`%s === %q && document.getElementById('theme').value === 'light' && %s === 100`, bg, light, rows), 15*time.Second)
	setTheme("auto")
	p.poll("the system's again", fmt.Sprintf(`%s === %q`, bg, dark), 5*time.Second)

	visible := func(id string) string {
		return `(document.getElementById('` + id + `').getClientRects().length > 0)`
	}
	phone := func(name string) {
		t.Helper()
		p.poll("phone "+name, fmt.Sprintf(`%s === 100 && %s && %s && !%s && document.documentElement.scrollWidth === 390 && !!document.querySelector('#hist canvas')`, rows, visible("filters-toggle"), visible("query"), visible("project")), 15*time.Second)
		buckets, _ := strconv.Atoi(p.str(`document.getElementById('hist').dataset.buckets`))
		width, _ := strconv.ParseFloat(p.str(`document.querySelector('#hist .u-over').getBoundingClientRect().width`), 64)
		if buckets == 0 || buckets > 40 || width/float64(buckets) < 6 {
			t.Fatalf("phone: %d bars over %v pixels", buckets, width)
		}
		p.shot("390x844-" + name)
	}
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Reload())
	phone("dark")
	p.do(scheme("light"), chromedp.Reload())
	phone("light")
	now := time.Now().UnixMilli()
	p.do(chromedp.Navigate(fmt.Sprintf("%s/ui?project=%s&range=abs&from=%d&to=%d", srv.URL, a.ID, now-3600_000, now)))
	p.poll("phone, an absolute range", rows+` === 100 && !`+visible("from"), 15*time.Second)
	p.do(chromedp.Click(chromedp.ID("filters-toggle")))
	p.poll("the filters open", visible("project")+` && `+visible("from")+` && `+visible("to"), 5*time.Second)
	if got, want := p.str(`document.getElementById('from').value`), time.UnixMilli(now-3600_000).In(kolkata).Format("2006-01-02 15:04:05"); got != want {
		t.Fatalf("From reads %q; want %q, the page's one format", got, want)
	}
	for _, id := range []string{"project", "range", "from", "to", "q", "user", "subject", "trace", "live"} {
		if r, _ := strconv.ParseFloat(p.str(`document.getElementById('`+id+`').getBoundingClientRect().right`), 64); r > 390 {
			t.Errorf("phone: #%s ends at %v pixels, past the 390 of the screen", id, r)
		}
	}
	if w := p.str(`document.documentElement.scrollWidth`); w != "390" {
		t.Fatalf("phone with the filters open: the page is %s pixels wide", w)
	}
	p.shot("390x844-filters")
	p.do(chromedp.EmulateViewport(1280, 800))

	p.consoleClean()
}

// hexRGB reads a #rrggbb colour.
func hexRGB(t *testing.T, c string) (r, g, b int) {
	t.Helper()
	if _, err := fmt.Sscanf(c, "#%02x%02x%02x", &r, &g, &b); err != nil {
		t.Fatalf("colour %q: %v", c, err)
	}
	return r, g, b
}
