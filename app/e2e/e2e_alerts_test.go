package e2e

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
)

// receiver is a local webhook receiver that keeps what it is sent.
type receiver struct {
	mu     sync.Mutex
	docs   []map[string]any
	auth   []string
	status atomic.Int32
	srv    *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.status.Store(200)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Errorf("the receiver got %q: %v", body, err)
		}
		r.mu.Lock()
		if s := r.status.Load(); s == 200 {
			r.docs = append(r.docs, doc)
			r.auth = append(r.auth, req.Header.Get("Authorization"))
		}
		r.mu.Unlock()
		w.WriteHeader(int(r.status.Load()))
		_, _ = w.Write([]byte("thanks"))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) got() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.docs...)
}

// clock is a settable clock for the service.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// testAlertsThroughTheAPI drives a rule through the API and the server's own evaluator and
// sender (Start), on a clock the test moves: the firing and the resolve reach a local webhook
// receiver with the matching entries, the history and the test button answer, and no secret
// is ever returned.
func testAlertsThroughTheAPI(t *testing.T, open storeOpener) {
	rcv := newReceiver(t)
	clk := &clock{now: time.Now().Truncate(time.Second)}
	cfg := server.DefaultConfig()
	cfg.AlertTargets = rcv.srv.Listener.Addr().String() // a loopback target is reached only when listed with its port
	cfg.AlertEvalEvery, cfg.AlertDeliverEvery = 20*time.Millisecond, 20*time.Millisecond
	st := open(t)
	svc, err := server.New(cfg, st, slog.New(slog.DiscardHandler), server.Deps{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(svc.Handler)
	t.Cleanup(hs.Close)
	stop, err := svc.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	tr := apitest.NewTransport(t, nil)
	hc := &http.Client{Transport: tr}
	c, err := rest.NewClientWithResponses(hs.URL, rest.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, url: hs.URL, store: st, client: c, http: hc, tr: tr}
	p := e.project("p")
	ctx := t.Context()

	// A target outside ALERT_TARGETS is a 400 naming it; nothing is created.
	resp, body := e.do("POST", "/alerts", "application/json",
		`{"project_id":"`+p.Id+`","name":"x","query":"","window_seconds":60,"interval_seconds":10,"condition":{"op":">","threshold":0},"targets":[{"type":"webhook","url":"http://169.254.169.254/"}]}`)
	if resp.StatusCode != 400 || !strings.Contains(string(body), `"/targets/0/url"`) {
		t.Fatalf("a target outside ALERT_TARGETS = %d %s, want 400 naming /targets/0/url", resp.StatusCode, body)
	}
	resp, body = e.do("POST", "/alerts", "application/json",
		`{"project_id":"`+p.Id+`","name":"x","query":"level:","window_seconds":0,"interval_seconds":5,"condition":{"op":">","threshold":0},"targets":[{"type":"webhook","url":"`+rcv.srv.URL+`"}]}`)
	if resp.StatusCode != 400 {
		t.Fatalf("a bad rule = %d %s, want 400", resp.StatusCode, body)
	}

	const secret = "s3cret-token-value"
	query := "level:error"
	token := secret
	created, err := c.CreateAlertWithResponse(ctx, rest.AlertInput{ProjectId: p.Id, Name: "errors", Query: &query, WindowSeconds: 60, IntervalSeconds: 10,
		Condition: rest.AlertCondition{Op: ">", Threshold: 1},
		Targets:   []rest.AlertTargetInput{{Type: "webhook", Url: rcv.srv.URL + "/hook?key=" + secret, BearerToken: &token}}})
	if err != nil || created.JSON201 == nil {
		t.Fatalf("create alert: %v %d %s", err, created.StatusCode(), created.Body)
	}
	a := *created.JSON201
	if strings.Contains(string(created.Body), secret) {
		t.Fatalf("a secret was returned: %s", created.Body)
	}
	if a.State != "ok" || a.Targets[0].Url != rcv.srv.URL+"/hook" || !a.Targets[0].BearerTokenSet || created.HTTPResponse.Header.Get("Location") != "/alerts/"+a.Id {
		t.Fatalf("created %+v", a)
	}

	// Two errors and an info within the next window: the evaluation at +10 s counts 2 > 1.
	t0 := clk.Now().UnixMilli()
	resp, body = e.do("POST", "/logs", "application/json", `[{"project_id":"`+p.Id+`","time":`+itoa(t0+1000)+`,"level":"error","message":"boom 1"},`+
		`{"project_id":"`+p.Id+`","time":`+itoa(t0+2000)+`,"level":"error","message":"boom 2"},`+
		`{"project_id":"`+p.Id+`","time":`+itoa(t0+3000)+`,"level":"info","message":"fine"}]`)
	if resp.StatusCode != 201 {
		t.Fatalf("POST /logs = %d %s", resp.StatusCode, body)
	}
	waitFor(t, "the first evaluation", func() bool {
		g, _ := c.GetAlertWithResponse(ctx, a.Id)
		return g.JSON200 != nil && g.JSON200.LastEvaluation != nil
	})
	clk.Add(10 * time.Second)
	waitFor(t, "the firing notification", func() bool { return len(rcv.got()) >= 1 })
	doc := rcv.got()[0]
	entries, _ := doc["entries"].([]any)
	if doc["state"] != "firing" || doc["alert_id"] != a.Id || doc["count"] != float64(2) || len(entries) != 2 ||
		entries[0].(map[string]any)["message"] != "boom 2" || !strings.Contains(doc["url"].(string), "query=level%3Aerror") {
		t.Fatalf("firing document %v", doc)
	}
	if rcv.auth[0] != "Bearer "+secret {
		t.Fatalf("Authorization %q", rcv.auth[0])
	}
	firingID := doc["id"].(string)

	// The window moves past the errors: resolved, with the same firing in its id.
	clk.Add(60 * time.Second)
	waitFor(t, "the resolve notification", func() bool { return len(rcv.got()) >= 2 })
	doc = rcv.got()[1]
	if doc["state"] != "resolved" || strings.TrimSuffix(doc["id"].(string), "/resolved") != strings.TrimSuffix(firingID, "/firing") {
		t.Fatalf("resolve document %v after firing %s", doc, firingID)
	}

	h, err := c.GetAlertHistoryWithResponse(ctx, a.Id)
	if err != nil || h.JSON200 == nil || len(*h.JSON200) != 2 {
		t.Fatalf("history: %v %s", err, h.Body)
	}
	if hh := *h.JSON200; hh[0].Seq != 2 || hh[0].From != "firing" || hh[0].To != "ok" || hh[1].To != "firing" || hh[1].Count != 2 ||
		hh[1].WindowEnd != t0+10_000 || hh[1].WindowStart != t0-50_000 {
		t.Fatalf("history %+v", hh)
	}

	// The test button reports each receiver's answer.
	rcv.status.Store(503)
	tested, err := c.TestAlertWithResponse(ctx, a.Id)
	if err != nil || tested.JSON200 == nil || len(*tested.JSON200) != 1 {
		t.Fatalf("test: %v %s", err, tested.Body)
	}
	if r := (*tested.JSON200)[0]; r.Ok || r.Status != 503 || r.Body != "thanks" || r.Error == nil {
		t.Fatalf("test result %+v", r)
	}
	rcv.status.Store(200)

	list, err := c.ListAlertsWithResponse(ctx, &rest.ListAlertsParams{ProjectId: p.Id})
	if err != nil || list.JSON200 == nil || len(*list.JSON200) != 1 || (*list.JSON200)[0].State != "ok" || strings.Contains(string(list.Body), secret) {
		t.Fatalf("list: %v %s", err, list.Body)
	}
	resp, body = e.do("PATCH", "/alerts/"+a.Id, "application/merge-patch+json", `{"silenced_until":1,"condition":{"op":"==","threshold":0}}`)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"op":"=="`) {
		t.Fatalf("patch = %d %s", resp.StatusCode, body)
	}
	if del, err := c.DeleteAlertWithResponse(ctx, a.Id); err != nil || del.StatusCode() != 204 {
		t.Fatalf("delete: %v", err)
	}
	if g, _ := c.GetAlertWithResponse(ctx, a.Id); g.StatusCode() != 404 {
		t.Fatalf("get after delete = %d", g.StatusCode())
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in 15 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
