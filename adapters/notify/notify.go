// Package notify delivers alert notifications: a generic JSON webhook, Slack's incoming webhook
// and Prometheus Alertmanager's v2 API. The service makes these requests to URLs its clients
// give, so every target is checked against the allow-list of ALERT_TARGETS, and every connection
// against the internal address ranges, at connect time; redirects are not followed, timeouts are
// short and bodies bounded both ways. A target's secrets (a bearer token, a Slack URL) are never
// logged nor put in an error: logs and errors name the target's type and host only.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"example.com/obsvc/domain"
)

// Defaults of Options.
const (
	DefaultConnectTimeout = 3 * time.Second
	DefaultTimeout        = 10 * time.Second
	// DefaultMaxAnswerBytes is how much of a receiver's answer is kept in DeliveryResult.Body.
	DefaultMaxAnswerBytes = 1 << 10
	// DefaultMaxRequestBytes bounds a notification's body: sample entries are dropped, last
	// first, until it fits.
	DefaultMaxRequestBytes = 256 << 10
)

// Options configure a Notifier.
type Options struct {
	// Allow is ALERT_TARGETS (ParseAllowList). Empty allows no target at all.
	Allow AllowList
	// PublicURL is where the service's explorer is reached by a notification's reader
	// ("https://logs.example.com"); the link of each notification starts with it. Empty gives a
	// link relative to the service ("/ui?…").
	PublicURL string
	// RenderEntry renders one entry exactly as GET /logs does (httpapi.RenderEntry). Required.
	RenderEntry func(domain.LogEntry) (json.RawMessage, error)
	// ConnectTimeout bounds resolving and connecting (and the TLS handshake); Timeout the whole
	// delivery, the answer's body included.
	ConnectTimeout time.Duration
	Timeout        time.Duration
	// MaxAnswerBytes caps DeliveryResult.Body; MaxRequestBytes a notification's body.
	MaxAnswerBytes  int
	MaxRequestBytes int
	// Lookup resolves host names; nil is the system's resolver. Tests give their own to make a
	// name resolve to an internal address: the address check is the same code either way.
	Lookup Lookup
	// Log gets one line per delivery, with the target's type and host only.
	Log *slog.Logger
	// Now is the clock (an Alertmanager sample's times); nil is time.Now.
	Now func() time.Time
}

// Notifier implements domain.Notifier.
type Notifier struct {
	opts   Options
	client *http.Client
}

var _ domain.Notifier = (*Notifier)(nil)

// New returns a Notifier; Close releases its idle connections.
func New(opts Options) (*Notifier, error) {
	if opts.RenderEntry == nil {
		return nil, errors.New("notify: Options.RenderEntry is required")
	}
	if opts.PublicURL != "" {
		u, err := url.Parse(opts.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("notify: public URL %q is not an absolute http(s) URL", opts.PublicURL)
		}
		opts.PublicURL = strings.TrimSuffix(opts.PublicURL, "/")
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxAnswerBytes <= 0 {
		opts.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.Lookup == nil {
		r := net.DefaultResolver
		opts.Lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return r.LookupNetIP(ctx, "ip", host)
		}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	d := dialer{allow: opts.Allow, lookup: opts.Lookup, timeout: opts.ConnectTimeout}
	return &Notifier{opts: opts, client: newClient(d, opts.Timeout)}, nil
}

// Close closes the idle connections kept for later deliveries.
func (n *Notifier) Close() { n.client.CloseIdleConnections() }

// invalid is CheckTarget's KindInvalid error: field is the target's member ("type", "url"),
// detail reads after it.
func invalid(field, detail string) error {
	return &domain.Error{Kind: domain.KindInvalid, Msg: "invalid alert target",
		Fields: []domain.FieldError{{Path: []string{field}, Detail: detail}}}
}

// CheckTarget implements domain.Notifier: the type is webhook, slack or alertmanager; the URL is
// an absolute http(s) URL without user information whose host (and port) ALERT_TARGETS allows.
// Its error is KindInvalid with one field, "type" or "url", relative to the target. Whether the
// host resolves to an internal address is checked when a delivery connects, not here: a name may
// resolve differently by then.
func (n *Notifier) CheckTarget(t domain.AlertTarget) error {
	switch t.Type {
	case domain.TargetWebhook, domain.TargetSlack, domain.TargetAlertmanager:
	default:
		return invalid("type", "must be one of webhook, slack, alertmanager")
	}
	u, err := url.Parse(t.URL)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return invalid("url", "is not an absolute URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return invalid("url", "must be an http or https URL")
	}
	if u.User != nil {
		return invalid("url", "must not hold a user name or password (use bearer_token)")
	}
	host := u.Hostname()
	if host == "" {
		return invalid("url", "has no host")
	}
	port, err := portOf(u)
	if err != nil {
		return invalid("url", "has an invalid port")
	}
	if !n.opts.Allow.Allows(host, port) {
		return invalid("url", "names a host that is not allowed by ALERT_TARGETS")
	}
	if strings.ContainsAny(t.BearerToken, "\r\n") {
		return invalid("bearer_token", "must not contain a line break")
	}
	return nil
}

// portOf is u's port, or its scheme's default.
func portOf(u *url.URL) (int, error) {
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return 0, fmt.Errorf("port %q", p)
		}
		return n, nil
	}
	if u.Scheme == "https" {
		return 443, nil
	}
	return 80, nil
}

// Deliver implements domain.Notifier: it checks the target again (ALERT_TARGETS may have changed
// since the rule was saved), renders the notification for the target's type and POSTs it. Any
// answer is a DeliveryResult with a nil error, its status and the first MaxAnswerBytes of its body
// (a status that is not 2xx, a redirect included, is a failed delivery for the caller to retry);
// no answer (refused, unreachable, timed out) is an error. Errors name the target's type and host,
// never its path or token.
func (n *Notifier) Deliver(ctx context.Context, t domain.AlertTarget, note domain.Notification) (domain.DeliveryResult, error) {
	if err := n.CheckTarget(t); err != nil {
		return domain.DeliveryResult{}, err
	}
	u, _ := url.Parse(t.URL) // CheckTarget parsed it
	where := t.Type + " target " + u.Host
	endpoint := t.URL
	var (
		body []byte
		err  error
	)
	switch t.Type {
	case domain.TargetWebhook:
		body, err = n.webhookBody(note)
	case domain.TargetSlack:
		body, err = n.slackBody(note)
	case domain.TargetAlertmanager:
		endpoint = alertmanagerEndpoint(u)
		body, err = n.alertmanagerBody(note)
	}
	if err != nil {
		return domain.DeliveryResult{}, fmt.Errorf("render notification for %s: %w", where, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return domain.DeliveryResult{}, fmt.Errorf("request to %s: invalid URL", where)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "obsvc-alerts")
	if note.ID != "" {
		req.Header.Set("Idempotency-Key", note.ID)
	}
	if t.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+t.BearerToken)
	}
	start := time.Now()
	resp, err := n.client.Do(req)
	if err != nil {
		err = scrub(err, where)
		n.opts.Log.WarnContext(ctx, "alert notification not delivered", "target_type", t.Type, "target_host", u.Host,
			"notification_id", note.ID, "duration_ms", time.Since(start).Milliseconds(), "err", err)
		return domain.DeliveryResult{}, err
	}
	defer resp.Body.Close()
	// What the receiver said, as far as it got: a body cut short still reports its status.
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, int64(n.opts.MaxAnswerBytes)))
	res := domain.DeliveryResult{Status: resp.StatusCode, Body: strings.ToValidUTF8(string(answer), "\uFFFD")}
	level := slog.LevelInfo
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		level = slog.LevelWarn
	}
	n.opts.Log.Log(ctx, level, "alert notification delivered", "target_type", t.Type, "target_host", u.Host,
		"notification_id", note.ID, "status", resp.StatusCode, "duration_ms", time.Since(start).Milliseconds())
	return res, nil
}

// scrub rebuilds an error of the HTTP client without the URL it quotes (a Slack URL is a secret,
// and any path or query may be one), naming where instead. A refused address is a KindInvalid
// domain error whose message says why.
func scrub(err error, where string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	// A refusal says what was refused and why, for the rule's owner (the test button shows a
	// domain error's message): a KindInvalid that is still ErrRefusedAddress.
	var refused *refusedError
	if errors.As(err, &refused) {
		return &domain.Error{Kind: domain.KindInvalid, Msg: "the target's address is refused: " + refused.msg, Err: refused}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return fmt.Errorf("deliver to %s: %w", where, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("deliver to %s: timed out: %w", where, err)
	}
	return fmt.Errorf("deliver to %s: %w", where, err)
}

// alertmanagerEndpoint is the v2 alerts endpoint under an Alertmanager's base URL.
func alertmanagerEndpoint(u *url.URL) string {
	v := *u
	v.Path = strings.TrimSuffix(v.Path, "/") + "/api/v2/alerts"
	v.RawPath = ""
	v.RawQuery = ""
	v.Fragment = ""
	return v.String()
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
