package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
)

// TestExplorerContextInChromium drives the explorer's context, trace and export in headless
// Chromium on both stores: from an opened entry, Context shows the entry highlighted and in view
// among the neighbours GET /logs/context answers, in its order; "load more" on either side asks
// for more and the rows follow the API; the neighbours narrow to the entry's subject; a trace id
// opens every entry of the trace, beyond the list's range, oldest first, indented by parent span
// (or grouped by span where no parent is recorded), and Back returns to the list; the two export
// links carry the list's filters, query and range, and the files the page saves are, line by line
// and row by row, the entries GET /logs lists for them.
func TestExplorerContextInChromium(t *testing.T) {
	browserSuite(t)
	for _, s := range e2eStores() {
		t.Run(s.name, func(t *testing.T) { testExplorerContext(t, s) })
	}
}

// apiEntry is an entry as the API renders it, every field kept.
type apiEntry map[string]any

func (e apiEntry) id() string { s, _ := e["id"].(string); return s }

func apiEntryIDs(es []apiEntry) []string {
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.id()
	}
	return ids
}

func testExplorerContext(t *testing.T, s namedStore) {
	st := s.open(t)
	a, _ := seedProjects(t, st)
	cfg := server.DefaultConfig()
	cfg.APIKeys = apitest.KeyLine("admin", explorerKey)
	_, srv := servetest.Serve(t, cfg, st, nil)
	const n = 250
	ids := seedExplorer(t, srv.URL, a.ID, n) // newest first

	// Two traces: one whose entries name their parent spans, one of older spans that do not;
	// each has entries far older than the list's range.
	now := time.Now().UnixMilli()
	traced := fmt.Sprintf("%032x", 0xabc1)
	plain := fmt.Sprintf("%032x", 0xabc2)
	span := func(i int) string { return fmt.Sprintf("%016x", 0xf00+i) }
	trace := []map[string]any{
		{"message": "request received", "time": now - 3*86400e3, "span_id": span(1)},
		{"message": "<b>query</b> started", "time": now - 3*86400e3 + 5, "span_id": span(2), "attributes": map[string]any{"parent_span_id": span(1)}},
		{"message": "row read", "time": now - 3*86400e3 + 9, "span_id": span(3), "attributes": map[string]any{"parent_span_id": span(2)}},
		{"message": "no span here", "time": now - 2*86400e3},
		{"message": "query done", "time": now - 60e3, "span_id": span(2), "attributes": map[string]any{"parent_span_id": span(1)}},
	}
	for _, e := range trace {
		e["project_id"], e["level"], e["subject"], e["trace_id"] = a.ID, "info", "tracing", traced
	}
	postLogs(t, srv.URL, trace)
	var flat []map[string]any
	for i := range 4 {
		flat = append(flat, map[string]any{"project_id": a.ID, "level": "debug", "message": fmt.Sprintf("flat %d", i),
			"time": now - 5*86400e3 + int64(i), "trace_id": plain, "span_id": span(10 + i%2)})
	}
	postLogs(t, srv.URL, flat)

	p := openBrowserPage(t, "context-"+s.name)
	rows := `document.querySelectorAll('#rows tr.entry').length`
	vrows := `document.querySelectorAll('#view-rows tr.ventry').length`
	viewIDs := func() []string {
		var got []string
		if err := json.Unmarshal([]byte(p.str(`JSON.stringify([...document.querySelectorAll('#view-rows tr.ventry')].map((r) => r.dataset.id))`)), &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	ctxIDs := func(id string, before, after int, query string) []string {
		t.Helper()
		var c struct {
			Before []apiEntry `json:"before"`
			Entry  apiEntry   `json:"entry"`
			After  []apiEntry `json:"after"`
		}
		q := url.Values{"project_id": {a.ID}, "id": {id}, "before": {strconv.Itoa(before)}, "after": {strconv.Itoa(after)}}
		if query != "" {
			q.Set("query", query)
		}
		apiGet(t, srv.URL+"/logs/context?"+q.Encode(), &c)
		return append(append(apiEntryIDs(c.Before), c.Entry.id()), apiEntryIDs(c.After)...)
	}
	inView := `(() => { const r = document.querySelector('#view-rows tr.ventry[data-id="%s"]').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; })()`
	// checkContext checks the rows against GET /logs/context, and that the row shown must be in
	// view: the entry when the context opens, the row that was at the edge after "load more".
	checkContext := func(step, id string, before, after int, query, shown string) []string {
		t.Helper()
		want := ctxIDs(id, before, after, query)
		p.poll(step, fmt.Sprintf(`%s === %d && document.querySelector('#view-rows tr.ctx-entry').dataset.id === %q && document.getElementById('view-status').textContent.startsWith('· %d before')`,
			vrows, len(want), id, slices.Index(want, id)), 15*time.Second)
		if got := viewIDs(); !slices.Equal(got, want) {
			t.Fatalf("%s: the rows are\n%q\nwant GET /logs/context's\n%q", step, got, want)
		}
		if got := p.str(`document.querySelectorAll('#view-rows tr.ctx-entry[aria-current=true]').length`); got != "1" {
			t.Fatalf("%s: %s highlighted entries", step, got)
		}
		if shown == "" {
			shown = id
		}
		if p.str(fmt.Sprintf(inView, shown)) != "true" {
			t.Fatalf("%s: the row %s is not in view", step, shown)
		}
		if !strings.Contains(p.str(`document.getElementById('view-rows').dataset.query`), "before="+strconv.Itoa(before)+"&after="+strconv.Itoa(after)) {
			t.Fatalf("%s: the page asked %s", step, p.str(`document.getElementById('view-rows').dataset.query`))
		}
		return want
	}

	// click scrolls the element into view and clicks it as a mouse would.
	click := func(expr string) {
		t.Helper()
		p.do(chromedp.Evaluate[chromedp.Void](`(` + expr + `).scrollIntoView({ block: 'center' })`))
		p.clickAt(expr)
	}

	p.do(chromedp.Navigate(srv.URL + "/ui?project=" + a.ID))
	p.do(chromedp.SendKeys(chromedp.ID("key"), explorerKey+kb.Enter))
	p.poll("the first page", rows+` === 100`, 15*time.Second)

	// 1. Context: the 61st newest entry has 189 older entries and 60 newer ones.
	id := ids[60]
	click(fmt.Sprintf(`document.querySelector('#rows tr.entry[data-id=%q]')`, id))
	p.poll("the entry opens", `!!document.querySelector('#rows tr.detail button.context')`, 5*time.Second)
	click(`document.querySelector('#rows tr.detail button.context')`)
	first := checkContext("context", id, 50, 50, "", "")
	if got := p.str(`new URLSearchParams(location.search).get('view') + ' ' + new URLSearchParams(location.search).get('id')`); got != "context "+id {
		t.Fatalf("the context's URL says %q", got)
	}
	if p.str(`getComputedStyle(document.getElementById('filters')).display + getComputedStyle(document.querySelector('section.results')).display`) != "nonenone" {
		t.Fatal("the list is still shown beside the context")
	}
	p.shot("context")
	click(`document.getElementById('more-before')`)
	more := checkContext("more before", id, 100, 50, "", first[0])
	p.shot("context-more-before")
	click(`document.getElementById('more-after')`)
	checkContext("more after", id, 100, 100, "", more[len(more)-1])
	if p.str(`!!document.getElementById('more-after')`) != "false" || !strings.Contains(p.str(`document.getElementById('view-below').textContent`), "last entry") {
		t.Fatal("past the project's newest entry, the page still offers more after")
	}
	p.shot("context-more-after")

	// Narrowed to the entry's subject: the API's neighbours under subject:"...".
	var one struct {
		Entry apiEntry `json:"entry"`
	}
	apiGet(t, srv.URL+"/logs/context?"+url.Values{"project_id": {a.ID}, "id": {id}, "before": {"0"}, "after": {"0"}}.Encode(), &one)
	subject, _ := one.Entry["subject"].(string)
	click(`document.querySelector('#view-tools input[value=subject]')`)
	checkContext("narrowed by subject", id, 50, 50, `subject:`+subject, "")
	if got := p.str(`[...document.querySelectorAll('#view-rows tr.ventry td:nth-child(3)')].every((td) => td.textContent === ` + strconv.Quote(subject) + `)`); got != "true" {
		t.Fatal("a neighbour of another subject")
	}
	p.shot("context-subject")
	click(`document.getElementById('view-back')`)
	p.poll("back to the list", `document.getElementById('view').hidden && `+rows+` === 100 && !new URLSearchParams(location.search).has('view')`, 15*time.Second)
	p.shot("context-back")

	// 2. Trace: from a row of the list, every entry of its trace, oldest first, beyond the range.
	var listed []apiEntry
	apiGet(t, srv.URL+"/logs?"+url.Values{"project_id": {a.ID}, "trace_id": {traced}, "order": {"asc"}}.Encode(), &listed)
	if len(listed) != len(trace) {
		t.Fatalf("GET /logs lists %d entries of the trace", len(listed))
	}
	recent := listed[len(listed)-1].id()
	p.poll("the trace's newest entry in the list", fmt.Sprintf(`!!document.querySelector('#rows tr.entry[data-id=%q]')`, recent), 15*time.Second)
	click(fmt.Sprintf(`document.querySelector('#rows tr.entry[data-id=%q]')`, recent))
	p.poll("the entry opens", `!!document.querySelector('#rows tr.detail button.trace-link')`, 5*time.Second)
	click(`document.querySelector('#rows tr.detail button.trace-link')`)
	p.poll("the trace", vrows+` === 5 && document.getElementById('view-below').textContent === 'The end of the trace.'`, 15*time.Second)
	if got, want := viewIDs(), apiEntryIDs(listed); !slices.Equal(got, want) {
		t.Fatalf("the trace's rows are\n%q\nwant GET /logs's, oldest first\n%q", got, want)
	}
	depths := p.str(`[...document.querySelectorAll('#view-rows tr.ventry')].map((r) => r.dataset.depth).join(',')`)
	if depths != "0,1,2,0,1" || p.str(`document.getElementById('view-rows').dataset.indent`) != "parents" {
		t.Fatalf("the trace's depths are %s (%s); want 0,1,2,0,1 by parent span", depths, p.str(`document.getElementById('view-rows').dataset.indent`))
	}
	if got := p.str(`[...document.querySelectorAll('#view-rows tr.ventry td.span .indent')].map((s) => Math.round(s.getBoundingClientRect().width) > 0).join(',')`); got != "false,true,true,false,true" {
		t.Fatalf("indentation drawn: %s", got)
	}
	if got := p.str(`document.querySelectorAll('#view-rows b').length + ' ' + document.querySelector('#view-rows tr.ventry:nth-child(2) td.msg').textContent`); got != "0 <b>query</b> started" {
		t.Fatalf("a message is not shown as text: %q", got)
	}
	p.shot("trace")
	p.do(chromedp.Evaluate[chromedp.Void](`history.back()`))
	p.poll("Back returns to the list", `document.getElementById('view').hidden && `+rows+` > 0 && !new URLSearchParams(location.search).has('view')`, 15*time.Second)
	p.shot("trace-back")
	p.do(chromedp.Navigate(srv.URL + "/ui?project=" + a.ID + "&view=trace&trace_id=" + plain))
	p.poll("a trace without parents", vrows+` === 4 && document.getElementById('view-rows').dataset.indent === 'spans'`, 15*time.Second)
	if depths := p.str(`[...document.querySelectorAll('#view-rows tr.ventry')].map((r) => r.dataset.depth).join(',')`); depths != "1,1,1,1" {
		t.Fatalf("grouped by span, the depths are %s", depths)
	}
	p.shot("trace-spans")

	// 3. Export: the links carry the list's filters, and the files are the API's entries.
	filters := url.Values{"project": {a.ID}, "range": {"1h"}, "subject": {"payments"}, "level": {"info", "error"}, "query": {`"status 200" OR "status 502"`}}
	p.do(chromedp.Navigate(srv.URL + "/ui?" + filters.Encode()))
	p.poll("the filtered list", rows+` > 0 && document.getElementById('export-csv').href.includes('start_time')`, 15*time.Second)
	hq, _ := url.ParseQuery(p.str(`document.getElementById('hist').dataset.query`))
	var want []apiEntry
	for _, f := range []string{"ndjson", "csv"} {
		href, err := url.Parse(p.str(`document.getElementById('export-` + f + `').href`))
		if err != nil {
			t.Fatal(err)
		}
		q := href.Query()
		if href.Path != "/logs/export" || q.Get("format") != f || q.Get("project_id") != a.ID || q.Get("subject") != "payments" ||
			!slices.Equal(q["log_level"], []string{"info", "error"}) || q.Get("query") != `"status 200" OR "status 502"` ||
			q.Get("start_time") != hq.Get("start_time") || q.Get("end_time") != hq.Get("end_time") || len(q) != 7 {
			t.Fatalf("the %s link is %s", f, href)
		}
		if f == "ndjson" {
			q.Del("format")
			q.Set("order", "asc")
			q.Set("limit", "10000")
			apiGet(t, srv.URL+"/logs?"+q.Encode(), &want)
			if len(want) == 0 {
				t.Fatal("the filters select nothing")
			}
		}
	}
	dir := t.TempDir()
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir})
		return err
	}))
	saved := func(f string) []byte {
		t.Helper()
		click(`document.getElementById('export-` + f + `')`)
		path := filepath.Join(dir, "logs-"+a.ID+"."+f)
		deadline := time.Now().Add(15 * time.Second)
		for {
			b, err := os.ReadFile(path)
			if err == nil && len(b) > 0 && p.str(`document.getElementById('export-`+f+`').dataset.saved`) == "1" {
				return b
			}
			if time.Now().After(deadline) {
				p.shot("failed")
				t.Fatalf("no %s saved in %s: %v", f, dir, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	nd := saved("ndjson")
	var got []apiEntry
	for line := range bytes.Lines(nd) {
		var e apiEntry
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("NDJSON line %q: %v", line, err)
		}
		got = append(got, e)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the NDJSON file holds %d entries, not the %d GET /logs lists:\n%v\n%v", len(got), len(want), got, want)
	}
	p.shot("export-ndjson")
	records, err := csv.NewReader(bytes.NewReader(saved("csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := []string{"time", "level", "subject", "user_id", "trace_id", "span_id", "message", "attributes"}
	if len(records) != len(want)+1 || !slices.Equal(records[0], head) {
		t.Fatalf("the CSV file has %d records, header %q; want %d entries", len(records), records[0], len(want))
	}
	for i, e := range want {
		r := records[i+1]
		cell := func(k string) string { s, _ := e[k].(string); return s }
		wantRow := []string{strconv.FormatInt(int64(e["time"].(float64)), 10), cell("level"), cell("subject"), cell("user_id"), cell("trace_id"), cell("span_id"), cell("message")}
		if !slices.Equal(r[:7], wantRow) {
			t.Fatalf("CSV row %d is %q; want %q", i+1, r, wantRow)
		}
		var attrs map[string]any
		if err := json.Unmarshal([]byte(r[7]), &attrs); err != nil || !reflect.DeepEqual(attrs, e["attributes"]) {
			t.Fatalf("CSV row %d attributes %q; want %v (%v)", i+1, r[7], e["attributes"], err)
		}
	}
	p.shot("export-csv")
	p.consoleClean()
}
