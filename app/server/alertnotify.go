package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"example.com/obsvc/domain"
)

// webhookNotifier is the service's Notifier until the notification adapter (adapters/notify:
// Slack and Alertmanager payloads, address checks of every connection) takes its place: it
// delivers the generic JSON document to webhook targets whose host ALERT_TARGETS lists, without
// following redirects, with a short timeout and a bounded read of the answer.
type webhookNotifier struct {
	allow  []string
	client *http.Client
}

// webhookTimeout bounds one delivery; webhookAnswerBytes how much of an answer is read.
const (
	webhookTimeout     = 10 * time.Second
	webhookAnswerBytes = 1024
)

func newWebhookNotifier(targets string) *webhookNotifier {
	var allow []string
	for p := range strings.SplitSeq(targets, ",") {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			allow = append(allow, p)
		}
	}
	return &webhookNotifier{allow: allow, client: &http.Client{
		Timeout:       webhookTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// allowed reports whether u's host (host:port) matches a pattern of ALERT_TARGETS: host alone
// matches any port, host:port that port, *.domain any subdomain of domain.
func (n *webhookNotifier) allowed(u *url.URL) bool {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	for _, p := range n.allow {
		ph, pp, err := net.SplitHostPort(p)
		if err != nil {
			ph, pp = p, ""
		}
		if pp != "" && pp != port {
			continue
		}
		if suffix, ok := strings.CutPrefix(ph, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == ph {
			return true
		}
	}
	return false
}

// CheckTarget implements domain.Notifier.
func (n *webhookNotifier) CheckTarget(t domain.AlertTarget) error {
	if t.Type != domain.TargetWebhook {
		return domain.Errorf(domain.KindInvalid, "is of a type this service does not deliver to")
	}
	u, err := url.Parse(t.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return domain.Errorf(domain.KindInvalid, "must be an http or https URL without user information")
	}
	if !n.allowed(u) {
		return domain.Errorf(domain.KindInvalid, "is not in ALERT_TARGETS")
	}
	return nil
}

// webhookEntry is an entry of the document, as GET /logs renders one.
type webhookEntry struct {
	ID         string          `json:"id"`
	ProjectID  string          `json:"project_id"`
	Time       int64           `json:"time"`
	Level      string          `json:"level"`
	Message    string          `json:"message"`
	Subject    *string         `json:"subject,omitempty"`
	UserID     *string         `json:"user_id,omitempty"`
	Attributes json.RawMessage `json:"attributes,omitempty"`
	TraceID    *string         `json:"trace_id,omitempty"`
	SpanID     *string         `json:"span_id,omitempty"`
}

// webhookDocument is the generic JSON document of a notification.
type webhookDocument struct {
	ID          string         `json:"id"`
	AlertID     string         `json:"alert_id"`
	Name        string         `json:"name"`
	ProjectID   string         `json:"project_id"`
	State       string         `json:"state"`
	Count       int64          `json:"count"`
	WindowStart int64          `json:"window_start"`
	WindowEnd   int64          `json:"window_end"`
	Entries     []webhookEntry `json:"entries"`
	URL         string         `json:"url"`
	Sample      bool           `json:"sample,omitempty"`
}

// Deliver implements domain.Notifier.
func (n *webhookNotifier) Deliver(ctx context.Context, t domain.AlertTarget, m domain.Notification) (domain.DeliveryResult, error) {
	if err := n.CheckTarget(t); err != nil {
		return domain.DeliveryResult{}, err
	}
	doc := webhookDocument{ID: m.ID, AlertID: m.AlertID, Name: m.Name, ProjectID: m.ProjectID, State: m.State, Count: m.Count,
		WindowStart: m.WindowStart, WindowEnd: m.WindowEnd, Entries: []webhookEntry{}, Sample: m.Sample,
		URL: fmt.Sprintf("/ui?project_id=%s&query=%s&start_time=%d&end_time=%d", url.QueryEscape(m.ProjectID), url.QueryEscape(m.Query), m.WindowStart, m.WindowEnd-1)}
	for _, e := range m.Entries {
		we := webhookEntry{ID: e.ID, ProjectID: e.ProjectID, Time: e.Time, Level: e.Level, Message: e.Message, Subject: e.Subject, UserID: e.UserID,
			TraceID: e.TraceID, SpanID: e.SpanID}
		if len(e.Attributes) > 0 {
			we.Attributes = e.Attributes
		}
		doc.Entries = append(doc.Entries, we)
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return domain.DeliveryResult{}, fmt.Errorf("encode notification: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return domain.DeliveryResult{}, fmt.Errorf("notification request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if t.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+t.BearerToken)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may hold a secret: leave it out of logs
		}
		return domain.DeliveryResult{}, &domain.Error{Kind: domain.KindUnavailable, Msg: "the receiver could not be reached", Err: err}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, webhookAnswerBytes))
	return domain.DeliveryResult{Status: resp.StatusCode, Body: string(answer)}, nil
}
