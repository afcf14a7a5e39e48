package notify_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"example.com/obsvc/adapters/httpapi"
	"example.com/obsvc/adapters/notify"
	"example.com/obsvc/domain"
)

// receiver is a local HTTP server that counts and keeps what it is sent.
type receiver struct {
	*httptest.Server
	hits   atomic.Int64
	bodies chan captured
}

type captured struct {
	path   string
	header http.Header
	body   []byte
}

// newReceiver starts a receiver on network's loopback ("tcp4" or "tcp6") answering with h after
// recording the request (nil: 200 "ok").
func newReceiver(t *testing.T, network string, h http.HandlerFunc) *receiver {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "tcp6" {
		addr = "[::1]:0"
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("no %s loopback: %v", network, err)
	}
	r := &receiver{bodies: make(chan captured, 16)}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		b, _ := io.ReadAll(req.Body)
		select {
		case r.bodies <- captured{path: req.URL.RequestURI(), header: req.Header.Clone(), body: b}:
		default:
		}
		if h != nil {
			h(w, req)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	_ = r.Server.Listener.Close()
	r.Server.Listener = ln
	r.Start()
	t.Cleanup(r.Close)
	return r
}

// port is the receiver's port.
func (r *receiver) port() string {
	_, p, _ := net.SplitHostPort(r.Listener.Addr().String())
	return p
}

// fakeDNS resolves the names of its map, and nothing else.
func fakeDNS(names map[string][]string) notify.Lookup {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		addrs, ok := names[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		var out []netip.Addr
		for _, a := range addrs {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}
}

func newNotifier(t *testing.T, allow string, lookup notify.Lookup, log *slog.Logger) *notify.Notifier {
	t.Helper()
	list, err := notify.ParseAllowList(allow)
	if err != nil {
		t.Fatalf("ParseAllowList(%q): %v", allow, err)
	}
	n, err := notify.New(notify.Options{Allow: list, PublicURL: "https://logs.example.com", RenderEntry: httpapi.RenderEntry,
		ConnectTimeout: 500 * time.Millisecond, Timeout: 2 * time.Second, Lookup: lookup, Log: log})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(n.Close)
	return n
}

func sampleNote() domain.Notification {
	return domain.Notification{ID: "r1-1700000000000-firing", AlertID: "r1", Name: "errors", ProjectID: "p1", State: "firing",
		Count: 3, WindowStart: 1_700_000_000_000, WindowEnd: 1_700_000_060_000, FiringStart: 1_700_000_060_000, Query: "level:error"}
}

// TestSSRF is the table of Done-when 4: each internal address, reached by an IP literal or by a
// name resolving to it, is refused at connect time unless its host:port is listed as itself in
// ALERT_TARGETS; a pattern that merely covers it (the host without a port, a wildcard) is not
// enough. Listed, the delivery goes through (to the local receiver) or at least gets past the
// check (an unroutable address then fails to connect, but not as refused).
func TestSSRF(t *testing.T) {
	t.Parallel()
	v4 := newReceiver(t, "tcp4", nil)
	p := v4.port()
	dns := fakeDNS(map[string][]string{
		"hooks.internal.test":  {"127.0.0.1"},
		"metadata.evil.test":   {"169.254.169.254"},
		"ten.evil.test":        {"10.1.2.3"},
		"ula.evil.test":        {"fd00::1"},
		"zero.evil.test":       {"0.0.0.0"},
		"mapped.evil.test":     {"::ffff:127.0.0.1"},
		"rebind.evil.test":     {"127.0.0.1"},
		"cgnat.evil.test":      {"100.64.0.1"},
		"localhost":            {"127.0.0.1"},
		"multi.internal.test":  {"10.9.9.9", "127.0.0.1"},
		"linklocal6.evil.test": {"fe80::1"},
	})
	cases := []struct {
		name   string
		url    string
		allow  string
		lookup notify.Lookup // nil: the system's resolver
		// want: "refused" (ErrRefusedAddress), "delivered" (the receiver answered 200) or
		// "passed" (past the check, the connection then fails otherwise).
		want string
	}{
		{"127.0.0.1 host only", "http://127.0.0.1:" + p + "/hook", "127.0.0.1", nil, "refused"},
		{"127.0.0.1 any host", "http://127.0.0.1:" + p + "/hook", "*", nil, "refused"},
		{"127.0.0.1 other port listed", "http://127.0.0.1:" + p + "/hook", "127.0.0.1:1,*", nil, "refused"},
		{"127.0.0.1 listed", "http://127.0.0.1:" + p + "/hook", "127.0.0.1:" + p, nil, "delivered"},
		{"127.0.0.2 loopback /8", "http://127.0.0.2:" + p + "/hook", "127.0.0.2", nil, "refused"},
		{"localhost by the system resolver", "http://localhost:" + p + "/hook", "localhost", nil, "refused"},
		{"localhost by the system resolver, listed", "http://localhost:" + p + "/hook", "localhost:" + p, nil, "delivered"},
		{"name resolving to loopback", "http://hooks.internal.test:" + p + "/", "*.internal.test", dns, "refused"},
		{"name resolving to loopback, listed", "http://hooks.internal.test:" + p + "/", "hooks.internal.test:" + p, dns, "delivered"},
		{"name resolving to private then loopback", "http://multi.internal.test:" + p + "/", "*.internal.test", dns, "refused"},
		{"name resolving to private then loopback, listed", "http://multi.internal.test:" + p + "/", "multi.internal.test:" + p, dns, "delivered"},
		{"0.0.0.0 reaches the local host", "http://0.0.0.0:" + p + "/", "0.0.0.0", nil, "refused"},
		{"0.0.0.0 listed", "http://0.0.0.0:" + p + "/", "0.0.0.0:" + p, nil, "delivered"},
		{"name resolving to 0.0.0.0", "http://zero.evil.test:" + p + "/", "*", dns, "refused"},
		{"IPv4-mapped loopback", "http://[::ffff:127.0.0.1]:" + p + "/", "*", nil, "refused"},
		{"name resolving to IPv4-mapped loopback", "http://mapped.evil.test:" + p + "/", "*", dns, "refused"},
		{"169.254.169.254", "http://169.254.169.254/latest/meta-data/", "169.254.169.254", nil, "refused"},
		{"169.254.169.254 listed", "http://169.254.169.254/latest/meta-data/", "169.254.169.254:80", nil, "passed"},
		{"name resolving to 169.254.169.254", "http://metadata.evil.test/", "*.evil.test", dns, "refused"},
		{"10/8", "http://10.1.2.3/", "10.1.2.3", nil, "refused"},
		{"10/8 listed", "http://10.1.2.3:8080/", "10.1.2.3:8080", nil, "passed"},
		{"name resolving to 10/8", "https://ten.evil.test/", "ten.evil.test", dns, "refused"},
		{"172.16/12 low", "http://172.16.0.1/", "*", nil, "refused"},
		{"172.16/12 high", "http://172.31.255.254/", "*", nil, "refused"},
		{"192.168/16", "http://192.168.1.1/", "*", nil, "refused"},
		{"192.168/16 listed", "http://192.168.1.1:9093/", "192.168.1.1:9093", nil, "passed"},
		{"100.64/10 CGNAT", "http://100.64.0.1/", "*", nil, "refused"},
		{"name resolving to CGNAT", "http://cgnat.evil.test/", "*", dns, "refused"},
		{"fd00::/8", "http://[fd00::1]/", "*", nil, "refused"},
		{"fd00::/8 listed", "http://[fd00::1]:9093/", "[fd00::1]:9093", nil, "passed"},
		{"name resolving to fd00::/8", "http://ula.evil.test/", "*", dns, "refused"},
		{"fe80::/10", "http://[fe80::1]/", "*", nil, "refused"},
		{"name resolving to fe80::/10", "http://linklocal6.evil.test/", "*", dns, "refused"},
		{"multicast", "http://224.0.0.1/", "*", nil, "refused"},
		{"broadcast", "http://255.255.255.255/", "*", nil, "refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := newNotifier(t, c.allow, c.lookup, nil)
			target := domain.AlertTarget{Type: domain.TargetWebhook, URL: c.url}
			if err := n.CheckTarget(target); err != nil {
				t.Fatalf("CheckTarget: %v, want allowed (the address is checked at connect time)", err)
			}
			before := v4.hits.Load()
			res, err := n.Deliver(t.Context(), target, sampleNote())
			switch c.want {
			case "refused":
				if !errors.Is(err, notify.ErrRefusedAddress) {
					t.Fatalf("Deliver = %+v, %v; want ErrRefusedAddress", res, err)
				}
				var de *domain.Error
				if !errors.As(err, &de) || !strings.Contains(de.Msg, "is not listed as itself in ALERT_TARGETS") {
					t.Errorf("the refusal %v does not say why in a domain error's message", err)
				}
				if got := v4.hits.Load() - before; got != 0 {
					t.Errorf("the receiver got %d requests, want 0", got)
				}
			case "delivered":
				if err != nil || res.Status != http.StatusOK || res.Body != "ok" {
					t.Fatalf("Deliver = %+v, %v; want 200 ok", res, err)
				}
			case "passed":
				if errors.Is(err, notify.ErrRefusedAddress) {
					t.Fatalf("Deliver: %v; want past the address check", err)
				}
			}
		})
	}
}

// TestSSRFIPv6Loopback: ::1 is refused unless [::1]:port is listed (skipped without IPv6).
func TestSSRFIPv6Loopback(t *testing.T) {
	t.Parallel()
	v6 := newReceiver(t, "tcp6", nil)
	url := "http://[::1]:" + v6.port() + "/hook"
	for _, c := range []struct {
		allow string
		ok    bool
	}{{"[::1]", false}, {"*", false}, {"[::1]:" + v6.port(), true}} {
		n := newNotifier(t, c.allow, nil, nil)
		res, err := n.Deliver(t.Context(), domain.AlertTarget{Type: domain.TargetWebhook, URL: url}, sampleNote())
		if c.ok && (err != nil || res.Status != 200) {
			t.Errorf("allow %q: Deliver = %+v, %v; want 200", c.allow, res, err)
		}
		if !c.ok && !errors.Is(err, notify.ErrRefusedAddress) {
			t.Errorf("allow %q: Deliver = %+v, %v; want ErrRefusedAddress", c.allow, res, err)
		}
	}
	if got := v6.hits.Load(); got != 1 {
		t.Errorf("receiver hits = %d, want 1", got)
	}
}

// TestRedirectNotFollowed: a listed receiver answering 302 (or 307) to a private address or to
// another local server is not followed: the 3xx is the answer, a failed delivery, and the
// server it points to gets nothing.
func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	other := newReceiver(t, "tcp4", nil)
	for _, c := range []struct {
		status   int
		location string
	}{
		{http.StatusFound, "http://10.0.0.1/steal"},
		{http.StatusFound, "http://169.254.169.254/latest/meta-data/"},
		{http.StatusFound, other.URL + "/inside"},
		{http.StatusTemporaryRedirect, other.URL + "/inside"},
	} {
		redirector := newReceiver(t, "tcp4", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, c.location, c.status)
		})
		// Both local servers listed: only the redirect decides.
		n := newNotifier(t, "127.0.0.1:"+redirector.port()+",127.0.0.1:"+other.port(), nil, nil)
		res, err := n.Deliver(t.Context(), domain.AlertTarget{Type: domain.TargetWebhook, URL: redirector.URL + "/hook"}, sampleNote())
		if err != nil || res.Status != c.status {
			t.Errorf("redirect %d to %s: Deliver = %+v, %v; want status %d, no error", c.status, c.location, res, err, c.status)
		}
		if res.Status >= 200 && res.Status < 300 {
			t.Errorf("redirect %d: status %d reads as delivered", c.status, res.Status)
		}
	}
	if got := other.hits.Load(); got != 0 {
		t.Errorf("the redirect's target got %d requests, want 0", got)
	}
}

// TestCheckTarget: the type, the URL's form and the allow-list, each a KindInvalid naming the
// target's field with a detail that reads after it.
func TestCheckTarget(t *testing.T) {
	t.Parallel()
	n := newNotifier(t, "hooks.slack.com, *.example.com, am.internal:9093, *:8443", nil, nil)
	cases := []struct {
		typ, url string
		field    string // "" when allowed
		detail   string
	}{
		{"webhook", "https://api.example.com/hook", "", ""},
		{"webhook", "https://a.b.example.com/hook", "", ""},
		{"webhook", "https://example.com/hook", "url", "is not allowed by ALERT_TARGETS"},
		{"webhook", "https://evilexample.com/hook", "url", "is not allowed by ALERT_TARGETS"},
		{"webhook", "https://api.example.com.evil.net/hook", "url", "is not allowed by ALERT_TARGETS"},
		{"slack", "https://hooks.slack.com/services/T/B/X", "", ""},
		{"slack", "https://HOOKS.SLACK.COM./services/T/B/X", "", ""},
		{"alertmanager", "http://am.internal:9093", "", ""},
		{"alertmanager", "http://am.internal:9094", "url", "is not allowed by ALERT_TARGETS"},
		{"alertmanager", "http://am.internal", "url", "is not allowed by ALERT_TARGETS"},
		{"webhook", "https://anything.net:8443/x", "", ""},
		{"webhook", "https://anything.net/x", "url", "is not allowed by ALERT_TARGETS"},
		{"email", "https://api.example.com/hook", "type", "must be one of"},
		{"", "https://api.example.com/hook", "type", "must be one of"},
		{"webhook", "ftp://api.example.com/hook", "url", "must be an http or https URL"},
		{"webhook", "file:///etc/passwd", "url", "must be an http or https URL"},
		{"webhook", "//api.example.com/hook", "url", "is not an absolute URL"},
		{"webhook", "api.example.com/hook", "url", "is not an absolute URL"},
		{"webhook", "https://user:pw@api.example.com/hook", "url", "must not hold a user name"},
		{"webhook", "https://api.example.com:99999/hook", "url", "invalid port"},
		{"webhook", "https:///hook", "url", "has no host"},
		{"webhook", "https://api.example.com/\x7f", "url", "is not an absolute URL"},
	}
	for _, c := range cases {
		err := n.CheckTarget(domain.AlertTarget{Type: c.typ, URL: c.url})
		if c.field == "" {
			if err != nil {
				t.Errorf("CheckTarget(%s %q) = %v, want allowed", c.typ, c.url, err)
			}
			continue
		}
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindInvalid || len(de.Fields) != 1 {
			t.Errorf("CheckTarget(%s %q) = %v, want one KindInvalid field", c.typ, c.url, err)
			continue
		}
		if f := de.Fields[0]; strings.Join(f.Path, "/") != c.field || !strings.Contains(f.Detail, c.detail) {
			t.Errorf("CheckTarget(%s %q) field %v %q, want %s %q", c.typ, c.url, f.Path, f.Detail, c.field, c.detail)
		}
	}
	if err := n.CheckTarget(domain.AlertTarget{Type: "webhook", URL: "https://api.example.com/", BearerToken: "a\r\nX-Evil: 1"}); domain.KindOf(err) != domain.KindInvalid {
		t.Errorf("a token with a line break: %v, want KindInvalid", err)
	}
	// No allow-list: nothing is allowed.
	none := newNotifier(t, "", nil, nil)
	if err := none.CheckTarget(domain.AlertTarget{Type: "webhook", URL: "https://api.example.com/"}); domain.KindOf(err) != domain.KindInvalid {
		t.Errorf("empty ALERT_TARGETS: %v, want KindInvalid", err)
	}
}

func TestParseAllowListRefuses(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"exa*mple.com", "*.", "host:0", "host:70000", "host:http", "a..b", "ho st", "**.x.com"} {
		if _, err := notify.ParseAllowList(bad); err == nil {
			t.Errorf("ParseAllowList(%q) = nil error, want one", bad)
		}
	}
}

// TestTimeoutsAndBounds: a receiver that does not answer in time is a failed delivery within the
// total timeout; an answer's body is kept up to 1 KiB; a notification's body stays under its bound
// by dropping sample entries.
func TestTimeoutsAndBounds(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	slow := newReceiver(t, "tcp4", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(stop) })
	big := newReceiver(t, "tcp4", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write(bytes.Repeat([]byte("x"), 1<<20))
	})
	n := newNotifier(t, "127.0.0.1:"+slow.port()+",127.0.0.1:"+big.port(), nil, nil)
	start := time.Now()
	_, err := n.Deliver(t.Context(), domain.AlertTarget{Type: domain.TargetWebhook, URL: slow.URL}, sampleNote())
	if err == nil {
		t.Error("a receiver that never answers: no error")
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("a receiver that never answers took %v, want about the 2 s timeout", d)
	}
	res, err := n.Deliver(t.Context(), domain.AlertTarget{Type: domain.TargetWebhook, URL: big.URL}, sampleNote())
	if err != nil || res.Status != http.StatusBadGateway || len(res.Body) != notify.DefaultMaxAnswerBytes {
		t.Errorf("a 1 MiB answer: status %d, body %d bytes, %v; want 502, %d bytes", res.Status, len(res.Body), err, notify.DefaultMaxAnswerBytes)
	}

	note := sampleNote()
	for i := range 10 {
		note.Entries = append(note.Entries, domain.LogEntry{ID: fmt.Sprint("e", i), ProjectID: "p1", Time: note.WindowEnd - int64(i) - 1,
			Level: "error", Message: strings.Repeat("m", 60<<10), Attributes: []byte("{}")})
	}
	ok := newReceiver(t, "tcp4", nil)
	n = newNotifier(t, "127.0.0.1:"+ok.port(), nil, nil)
	if _, err := n.Deliver(t.Context(), domain.AlertTarget{Type: domain.TargetWebhook, URL: ok.URL}, note); err != nil {
		t.Fatal(err)
	}
	got := <-ok.bodies
	if len(got.body) > notify.DefaultMaxRequestBytes {
		t.Errorf("request body %d bytes, want at most %d", len(got.body), notify.DefaultMaxRequestBytes)
	}
	if !bytes.Contains(got.body, []byte(`"id":"e0"`)) || bytes.Contains(got.body, []byte(`"id":"e9"`)) {
		t.Errorf("the bounded body should keep the newest entries and drop the oldest")
	}
}

// TestSecretsNotLogged: a Slack URL's path and a bearer token appear in no log line and no error,
// delivered or not; the token is sent as the Authorization header.
func TestSecretsNotLogged(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := newReceiver(t, "tcp4", nil)
	const secretPath, token = "/services/T000/B000/XXXXSECRETXXXX", "tok-SECRET-123"
	n := newNotifier(t, "127.0.0.1:"+r.port()+",127.0.0.1:1", nil, log)
	res, err := n.Deliver(t.Context(), domain.AlertTarget{Type: domain.TargetSlack, URL: r.URL + secretPath, BearerToken: token}, sampleNote())
	if err != nil || res.Status != 200 {
		t.Fatalf("Deliver = %+v, %v", res, err)
	}
	got := <-r.bodies
	if got.path != secretPath || got.header.Get("Authorization") != "Bearer "+token {
		t.Errorf("the receiver got path %q, Authorization %q", got.path, got.header.Get("Authorization"))
	}
	// Nothing listens on port 1: the error must not quote the URL.
	_, err = n.Deliver(t.Context(), domain.AlertTarget{Type: domain.TargetSlack, URL: "http://127.0.0.1:1" + secretPath, BearerToken: token}, sampleNote())
	if err == nil {
		t.Fatal("a closed port: no error")
	}
	for _, text := range []string{logs.String(), err.Error()} {
		if strings.Contains(text, "SECRET") {
			t.Errorf("a secret leaked: %s", text)
		}
	}
	if !strings.Contains(logs.String(), "target_type=slack") || !strings.Contains(logs.String(), "target_host=127.0.0.1:") {
		t.Errorf("the log should name the target's type and host: %s", logs.String())
	}
}
