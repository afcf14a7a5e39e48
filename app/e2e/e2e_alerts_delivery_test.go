package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"example.com/obsvc/adapters/notify/amtest"
	"example.com/obsvc/app/server"
)

// webhookBody is the generic webhook's body as a receiver reads it.
type webhookBody struct {
	ID          string            `json:"id"`
	AlertID     string            `json:"alert_id"`
	Name        string            `json:"name"`
	ProjectID   string            `json:"project_id"`
	State       string            `json:"state"`
	Count       int64             `json:"count"`
	WindowStart int64             `json:"window_start"`
	WindowEnd   int64             `json:"window_end"`
	Entries     []json.RawMessage `json:"entries"`
	URL         string            `json:"url"`
}

// slackBody is Slack's incoming-webhook shape as a receiver reads it.
type slackBody struct {
	Text   string `json:"text"`
	Blocks []struct {
		Type     string `json:"type"`
		Text     *struct{ Type, Text string }
		Elements []struct{ Type, Text string }
	} `json:"blocks"`
}

// TestAlertDelivery is Done-when 1: a rule driven by ingest through the API, on both stores,
// notifies a real Alertmanager, which lists the firing through its own API, then the resolve;
// a local receiver gets the generic webhook and Slack shapes of both, with the sample entries
// exactly as GET /logs renders them and the explorer link that shows them.
func TestAlertDelivery(t *testing.T) {
	forEachStore(t, func(t *testing.T, open storeOpener) {
		am := amtest.Start(t)
		hooks := newHookReceiver(t)
		// The service's clock starts five minutes ago and moves only when the test moves it:
		// every evaluation, and the resolve's end, is then in the past for Alertmanager too.
		var clock atomic.Int64
		clock.Store(time.Now().Add(-5 * time.Minute).UnixMilli())
		now := func() time.Time { return time.UnixMilli(clock.Load()) }
		e := newEnvWith(t, open, func(c *server.Config) {
			// 0.0.0.0 (any port) lets a rule name it, but reaches the local host: its delivery is
			// refused at connect time, its host:port not being listed as itself.
			c.AlertTargets = am.Addr + "," + hooks.addr + ",0.0.0.0"
			c.PublicURL = "https://logs.example.com"
			c.AlertEvalEvery, c.AlertDeliverEvery = 20*time.Millisecond, 20*time.Millisecond
		}, server.Deps{Now: now})
		stop, err := e.svc.Start(t.Context()) // the evaluator and the sender
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		p := e.project("checkout")
		const slackPath = "/services/T000/B000/SLACKSECRET"
		const query = "level:error AND payment"

		// Eleven matching entries a few seconds ago, and two that do not match.
		base := now().Add(-5 * time.Second).UnixMilli()
		var batch []string
		for i := range 11 {
			batch = append(batch, fmt.Sprintf(`{"project_id":%q,"level":"error","message":"payment declined #%02d <b>&","time":%d,"order":%d}`, p.Id, i, base+int64(i)*100, i))
		}
		batch = append(batch, fmt.Sprintf(`{"project_id":%q,"level":"info","message":"payment ok","time":%d}`, p.Id, base),
			fmt.Sprintf(`{"project_id":%q,"level":"error","message":"disk full","time":%d}`, p.Id, base))
		if resp, body := e.do("POST", "/logs", "application/json", "["+strings.Join(batch, ",")+"]"); resp.StatusCode != 201 {
			t.Fatalf("ingest: %d %s", resp.StatusCode, body)
		}

		rule := fmt.Sprintf(`{"project_id":%q,"name":"payments failing","query":%q,"window_seconds":60,"interval_seconds":10,"for_seconds":0,
			"condition":{"op":">","threshold":10},
			"targets":[{"type":"alertmanager","url":%q},{"type":"webhook","url":%q,"bearer_token":"hook-token"},{"type":"slack","url":%q}]}`,
			p.Id, query, am.URL, hooks.URL+"/hook", hooks.URL+slackPath)
		resp, body := e.do("POST", "/alerts", "application/json", rule)
		if resp.StatusCode != 201 {
			t.Fatalf("create the rule: %d %s", resp.StatusCode, body)
		}
		var created struct{ ID, State string }
		if err := json.Unmarshal(body, &created); err != nil || created.ID == "" {
			t.Fatalf("create the rule: %s: %v", body, err)
		}
		if strings.Contains(string(body), "hook-token") || strings.Contains(string(body), "SLACKSECRET") {
			t.Errorf("the rule's answer shows a secret: %s", body)
		}

		// The service's own evaluator and sender: the rule is due at once, and the count (11)
		// is over the threshold.
		waitFor := func(what string, cond func() bool) {
			t.Helper()
			for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("no %s in 15 s", what)
				}
			}
		}
		waitFor("firing", func() bool { return len(hooks.requests("/hook")) > 0 })
		webhookAt := func(i int) (webhookBody, hookRequest) {
			t.Helper()
			req := hooks.requests("/hook")[i]
			var w webhookBody
			if err := json.Unmarshal(req.Body, &w); err != nil {
				t.Fatalf("webhook body %s: %v", req.Body, err)
			}
			return w, req
		}
		firing, req := webhookAt(0)
		waitFor("firing on Slack", func() bool { return len(hooks.requests(slackPath)) > 0 })
		if req.Authorization != "Bearer hook-token" {
			t.Errorf("webhook Authorization = %q", req.Authorization)
		}
		if firing.State != "firing" || firing.AlertID != created.ID || firing.Name != "payments failing" || firing.ProjectID != p.Id ||
			firing.Count != 11 || firing.ID == "" {
			t.Errorf("firing webhook %+v", firing)
		}
		// The sample entries are the newest ten of the window, exactly as GET /logs renders them
		// for the explorer link's URL state.
		link, err := url.Parse(firing.URL)
		if err != nil || link.Scheme != "https" || link.Host != "logs.example.com" || link.Path != "/ui" {
			t.Fatalf("explorer link %q", firing.URL)
		}
		lq := link.Query()
		if lq.Get("project") != p.Id || lq.Get("query") != query || lq.Get("range") != "abs" ||
			lq.Get("from") != strconv.FormatInt(firing.WindowStart, 10) || lq.Get("to") != strconv.FormatInt(firing.WindowEnd-1, 10) {
			t.Errorf("explorer link %q: want project, query and the window %d..%d", firing.URL, firing.WindowStart, firing.WindowEnd-1)
		}
		listing := url.Values{"project_id": {p.Id}, "query": {lq.Get("query")}, "start_time": {lq.Get("from")}, "end_time": {lq.Get("to")},
			"order": {"desc"}, "limit": {"10"}}
		resp, body = e.do("GET", "/logs?"+listing.Encode(), "", "")
		var listed []json.RawMessage
		if err := json.Unmarshal(body, &listed); resp.StatusCode != 200 || err != nil {
			t.Fatalf("GET /logs as the link shows it: %d %s", resp.StatusCode, body)
		}
		if len(firing.Entries) != 10 || len(listed) != 10 {
			t.Fatalf("the firing has %d sample entries and the explorer's listing %d, want 10 each", len(firing.Entries), len(listed))
		}
		for i := range listed {
			if string(firing.Entries[i]) != string(listed[i]) {
				t.Errorf("sample entry %d:\n got %s\nwant %s (GET /logs)", i, firing.Entries[i], listed[i])
			}
		}
		if !strings.Contains(string(firing.Entries[0]), `"message":"payment declined #10 <b>&"`) {
			t.Errorf("the newest entry first, as sent: %s", firing.Entries[0])
		}

		// Slack: the same firing, its id, the entries one line each, the link.
		slack := hooks.requests(slackPath)
		if len(slack) != 1 {
			t.Fatalf("Slack got %d messages, want 1", len(slack))
		}
		var sb slackBody
		if err := json.Unmarshal(slack[0].Body, &sb); err != nil {
			t.Fatalf("Slack body %s: %v", slack[0].Body, err)
		}
		var types []string
		for _, b := range sb.Blocks {
			types = append(types, b.Type)
		}
		if !strings.Contains(sb.Text, "[FIRING]") || !strings.Contains(sb.Text, firing.ID) || strings.Join(types, ",") != "header,section,section,context" {
			t.Errorf("Slack message: text %q, blocks %v", sb.Text, types)
		}
		if !strings.Contains(sb.Blocks[1].Text.Text, firing.URL+"|Open these entries in the explorer>") {
			t.Errorf("Slack facts lack the explorer link %q: %q", firing.URL, sb.Blocks[1].Text.Text)
		}
		if !strings.Contains(sb.Blocks[2].Text.Text, "error payment declined #10 &lt;b&gt;&amp;") || strings.Count(sb.Blocks[2].Text.Text, "\n") < 10 {
			t.Errorf("Slack entries block: %q", sb.Blocks[2].Text.Text)
		}

		// Alertmanager lists the firing through its own API.
		match := map[string]string{"alert_id": created.ID}
		alerts, err := am.WaitFor(t.Context(), match, 10*time.Second, amtest.Active)
		if err != nil {
			t.Fatalf("Alertmanager does not list the firing: %v: %+v", err, alerts)
		}
		if a := alerts[0]; a.Labels["alertname"] != "payments failing" || a.Labels["project_id"] != p.Id ||
			a.Annotations["notification_id"] != firing.ID || a.GeneratorURL != firing.URL {
			t.Errorf("Alertmanager's alert: labels %v, annotations %v, generatorURL %q", a.Labels, a.Annotations, a.GeneratorURL)
		}

		// A minute and more later the window is empty: the rule resolves.
		clock.Add(70_000)
		waitFor("resolve", func() bool { return len(hooks.requests("/hook")) >= 2 })
		waitFor("resolve on Slack", func() bool { return len(hooks.requests(slackPath)) >= 2 })
		resolved, _ := webhookAt(1)
		if resolved.State != "resolved" || resolved.AlertID != created.ID || resolved.ID == firing.ID {
			t.Errorf("resolve webhook %+v after firing %s", resolved, firing.ID)
		}
		if alerts, err := am.WaitFor(t.Context(), match, 10*time.Second, amtest.ResolvedOrAbsent); err != nil {
			t.Fatalf("Alertmanager still lists the alert active after the resolve: %v: %+v", err, alerts)
		}
		// The test button: a sample to each target, each answer reported; Alertmanager lists the
		// sample as an alert of its own.
		resp, body = e.do("POST", "/alerts/"+created.ID+"/test", "", "")
		var results []struct {
			Target int    `json:"target"`
			Type   string `json:"type"`
			OK     bool   `json:"ok"`
			Status int    `json:"status"`
			Body   string `json:"body"`
			Error  string `json:"error"`
		}
		if err := json.Unmarshal(body, &results); resp.StatusCode != 200 || err != nil || len(results) != 3 {
			t.Fatalf("test button: %d %s", resp.StatusCode, body)
		}
		for _, r := range results {
			if !r.OK || r.Status != 200 || r.Error != "" {
				t.Errorf("test button, target %d (%s): %+v", r.Target, r.Type, r)
			}
		}
		if got := hooks.requests("/hook"); len(got) != 3 || !strings.Contains(string(got[2].Body), `"sample":true`) {
			t.Errorf("the webhook's sample: %d requests, last %s", len(got), got[len(got)-1].Body)
		}
		if _, err := am.WaitFor(t.Context(), map[string]string{"alert_id": created.ID, "sample": "true"}, 10*time.Second, amtest.Active); err != nil {
			t.Errorf("Alertmanager does not list the sample: %v", err)
		}

		// A target the allow-list lets a rule name (0.0.0.0) but whose address is internal: the
		// rule is saved, and its delivery is refused when it connects, saying why.
		internal := "http://0.0.0.0:" + strings.Split(hooks.addr, ":")[1] + "/internal"
		resp, body = e.do("POST", "/alerts", "application/json", fmt.Sprintf(`{"project_id":%q,"name":"inside","query":"","window_seconds":60,
			"interval_seconds":10,"condition":{"op":">","threshold":0},"targets":[{"type":"webhook","url":%q}]}`, p.Id, internal))
		var inside struct{ ID string }
		if err := json.Unmarshal(body, &inside); resp.StatusCode != 201 || err != nil {
			t.Fatalf("create a rule on 0.0.0.0: %d %s", resp.StatusCode, body)
		}
		resp, body = e.do("POST", "/alerts/"+inside.ID+"/test", "", "")
		if err := json.Unmarshal(body, &results); resp.StatusCode != 200 || err != nil || len(results) != 1 {
			t.Fatalf("test button on 0.0.0.0: %d %s", resp.StatusCode, body)
		}
		if r := results[0]; r.OK || r.Status != 0 || !strings.Contains(r.Error, "refused") || !strings.Contains(r.Error, "not listed as itself in ALERT_TARGETS") {
			t.Errorf("test button on 0.0.0.0: %+v, want refused, saying why", r)
		}
		if n := len(hooks.requests("/internal")); n != 0 {
			t.Errorf("the local receiver got %d requests through 0.0.0.0", n)
		}

		// Nothing more: each transition was sent once.
		clock.Add(10 * 60_000)
		time.Sleep(200 * time.Millisecond)
		if n := len(hooks.requests("/hook")); n != 3 {
			t.Errorf("the webhook got %d notifications, want the firing, the resolve and the sample", n)
		}
		if n := len(hooks.requests(slackPath)); n != 3 {
			t.Errorf("Slack got %d messages, want the firing, the resolve and the sample", n)
		}
		// Nothing ever went through 0.0.0.0.
		if n := len(hooks.requests("/internal")); n != 0 {
			t.Errorf("the local receiver got %d requests through 0.0.0.0", n)
		}
	})
}
