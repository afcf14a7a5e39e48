package notify

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"example.com/obsvc/domain"
)

// ExplorerURL is the explorer showing exactly a notification's entries: its project, its query
// and its window (the page's range is inclusive at both ends, the window [start, end) is not), in
// the URL state the page restores (adapters/ui/assets/app.js, readURL). The listing is newest
// first, so its first rows are the notification's sample entries.
func (n *Notifier) ExplorerURL(note domain.Notification) string {
	return n.explorerURL(note, true)
}

// explorerURL is ExplorerURL, without the query unless withQuery.
func (n *Notifier) explorerURL(note domain.Notification, withQuery bool) string {
	p := url.Values{}
	p.Set("project", note.ProjectID)
	p.Set("range", "abs")
	p.Set("from", strconv.FormatInt(note.WindowStart, 10))
	to := note.WindowEnd - 1
	if to < note.WindowStart {
		to = note.WindowStart
	}
	p.Set("to", strconv.FormatInt(to, 10))
	if withQuery && note.Query != "" {
		p.Set("query", note.Query)
	}
	return n.opts.PublicURL + "/ui?" + p.Encode()
}

// webhook is the generic webhook's body.
type webhook struct {
	ID          string            `json:"id"`
	AlertID     string            `json:"alert_id"`
	Name        string            `json:"name"`
	ProjectID   string            `json:"project_id"`
	State       string            `json:"state"`
	Count       int64             `json:"count"`
	WindowStart int64             `json:"window_start"`
	WindowEnd   int64             `json:"window_end"`
	FiringStart int64             `json:"firing_start"`
	Query       string            `json:"query"`
	Entries     []json.RawMessage `json:"entries"`
	URL         string            `json:"url"`
	Sample      bool              `json:"sample,omitempty"`
}

// webhookBody renders the generic webhook: the notification with its entries as GET /logs
// renders them, as many as fit in MaxRequestBytes (the newest kept).
func (n *Notifier) webhookBody(note domain.Notification) ([]byte, error) {
	entries := make([]json.RawMessage, 0, len(note.Entries))
	for _, e := range note.Entries {
		raw, err := n.opts.RenderEntry(e)
		if err != nil {
			return nil, fmt.Errorf("render entry %s: %w", e.ID, err)
		}
		entries = append(entries, raw)
	}
	w := webhook{ID: note.ID, AlertID: note.AlertID, Name: note.Name, ProjectID: note.ProjectID, State: note.State,
		Count: note.Count, WindowStart: note.WindowStart, WindowEnd: note.WindowEnd, FiringStart: note.FiringStart,
		Query: note.Query, Entries: entries, URL: n.ExplorerURL(note), Sample: note.Sample}
	for {
		b, err := marshal(w)
		if err != nil {
			return nil, err
		}
		if len(b) <= n.opts.MaxRequestBytes || len(w.Entries) == 0 {
			return b, nil
		}
		w.Entries = w.Entries[:len(w.Entries)-1]
	}
}

// marshal encodes v without escaping <, > and & (a receiver reads the entries as sent).
func marshal(v any) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}

// Slack's limits on a message (api.slack.com/reference/block-kit/blocks).
const (
	slackHeaderChars  = 150
	slackSectionChars = 3000
	slackLineBytes    = 200
	// slackMaxLink is the longest explorer link a Slack message carries whole.
	slackMaxLink = 2000
)

type slackText struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Emoji bool   `json:"emoji,omitempty"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

// slackEscape escapes the three characters Slack's mrkdwn gives a meaning to, so that log content
// and names cannot mention a channel (<!channel>) or forge a link.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// slackCode is s for inside a code span or block: escaped, and with no backtick to end it.
func slackCode(s string) string {
	return slackEscape(strings.ReplaceAll(s, "`", "ˋ"))
}

func utc(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05Z") }

// headline is the one-line summary every shape starts with.
func headline(note domain.Notification) string {
	word := "FIRING"
	if note.State == "resolved" {
		word = "RESOLVED"
	}
	if note.Sample {
		word = "TEST " + word
	}
	return fmt.Sprintf("[%s] %s: %d matching entries from %s to %s", word, note.Name, note.Count, utc(note.WindowStart), utc(note.WindowEnd))
}

// slackBody renders Slack's incoming-webhook shape: a text (the notification in a line, for
// clients that show no blocks) and blocks: a header, the count, window and query with the
// explorer link, the sample entries one line each, and the notification's id.
func (n *Notifier) slackBody(note domain.Notification) ([]byte, error) {
	link, label := n.ExplorerURL(note), "Open these entries in the explorer"
	if len(link) > slackMaxLink {
		// A long query makes a link Slack would cut: the window without the query instead.
		link, label = n.explorerURL(note, false), "Open the window in the explorer (without the query)"
	}
	linkText := "<" + link + "|" + label + ">"
	text := slackEscape(headline(note)) + " (id " + slackEscape(note.ID) + ") " + linkText
	title := "Firing: "
	if note.State == "resolved" {
		title = "Resolved: "
	}
	if note.Sample {
		title = "Test, " + strings.ToLower(title)
	}
	facts := fmt.Sprintf("*%d* matching entries from %s to %s (UTC)\n*Project:* `%s`",
		note.Count, utc(note.WindowStart), utc(note.WindowEnd), slackCode(note.ProjectID))
	if note.Query != "" {
		facts += "\n*Query:* `" + slackCode(truncate(note.Query, 1000)) + "`"
	}
	facts = truncateRunes(facts, slackSectionChars-1-len(linkText)) + "\n" + linkText
	blocks := []slackBlock{
		{Type: "header", Text: &slackText{Type: "plain_text", Text: truncateRunes(title+note.Name, slackHeaderChars), Emoji: true}},
		{Type: "section", Text: &slackText{Type: "mrkdwn", Text: facts}},
	}
	if len(note.Entries) > 0 {
		var b strings.Builder
		b.WriteString("*Latest entries:*\n```")
		for _, e := range note.Entries {
			line := utc(e.Time) + " " + e.Level + " " + strings.Join(strings.Fields(e.Message), " ")
			b.WriteString(slackCode(truncate(line, slackLineBytes)) + "\n")
		}
		blocks = append(blocks, slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn",
			Text: truncateRunes(b.String(), slackSectionChars-3) + "```"}})
	}
	blocks = append(blocks, slackBlock{Type: "context", Elements: []slackText{{Type: "mrkdwn",
		Text: "Notification `" + slackCode(note.ID) + "` · alert `" + slackCode(note.AlertID) + "`"}}})
	return marshal(slackMessage{Text: text, Blocks: blocks})
}

// truncateRunes cuts s to at most n characters (Slack counts characters), marking the cut.
func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// amAlert is one alert of Alertmanager's v2 API (POST /api/v2/alerts takes an array of them).
type amAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     string            `json:"startsAt,omitempty"`
	EndsAt       string            `json:"endsAt,omitempty"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// firingHold is how long Alertmanager keeps a firing active without hearing of it again: it
// resolves an alert by itself when its endsAt passes, and a firing is sent once (then its
// resolve), so its endsAt is set this far ahead rather than left to Alertmanager's
// resolve_timeout (5 minutes by default).
const firingHold = 24 * time.Hour

// sampleHold is how long a test button's sample alert stays active in Alertmanager.
const sampleHold = 5 * time.Minute

// FiringID is the label that ties a firing and its resolve together in Alertmanager: a label set
// is an alert's identity there, so it must be the same for both (the notification ids differ).
func FiringID(note domain.Notification) string {
	if note.Sample {
		return note.AlertID + "-sample"
	}
	return note.AlertID + "-" + strconv.FormatInt(note.FiringStart, 10)
}

// alertmanagerBody renders an array of one alert: labels alertname, alert_id, project_id and
// firing_id (sample="true" for the test button's), annotations summary, description, url, query
// and notification_id; startsAt is the firing's start, endsAt its resolve (firingHold ahead while
// firing, at most now once resolved), generatorURL the explorer link.
func (n *Notifier) alertmanagerBody(note domain.Notification) ([]byte, error) {
	link := n.ExplorerURL(note)
	a := amAlert{
		Labels: map[string]string{
			"alertname":  note.Name,
			"alert_id":   note.AlertID,
			"project_id": note.ProjectID,
			"firing_id":  FiringID(note),
		},
		Annotations: map[string]string{
			"summary":         headline(note),
			"description":     description(note),
			"url":             link,
			"notification_id": note.ID,
		},
		GeneratorURL: link,
	}
	if note.Query != "" {
		a.Annotations["query"] = note.Query
	}
	const layout = time.RFC3339Nano
	switch {
	case note.Sample:
		now := n.opts.Now().UTC()
		a.Labels["sample"] = "true"
		a.StartsAt = now.Format(layout)
		a.EndsAt = now.Add(sampleHold).Format(layout)
	case note.State == "resolved":
		start := time.UnixMilli(note.FiringStart).UTC()
		// The resolve's time, but never ahead of this instance's clock: an endsAt in the future
		// (an evaluator's clock ahead of ours) would keep the alert active in Alertmanager
		// until then.
		end := time.UnixMilli(min(note.WindowEnd, n.opts.Now().UnixMilli())).UTC()
		if !end.After(start) {
			end = start.Add(time.Millisecond)
		}
		a.StartsAt, a.EndsAt = start.Format(layout), end.Format(layout)
	default:
		start := time.UnixMilli(note.FiringStart).UTC()
		a.StartsAt = start.Format(layout)
		a.EndsAt = n.opts.Now().UTC().Add(firingHold).Format(layout)
	}
	return marshal([]amAlert{a})
}

// description is the Alertmanager annotation: the count and window, then the sample entries'
// messages, one line each.
func description(note domain.Notification) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d matching entries from %s to %s", note.Count, utc(note.WindowStart), utc(note.WindowEnd))
	for _, e := range note.Entries {
		b.WriteString("\n" + truncate(utc(e.Time)+" "+e.Level+" "+strings.Join(strings.Fields(e.Message), " "), slackLineBytes))
	}
	return b.String()
}
