package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
	"example.com/obsvc/domain"
)

// BenchmarkExplorerFirstRender measures, in headless Chromium, the time from navigation to the
// explorer's first complete render of its default view (the last hour, newest first: the page's
// 'explorer-first-render' mark, set when the table's first page and the chart are both drawn)
// and the layout shift after load (the sum of the page's 'layout-shift' entries, read a second
// after the fields panel, which comes last, is filled), for a SQLite project holding
// EXPLORER_BENCH_ROWS entries (20,000 unless set, so that a plain -bench run stays quick) all in
// that hour, beside an empty project's in the same run. The entries go in through the store's
// own CreateLogs, 5,000 a batch (1,000,000 take about two minutes). Run it with
//
//	EXPLORER_BENCH_ROWS=1000000 go test -run '^$' -bench ExplorerFirstRender -benchtime 3x ./app/e2e/
func BenchmarkExplorerFirstRender(b *testing.B) {
	rows := 20_000
	if v := os.Getenv("EXPLORER_BENCH_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("EXPLORER_BENCH_ROWS=%q: want a positive number", v)
		}
		rows = n
	}
	var browser string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		b.Skip("no Chromium (apt-get install chromium)")
	}
	st := storetest.OpenSQLite(b)
	ctx := domain.WithPrincipal(b.Context(), domain.Principal{Admin: true})
	now := time.Now()
	full, empty := "0196b000-0000-7000-8000-000000000001", "0196b000-0000-7000-8000-000000000002"
	for i, id := range []string{full, empty} {
		if err := st.CreateProject(ctx, domain.Project{ID: id, Name: []string{"full", "empty"}[i], CreatedAt: now.UTC(), UpdatedAt: now.UTC()}); err != nil {
			b.Fatal(err)
		}
	}
	seeded := time.Now()
	if err := seedRenderStore(ctx, st, full, rows, now.UnixMilli()); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d entries in %s", rows, time.Since(seeded).Round(time.Millisecond))
	_, srv := servetest.Serve(b, server.DefaultConfig(), st, nil)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.UserDataDir(b.TempDir()), chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1280, 800))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(b.Context(), opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	// Every layout shift from the start of each document, summed as CLS sums them.
	observe := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.__cls = 0; window.__shifts = [];
new PerformanceObserver((l) => {
  for (const e of l.getEntries()) {
    if (e.hadRecentInput) continue;
    window.__cls += e.value;
    const name = (n) => !n ? '?' : n.id ? '#' + n.id : n.nodeName.toLowerCase() + (n.className && typeof n.className === 'string' ? '.' + n.className.split(' ')[0] : '') + (n.parentElement ? ' in ' + name(n.parentElement) : '');
    window.__shifts.push(e.value.toFixed(4) + ' at ' + Math.round(e.startTime) + ' ms: ' + e.sources.map((s) => name(s.node) + ' ' + Math.round(s.previousRect.y) + '→' + Math.round(s.currentRect.y)).join(', '));
  }
}).observe({ type: 'layout-shift', buffered: true });`,
		})
		return err
	})
	if err := chromedp.Do(bctx, observe, chromedp.EmulateViewport(1280, 800)); err != nil {
		b.Fatal(err)
	}
	// render opens the default view of a project and returns the time to its first render and
	// the layout shift up to a second after it.
	render := func(project string) (ms, cls float64) {
		b.Helper()
		if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/ui?project="+project)); err != nil {
			b.Fatal(err)
		}
		_, err := chromedp.Run(bctx, chromedp.Poll[any](`performance.getEntriesByName('explorer-first-render').length > 0`, chromedp.WithPollingTimeout(3*time.Minute)))
		// The API's requests, each with the time its answer ended, say where the time went.
		requests, _ := chromedp.Run(bctx, chromedp.Evaluate[[]string](`performance.getEntriesByType('resource').filter((r) => !r.name.includes('/ui/')).map((r) => new URL(r.name).pathname + ' ' + Math.round(r.responseEnd) + ' ms')`))
		if err != nil {
			said, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById('message').textContent + ' | ' + document.getElementById('hist-total').textContent + ' | ' + document.getElementById('more').textContent`))
			b.Fatalf("no first render of %s in 3 minutes: %v; requests: %q; the page says %q", project, err, requests, said)
		}
		if project != empty {
			b.Logf("requests of %s: %q", project, requests)
		}
		ms, err = chromedp.Run(bctx, chromedp.Evaluate[float64](`performance.getEntriesByName('explorer-first-render')[0].startTime`))
		if err != nil {
			b.Fatal(err)
		}
		// The layout shift once the fields panel, which comes last, has its values too, and a
		// second more.
		if _, err := chromedp.Run(bctx, chromedp.Poll[any](`document.getElementById('fields').childElementCount > 0 && !document.getElementById('fields').hasAttribute('aria-busy')`, chromedp.WithPollingTimeout(3*time.Minute))); err != nil {
			b.Fatalf("no fields of %s: %v", project, err)
		}
		time.Sleep(time.Second)
		cls, err = chromedp.Run(bctx, chromedp.Evaluate[float64](`window.__cls`))
		if err != nil {
			b.Fatal(err)
		}
		if cls > 0 {
			shifts, _ := chromedp.Run(bctx, chromedp.Evaluate[[]string](`window.__shifts`))
			b.Logf("layout shifts of %s: %q", project, shifts)
		}
		return ms, cls
	}
	render(empty) // the assets into the cache, as for anyone who has opened the page before
	var fullMS, emptyMS, fullCLS, emptyCLS []float64
	for b.Loop() {
		ms, cls := render(empty)
		emptyMS, emptyCLS = append(emptyMS, ms), append(emptyCLS, cls)
		ms, cls = render(full)
		fullMS, fullCLS = append(fullMS, ms), append(fullCLS, cls)
	}
	b.ReportMetric(median(fullMS), "ms-first-render")
	b.ReportMetric(median(emptyMS), "ms-first-render-empty")
	b.ReportMetric(slices.Max(fullCLS), "cls-max")
	b.ReportMetric(slices.Max(emptyCLS), "cls-max-empty")
	b.Logf("first render, median of %d: %.0f ms with %d entries, %.0f ms empty (target < 1000 ms); layout shift: max %.4f with entries, %.4f empty (target 0); all: %v / %v",
		len(fullMS), median(fullMS), rows, median(emptyMS), slices.Max(fullCLS), slices.Max(emptyCLS), fullMS, emptyMS)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// seedRenderStore writes rows entries into project through the store's own CreateLogs, 5,000 a
// batch, spread evenly over the hour before end (the explorer's default range), newest last.
func seedRenderStore(ctx context.Context, st interface {
	CreateLogs(context.Context, []domain.LogEntry, domain.LogWrite) (domain.Written, error)
}, project string, rows int, end int64) error {
	const batch = 5000
	levels := []string{"info", "info", "info", "debug", "warn", "error"}
	subjects := []string{"checkout", "payments", "search", "auth"}
	start := end - 3600e3 + 1000
	buf := make([]domain.LogEntry, 0, batch)
	for k := 0; k < rows; k += batch {
		buf = buf[:0]
		for i := k; i < min(k+batch, rows); i++ {
			t := start + int64(float64(i)*float64(3600e3-2000)/float64(rows))
			user := "u-" + strconv.Itoa(i%500)
			buf = append(buf, domain.LogEntry{
				ID:         fmt.Sprintf("%08x-%04x-7000-8000-%012x", t>>16, t&0xffff, i),
				ProjectID:  project,
				Time:       t,
				Level:      levels[i%len(levels)],
				Message:    fmt.Sprintf("GET /api/orders/%d completed with status %d in %d ms", i, []int{200, 201, 404, 502}[i%4], i%900),
				Subject:    &subjects[i%len(subjects)],
				UserID:     &user,
				Attributes: []byte(fmt.Sprintf(`{"http.method":"GET","order":%d}`, i)),
			})
		}
		if _, err := st.CreateLogs(ctx, buf, domain.LogWrite{}); err != nil {
			return fmt.Errorf("seed entries %d to %d: %w", k, k+len(buf), err)
		}
	}
	return nil
}
