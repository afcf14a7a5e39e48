package e2e

import (
	"log/slog"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/app/server"
)

// TestExplorerAlertsInChromium makes an alert rule from the search in view, then sees it listed
// with its state and last evaluation, and its history, as the server's own evaluator left them.
func TestExplorerAlertsInChromium(t *testing.T) {
	browserSuite(t)
	for _, s := range e2eStores() {
		t.Run(s.name, func(t *testing.T) { testExplorerAlerts(t, s) })
	}
}

func testExplorerAlerts(t *testing.T, s namedStore) {
	st := s.open(t)
	a, _ := seedProjects(t, st)
	rcv := newReceiver(t)
	cfg := server.DefaultConfig()
	cfg.APIKeys = apitest.KeyLine("admin", explorerKey)
	cfg.AlertTargets = rcv.srv.Listener.Addr().String() // a loopback target is reached only when listed with its port
	cfg.AlertEvalEvery, cfg.AlertDeliverEvery = 50*time.Millisecond, 50*time.Millisecond
	svc, err := server.New(cfg, st, slog.New(slog.DiscardHandler), server.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler)
	t.Cleanup(srv.Close)
	stop, err := svc.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	now := time.Now().UnixMilli()
	postLogs(t, srv.URL, []map[string]any{
		{"project_id": a.ID, "message": "boom", "level": "error", "time": now - 60_000},
		{"project_id": a.ID, "message": "bang", "level": "error", "time": now - 30_000},
		{"project_id": a.ID, "message": "fine", "level": "info", "time": now - 20_000},
	})

	p := openBrowserPage(t, s.name+"-alerts")
	p.do(chromedp.Navigate(srv.URL + "/ui?project=" + a.ID + "&range=1h&query=" + url.QueryEscape("level:error")))
	p.do(chromedp.SendKeys(chromedp.ID("key"), explorerKey+kb.Enter))
	p.poll("the search", `document.querySelectorAll('#rows tr.entry').length === 2`, 15*time.Second)
	p.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('alerts').open = true`))
	p.poll("the menu, empty", `document.getElementById('alerts-list').textContent.includes('No alert rules')`, 15*time.Second)
	p.do(chromedp.SendKeys(chromedp.ID("alert-url"), rcv.srv.URL+"/hook"), chromedp.SendKeys(chromedp.ID("alert-name"), "errors <b>x</b>"),
		chromedp.Click(chromedp.ID("alert-create")))
	p.poll("created", `document.getElementById('alerts-msg').textContent.includes('Created')`, 15*time.Second)

	var rules []struct {
		ID            string `json:"id"`
		Name          string `json:"name"`
		Query         string `json:"query"`
		WindowSeconds int    `json:"window_seconds"`
		State         string `json:"state"`
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		apiGet(t, srv.URL+"/alerts?project_id="+a.ID, &rules)
		if len(rules) == 1 && rules[0].State == "firing" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /alerts = %+v, want one rule firing", rules)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := rules[0]; r.Name != "errors <b>x</b>" || r.Query != "level:error" || r.WindowSeconds != 3600 {
		t.Fatalf("the rule made from the search: %+v", r)
	}
	// Opened again, the menu lists it firing, with the count of its last evaluation.
	p.do(chromedp.Evaluate[chromedp.Void](`(() => { const d = document.getElementById('alerts'); d.open = false; setTimeout(() => { d.open = true; }, 50); })()`))
	p.poll("listed firing", `(() => { const li = document.querySelector('#alerts-list li.alert-item'); return !!li && li.dataset.state === 'firing' && li.querySelector('.alert-last').textContent.startsWith('last: 2 at ') && li.querySelector('.alert-name').textContent === 'errors <b>x</b>'; })()`, 15*time.Second)
	p.do(chromedp.Click(chromedp.CSS(`#alerts-list .alert-history-toggle`)))
	p.poll("the history", `[...document.querySelectorAll('#alerts-list .alert-transition')].map(li => li.textContent.includes('ok → firing, 2 in')).join() === 'true'`, 15*time.Second)
	p.shot("alerts")
	// The firing is delivered from the outbox on the deliverer's own tick, after the rule's
	// status is saved: it may still be on its way when the page shows the status.
	waitFor(t, "the firing notification", func() bool { return len(rcv.got()) >= 1 })
	if got := rcv.got(); got[0]["state"] != "firing" {
		t.Errorf("the receiver got %v, want the firing", got)
	}
	p.do(chromedp.Click(chromedp.CSS(`#alerts-list .alert-delete`)))
	p.poll("deleted", `document.getElementById('alerts-list').textContent.includes('No alert rules')`, 15*time.Second)
	p.consoleClean()
}
