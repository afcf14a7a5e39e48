package notify_test

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"example.com/obsvc/adapters/httpapi"
	"example.com/obsvc/adapters/notify"
	"example.com/obsvc/domain"
)

func strp(s string) *string { return &s }

// hostileNote is a firing with two sample entries whose content tries to escape every shape.
func hostileNote() domain.Notification {
	note := sampleNote()
	note.Name = "checkout <!channel> & co"
	note.Query = `level:error AND "pay*" ` + "`x`"
	note.Entries = []domain.LogEntry{
		{ID: "01J0000000000000000000002", ProjectID: "p1", Time: 1_700_000_059_000, Level: "error",
			Message: "payment declined <!here> ```\nbreak", Subject: strp("payments"), UserID: strp("u-42"),
			Attributes: json.RawMessage(`{"order":7,"html":"<b>&</b>"}`), TraceID: strp("0af7651916cd43dd8448eb211c80319c")},
		{ID: "01J0000000000000000000001", ProjectID: "p1", Time: 1_700_000_001_000, Level: "error", Message: "timeout",
			Attributes: json.RawMessage(`{}`)},
	}
	return note
}

// deliver sends note to a local receiver as a target of type typ and returns what it got.
func deliver(t *testing.T, typ string, note domain.Notification) captured {
	t.Helper()
	r := newReceiver(t, "tcp4", nil)
	n := newNotifier(t, "127.0.0.1:"+r.port(), nil, nil)
	res, err := n.Deliver(t.Context(), domain.AlertTarget{Type: typ, URL: r.URL + "/base", BearerToken: "t0k"}, note)
	if err != nil || res.Status != 200 {
		t.Fatalf("Deliver = %+v, %v", res, err)
	}
	got := <-r.bodies
	if ct := got.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if a := got.header.Get("Authorization"); a != "Bearer t0k" {
		t.Errorf("Authorization = %q", a)
	}
	return got
}

// checkExplorerURL asserts that link opens the explorer on the note's project, query and
// window, in the URL state the page restores.
func checkExplorerURL(t *testing.T, link string, note domain.Notification) {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatalf("url %q: %v", link, err)
	}
	q := u.Query()
	if u.Scheme != "https" || u.Host != "logs.example.com" || u.Path != "/ui" ||
		q.Get("project") != note.ProjectID || q.Get("range") != "abs" || q.Get("query") != note.Query ||
		q.Get("from") != strconv.FormatInt(note.WindowStart, 10) || q.Get("to") != strconv.FormatInt(note.WindowEnd-1, 10) {
		t.Errorf("explorer link %q: want /ui on project %s, query %q, from %d to %d", link, note.ProjectID, note.Query, note.WindowStart, note.WindowEnd-1)
	}
}

func TestWebhookShape(t *testing.T) {
	t.Parallel()
	note := hostileNote()
	got := deliver(t, domain.TargetWebhook, note)
	if got.path != "/base" {
		t.Errorf("path %q, want the target's", got.path)
	}
	var body struct {
		ID, AlertID, Name, ProjectID, State, URL string
		Count, WindowStart, WindowEnd            int64
		Entries                                  []json.RawMessage
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(got.body, &raw); err != nil {
		t.Fatalf("body %s: %v", got.body, err)
	}
	for _, k := range []string{"id", "alert_id", "name", "project_id", "state", "count", "window_start", "window_end", "entries", "url"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("body lacks %q: %s", k, got.body)
		}
	}
	if _, ok := raw["sample"]; ok {
		t.Errorf("a real firing says sample: %s", got.body)
	}
	dec := func(k string, v any) {
		if err := json.Unmarshal(raw[k], v); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	dec("id", &body.ID)
	dec("alert_id", &body.AlertID)
	dec("name", &body.Name)
	dec("project_id", &body.ProjectID)
	dec("state", &body.State)
	dec("count", &body.Count)
	dec("window_start", &body.WindowStart)
	dec("window_end", &body.WindowEnd)
	dec("entries", &body.Entries)
	dec("url", &body.URL)
	if body.ID != note.ID || body.AlertID != "r1" || body.Name != note.Name || body.ProjectID != "p1" || body.State != "firing" ||
		body.Count != 3 || body.WindowStart != note.WindowStart || body.WindowEnd != note.WindowEnd {
		t.Errorf("body %+v, want the notification %+v", body, note)
	}
	if len(body.Entries) != 2 {
		t.Fatalf("entries %d, want 2", len(body.Entries))
	}
	for i, e := range note.Entries {
		want, _ := httpapi.RenderEntry(e)
		if string(body.Entries[i]) != string(want) {
			t.Errorf("entry %d:\n got %s\nwant %s (as GET /logs renders it)", i, body.Entries[i], want)
		}
	}
	if !strings.Contains(string(body.Entries[0]), `"attributes":{"html":"<b>&</b>","order":7}`) &&
		!strings.Contains(string(body.Entries[0]), `"attributes":{"order":7,"html":"<b>&</b>"}`) {
		t.Errorf("entry 0 attributes not as sent: %s", body.Entries[0])
	}
	checkExplorerURL(t, body.URL, note)
}

func TestSlackShape(t *testing.T) {
	t.Parallel()
	note := hostileNote()
	got := deliver(t, domain.TargetSlack, note)
	var msg struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type     string `json:"type"`
			Text     *struct{ Type, Text string }
			Elements []struct{ Type, Text string }
		} `json:"blocks"`
	}
	if err := json.Unmarshal(got.body, &msg); err != nil {
		t.Fatalf("body %s: %v", got.body, err)
	}
	if !strings.Contains(msg.Text, "[FIRING]") || !strings.Contains(msg.Text, note.ID) || !strings.Contains(msg.Text, "3 matching entries") {
		t.Errorf("text %q: want the state, the count and the id", msg.Text)
	}
	var types []string
	var all strings.Builder
	all.WriteString(msg.Text)
	for _, b := range msg.Blocks {
		types = append(types, b.Type)
		// A header is plain_text, shown as written: mrkdwn's controls mean nothing there.
		if b.Text != nil && b.Type != "header" {
			all.WriteString("\n" + b.Text.Text)
		}
		for _, e := range b.Elements {
			all.WriteString("\n" + e.Text)
		}
	}
	if strings.Join(types, ",") != "header,section,section,context" {
		t.Errorf("blocks %v, want header, section, section (entries), context", types)
	}
	if h := msg.Blocks[0].Text; h.Type != "plain_text" || h.Text != "Firing: "+note.Name {
		t.Errorf("header %+v", h)
	}
	text := all.String()
	for _, want := range []string{
		"payment declined &lt;!here&gt;", // the entries, one line each, escaped
		"2023-11-14 22:14:19Z error payment declined",
		"2023-11-14 22:13:21Z error timeout",
		"checkout &lt;!channel&gt; &amp; co", // the name escaped
		"Notification `" + note.ID + "`",     // the id in the context block
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the message lacks %q:\n%s", want, text)
		}
	}
	for _, bad := range []string{"<!channel>", "<!here>"} {
		if strings.Contains(text, bad) {
			t.Errorf("the message holds %q unescaped", bad)
		}
	}
	// The entries' code block is opened and closed once: log content cannot end it.
	if n := strings.Count(msg.Blocks[2].Text.Text, "```"); n != 2 {
		t.Errorf("entries block has %d fences, want 2: %q", n, msg.Blocks[2].Text.Text)
	}
	// The explorer link, in Slack's <url|label> form.
	i := strings.Index(msg.Blocks[1].Text.Text, "<https://")
	j := strings.Index(msg.Blocks[1].Text.Text, "|Open these entries in the explorer>")
	if i < 0 || j < i {
		t.Fatalf("no explorer link in %q", msg.Blocks[1].Text.Text)
	}
	checkExplorerURL(t, msg.Blocks[1].Text.Text[i+1:j], note)
}

// TestSlackLongQuery: a query too long for a Slack link leaves the link without it, whole, and
// every block within Slack's limit.
func TestSlackLongQuery(t *testing.T) {
	t.Parallel()
	note := hostileNote()
	note.Query = strings.Repeat("payment OR ", 370) + "x"
	got := deliver(t, domain.TargetSlack, note)
	var msg struct {
		Blocks []struct {
			Text *struct{ Text string }
		} `json:"blocks"`
	}
	if err := json.Unmarshal(got.body, &msg); err != nil {
		t.Fatal(err)
	}
	for i, b := range msg.Blocks {
		if b.Text != nil && len([]rune(b.Text.Text)) > 3000 {
			t.Errorf("block %d has %d characters, over Slack's 3000", i, len([]rune(b.Text.Text)))
		}
	}
	facts := msg.Blocks[1].Text.Text
	i, j := strings.Index(facts, "<https://"), strings.Index(facts, "|Open the window in the explorer (without the query)>")
	if i < 0 || j < i {
		t.Fatalf("no whole link in %q", facts)
	}
	u, err := url.Parse(facts[i+1 : j])
	if err != nil || u.Query().Has("query") || u.Query().Get("project") != "p1" {
		t.Errorf("link %q: want the window without the query", facts[i+1:j])
	}
}

func TestAlertmanagerShape(t *testing.T) {
	t.Parallel()
	note := hostileNote()
	got := deliver(t, domain.TargetAlertmanager, note)
	if got.path != "/base/api/v2/alerts" {
		t.Errorf("path %q, want /base/api/v2/alerts", got.path)
	}
	var alerts []struct {
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
		StartsAt     string            `json:"startsAt"`
		EndsAt       string            `json:"endsAt"`
		GeneratorURL string            `json:"generatorURL"`
	}
	if err := json.Unmarshal(got.body, &alerts); err != nil || len(alerts) != 1 {
		t.Fatalf("body %s: %v, want an array of one alert", got.body, err)
	}
	a := alerts[0]
	wantLabels := map[string]string{"alertname": note.Name, "alert_id": "r1", "project_id": "p1", "firing_id": "r1-1700000060000"}
	if len(a.Labels) != len(wantLabels) {
		t.Errorf("labels %v, want %v", a.Labels, wantLabels)
	}
	for k, v := range wantLabels {
		if a.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, a.Labels[k], v)
		}
	}
	if a.Annotations["notification_id"] != note.ID || !strings.Contains(a.Annotations["summary"], "[FIRING]") ||
		!strings.Contains(a.Annotations["description"], "payment declined") || a.Annotations["url"] != a.GeneratorURL {
		t.Errorf("annotations %v", a.Annotations)
	}
	checkExplorerURL(t, a.GeneratorURL, note)
	if a.StartsAt != "2023-11-14T22:14:20Z" {
		t.Errorf("startsAt %q, want the firing's start", a.StartsAt)
	}

	resolved := note
	resolved.State, resolved.ID = "resolved", "r1-1700000060000-resolved"
	resolved.WindowStart, resolved.WindowEnd = 1_700_000_060_000, 1_700_000_120_000
	got = deliver(t, domain.TargetAlertmanager, resolved)
	if err := json.Unmarshal(got.body, &alerts); err != nil || len(alerts) != 1 {
		t.Fatalf("body %s: %v", got.body, err)
	}
	if alerts[0].Labels["firing_id"] != "r1-1700000060000" || alerts[0].StartsAt != "2023-11-14T22:14:20Z" || alerts[0].EndsAt != "2023-11-14T22:15:20Z" {
		t.Errorf("resolve: labels %v, startsAt %s, endsAt %s; want the firing's labels, its start, the resolve as its end",
			alerts[0].Labels, alerts[0].StartsAt, alerts[0].EndsAt)
	}

	// A resolve stamped ahead of this clock ends now, not in the future.
	ahead := resolved
	ahead.WindowEnd = time.Now().Add(time.Hour).UnixMilli()
	got = deliver(t, domain.TargetAlertmanager, ahead)
	if err := json.Unmarshal(got.body, &alerts); err != nil || len(alerts) != 1 {
		t.Fatalf("body %s: %v", got.body, err)
	}
	if end, err := time.Parse(time.RFC3339Nano, alerts[0].EndsAt); err != nil || end.After(time.Now()) {
		t.Errorf("a resolve stamped an hour ahead ends at %s, want now at the latest", alerts[0].EndsAt)
	}
}

func TestSampleIsMarked(t *testing.T) {
	t.Parallel()
	note := sampleNote()
	note.Sample = true
	got := deliver(t, domain.TargetWebhook, note)
	if !strings.Contains(string(got.body), `"sample":true`) {
		t.Errorf("a sample's webhook body does not say so: %s", got.body)
	}
	got = deliver(t, domain.TargetSlack, note)
	if !strings.Contains(string(got.body), "[TEST FIRING]") {
		t.Errorf("a sample's Slack text does not say so: %s", got.body)
	}
	got = deliver(t, domain.TargetAlertmanager, note)
	if !strings.Contains(string(got.body), `"sample":"true"`) || !strings.Contains(string(got.body), `"firing_id":"r1-sample"`) {
		t.Errorf("a sample's alert is not labelled so: %s", got.body)
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	if _, err := notify.New(notify.Options{}); err == nil {
		t.Error("New without RenderEntry: no error")
	}
	if _, err := notify.New(notify.Options{RenderEntry: httpapi.RenderEntry, PublicURL: "logs.example.com"}); err == nil {
		t.Error("New with a relative public URL: no error")
	}
}
