package edge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"example.com/obsvc/domain"
)

// refused records what the edge refused, in place of a transport's error writer.
type refused struct {
	mu    sync.Mutex
	kinds []domain.Kind
}

func (f *refused) refuse(w http.ResponseWriter, _ *http.Request, err error) {
	f.mu.Lock()
	f.kinds = append(f.kinds, domain.KindOf(err))
	f.mu.Unlock()
	w.WriteHeader(599) // a status no handler uses: the test tells refusals apart by it
}

// principalEcho answers 200 with the principal the request acts for.
var principalEcho = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	p, ok := domain.PrincipalFrom(r.Context())
	fmt.Fprintf(w, "%v admin=%v project=%s", ok, p.Admin, p.ProjectID)
})

// key is the configured API key of secret acting for p, with the key id the configuration gives it.
func key(secret string, p domain.Principal) domain.Key {
	d := sha256.Sum256([]byte(secret))
	p.KeyID = hex.EncodeToString(d[:8])
	return domain.Key{Digest: d, Principal: p}
}

func TestAuthenticate(t *testing.T) {
	const project = "01938b6e-7c4a-7c2e-9d41-6a1f4f1d2e3a"
	keys := domain.NewKeys(key("root", domain.Principal{Admin: true}), key("p-key", domain.Principal{ProjectID: project}))
	cases := []struct {
		name    string
		keys    *domain.Keys
		path    string
		headers []string
		want    string // body, or "refused"
	}{
		{"open service acts for an admin", nil, "/projects", nil, "true admin=true project="},
		{"admin key", keys, "/projects", []string{"Bearer root"}, "true admin=true project="},
		{"scheme in any case, several spaces", keys, "/projects", []string{"bEaReR   p-key"}, "true admin=false project=" + project},
		{"no header", keys, "/projects", nil, "refused"},
		{"wrong key", keys, "/projects", []string{"Bearer nope"}, "refused"},
		{"basic scheme", keys, "/projects", []string{"Basic cm9vdA=="}, "refused"},
		{"scheme alone", keys, "/projects", []string{"Bearer"}, "refused"},
		{"scheme and a space", keys, "/projects", []string{"Bearer "}, "refused"},
		{"non-breaking space is not trimmed", keys, "/projects", []string{"Bearer \u00a0"}, "refused"},
		{"trailing space is part of the secret", keys, "/projects", []string{"Bearer root "}, "refused"},
		{"tab separator", keys, "/projects", []string{"Bearer\troot"}, "refused"},
		{"two headers, both valid", keys, "/projects", []string{"Bearer root", "Bearer root"}, "refused"},
		{"two headers, one valid", keys, "/projects", []string{"Bearer nope", "Bearer root"}, "refused"},
		{"probes need no key", keys, "/healthz", nil, "false admin=false project="},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f refused
			h := Authenticate(c.keys, f.refuse)(principalEcho)
			r := httptest.NewRequest("GET", c.path, nil)
			for _, v := range c.headers {
				r.Header.Add("Authorization", v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			got := w.Body.String()
			if w.Code == 599 {
				got = "refused"
				if f.kinds[0] != domain.KindUnauthenticated {
					t.Errorf("refused as %v, want unauthenticated", f.kinds[0])
				}
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestAdminOnly(t *testing.T) {
	cases := []struct {
		name string
		p    *domain.Principal
		want int
		kind domain.Kind
	}{
		{"admin", &domain.Principal{Admin: true}, 200, 0},
		{"project key", &domain.Principal{ProjectID: "p", KeyID: "k"}, 599, domain.KindForbidden},
		{"nobody", nil, 599, domain.KindUnauthenticated},
	}
	for _, c := range cases {
		var f refused
		r := httptest.NewRequest("GET", "/metrics", nil)
		if c.p != nil {
			r = r.WithContext(domain.WithPrincipal(r.Context(), *c.p))
		}
		w := httptest.NewRecorder()
		AdminOnly(f.refuse, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(w, r)
		if w.Code != c.want || (c.want == 599 && f.kinds[0] != c.kind) {
			t.Errorf("%s: %d %v, want %d %v", c.name, w.Code, f.kinds, c.want, c.kind)
		}
	}
}

// blocker holds requests in its handler until released, and says when each arrived.
type blocker struct {
	arrived chan struct{}
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{arrived: make(chan struct{}, 100), release: make(chan struct{})}
}

func (b *blocker) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	b.arrived <- struct{}{}
	<-b.release
}

func asClient(r *http.Request, key string) *http.Request {
	return r.WithContext(domain.WithPrincipal(r.Context(), domain.Principal{KeyID: key}))
}

func TestShedAndShedPerClient(t *testing.T) {
	cases := []struct {
		name     string
		layer    func(Refuse) Middleware
		held     []string // clients of the requests held in flight
		next     string   // client of the request that follows
		wantKind domain.Kind
		wantOK   bool
	}{
		{"global cap reached", func(f Refuse) Middleware { return Shed(2, f) }, []string{"a", "b"}, "c", domain.KindUnavailable, false},
		{"global cap not reached", func(f Refuse) Middleware { return Shed(3, f) }, []string{"a", "b"}, "c", 0, true},
		{"global cap off", func(f Refuse) Middleware { return Shed(0, f) }, []string{"a", "b"}, "c", 0, true},
		{"client at its cap", func(f Refuse) Middleware { return ShedPerClient(2, f) }, []string{"a", "a"}, "a", domain.KindRateLimited, false},
		{"another client is served", func(f Refuse) Middleware { return ShedPerClient(2, f) }, []string{"a", "a"}, "b", 0, true},
		{"per-client cap off", func(f Refuse) Middleware { return ShedPerClient(0, f) }, []string{"a", "a"}, "a", 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f refused
			b := newBlocker()
			h := c.layer(f.refuse)(b)
			var wg sync.WaitGroup
			for _, who := range c.held {
				wg.Add(1)
				go func() {
					defer wg.Done()
					h.ServeHTTP(httptest.NewRecorder(), asClient(httptest.NewRequest("GET", "/x", nil), who))
				}()
				<-b.arrived
			}
			w := httptest.NewRecorder()
			done := make(chan struct{})
			go func() {
				h.ServeHTTP(w, asClient(httptest.NewRequest("GET", "/x", nil), c.next))
				close(done)
			}()
			if c.wantOK {
				<-b.arrived // it reached the handler
			} else {
				<-done
				if w.Code != 599 || f.kinds[0] != c.wantKind {
					t.Errorf("refusal = %d %v, want %v", w.Code, f.kinds, c.wantKind)
				}
			}
			close(b.release)
			wg.Wait()
			<-done
			// Every slot is given back: the same load is served again.
			if c.wantOK {
				return
			}
			b2 := newBlocker()
			close(b2.release)
			w = httptest.NewRecorder()
			c.layer(f.refuse)(b2).ServeHTTP(w, asClient(httptest.NewRequest("GET", "/x", nil), c.next))
			if w.Code != 200 {
				t.Errorf("after release: %d", w.Code)
			}
		})
	}
}

func TestProbesAreNeverShed(t *testing.T) {
	var f refused
	arrived, release := make(chan struct{}), make(chan struct{})
	h := Shed(1, f.refuse)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(arrived)
			<-release
		}
	}))
	done := make(chan struct{})
	go func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/slow", nil)); close(done) }()
	<-arrived
	for path, want := range map[string]int{"/readyz": 200, "/healthz": 200, "/projects": 599} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != want {
			t.Errorf("%s with the only slot taken = %d, want %d", path, w.Code, want)
		}
	}
	close(release)
	<-done
}

func TestWriteLimit(t *testing.T) {
	isWrite := func(r *http.Request) bool { return r.Method == "POST" }
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	var f refused
	h := WriteLimit(0.001, 2, isWrite, f.refuse)(ok)
	send := func(method, key string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, asClient(httptest.NewRequest(method, "/logs", nil), key))
		return w
	}
	for i, c := range []struct {
		method, key string
		want        int
	}{
		{"POST", "a", 200}, {"POST", "a", 200}, {"POST", "a", 599}, // a burst of two, then refused
		{"GET", "a", 200},  // reads are not limited
		{"POST", "b", 200}, // another key has its own bucket
	} {
		w := send(c.method, c.key)
		if w.Code != c.want {
			t.Errorf("request %d (%s as %s) = %d, want %d", i, c.method, c.key, w.Code, c.want)
		}
		if w.Code == 599 && (w.Header().Get("Retry-After") == "" || f.kinds[0] != domain.KindRateLimited) {
			t.Errorf("refusal without Retry-After or as %v", f.kinds)
		}
	}
	if off := WriteLimit(0, 1, isWrite, f.refuse)(ok); off == nil {
		t.Fatal("nil handler")
	}
}

// TestWriteLimitSurvivesAFloodOfNewClients is the eviction rule: a client that keeps writing keeps
// its (empty) bucket while more new clients than the limiter tracks arrive once each.
func TestWriteLimitSurvivesAFloodOfNewClients(t *testing.T) {
	var f refused
	h := WriteLimit(0.001, 1, func(*http.Request) bool { return true }, f.refuse)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	send := func(key string) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, asClient(httptest.NewRequest("POST", "/logs", nil), key))
		return w.Code
	}
	send("steady")
	send("steady") // now empty: refused, and seen twice
	for i := range 3 * maxWriteBuckets {
		send(fmt.Sprintf("flood-%d", i))
		if i%1000 == 0 && send("steady") != 599 {
			t.Fatalf("after %d new clients the steady client's limit was reset", i)
		}
	}
	if got := send("steady"); got != 599 {
		t.Fatalf("after the flood the steady client writes again (%d): its bucket was evicted", got)
	}
}

func TestDeadline(t *testing.T) {
	var gotDeadline bool
	h := Deadline(time.Minute, func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/twirp/") })(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, gotDeadline = r.Context().Deadline()
	}))
	for path, want := range map[string]bool{"/logs": true, "/twirp/x": false} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
		if gotDeadline != want {
			t.Errorf("%s: deadline set = %v, want %v", path, gotDeadline, want)
		}
	}
}

func TestSecureHeaders(t *testing.T) {
	w := httptest.NewRecorder()
	SecureHeaders(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Security-Policy", "page's own")
	})).ServeHTTP(w, httptest.NewRequest("GET", "/projects", nil))
	for k, v := range map[string]string{"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Content-Security-Policy": "page's own"} {
		if got := w.Header().Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:8080": true, "127.0.0.1": true, "127.9.9.9:1": true, "[::1]:8080": true, "::1": true,
		"": false, "0.0.0.0": false, "10.0.0.1:80": false, "example.com": false, "localhost.example.com": false, "[::]:80": false,
	} {
		if got := IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
	var f refused
	h := LoopbackHostsOnly(true, f.refuse)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for host, want := range map[string]int{"localhost:8080": 200, "attacker.example": 599} {
		r := httptest.NewRequest("GET", "/projects", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %s = %d, want %d", host, w.Code, want)
		}
	}
}

// TestObserveBoundsLabelsAndLogFields sends invented methods and ids: the metrics keep one series
// for all of them, and every logged value stays within its bound.
func TestObserveBoundsLabelsAndLogFields(t *testing.T) {
	var logs bytes.Buffer
	m := NewMetrics(nil)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /projects", func(http.ResponseWriter, *http.Request) {})
	h := Chain(mux, Observe(slog.New(slog.NewJSONHandler(&logs, nil)), m), NotePattern)
	methods := []string{"GET", "BREW", strings.Repeat("X", 2048), "PROPFIND", "get"}
	for i, method := range methods {
		r := httptest.NewRequest(method, "/projects", nil)
		r.Header.Set("X-Request-Id", fmt.Sprintf("id-%d", i))
		if i == 2 {
			r.Header.Set("X-Request-Id", strings.Repeat("y", 4096))
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	scrape := httptest.NewRecorder()
	m.Handler().ServeHTTP(scrape, httptest.NewRequest("GET", "/metrics", nil))
	var series []string
	for _, line := range strings.Split(scrape.Body.String(), "\n") {
		if strings.HasPrefix(line, "obsvc_http_requests_total{") {
			series = append(series, line)
		}
	}
	for _, s := range series {
		if !strings.Contains(s, `method="GET"`) && !strings.Contains(s, `method="other"`) {
			t.Errorf("a series with an unbounded method: %s", s)
		}
	}
	dec := json.NewDecoder(&logs)
	lines := 0
	for {
		var l map[string]any
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		lines++
		if m, _ := l["method"].(string); m != "GET" && m != "other" {
			t.Errorf("logged method %.40q", m)
		}
		if id, _ := l["request_id"].(string); len(id) > 128 {
			t.Errorf("logged request id of %d bytes", len(id))
		}
	}
	if lines != len(methods) {
		t.Errorf("%d access log lines for %d requests", lines, len(methods))
	}
}

func TestValidRequestID(t *testing.T) {
	for id, want := range map[string]bool{"trace-42.a_b:c": true, "": false, strings.Repeat("x", 128): true, strings.Repeat("x", 129): false, "has space": false, "ünï": false} {
		if got := ValidRequestID(id); got != want {
			t.Errorf("ValidRequestID(%.20q) = %v, want %v", id, got, want)
		}
	}
}

type pingFunc func(context.Context) error

func (f pingFunc) Ping(ctx context.Context) error { return f(ctx) }

func TestReadiness(t *testing.T) {
	for name, c := range map[string]struct {
		ping pingFunc
		want int
	}{
		"store answers": {func(context.Context) error { return nil }, 200},
		"store fails":   {func(context.Context) error { return errors.New("down") }, 503},
		"store hangs":   {func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, 503},
	} {
		mux := http.NewServeMux()
		RegisterHealth(mux, c.ping)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/readyz", nil))
		if w.Code != c.want {
			t.Errorf("%s: /readyz = %d, want %d", name, w.Code, c.want)
		}
		w = httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/healthz", nil))
		if w.Code != 200 {
			t.Errorf("%s: /healthz = %d", name, w.Code)
		}
	}
}

// TestShedGivesSharesBackEarly: a request that ends its admission (a live tail once started)
// no longer counts against Shed or ShedPerClient though it is still in flight, and ending it
// twice, or again when the request ends, gives back no more than its share.
func TestShedGivesSharesBackEarly(t *testing.T) {
	for name, layer := range map[string]func(Refuse) Middleware{
		"Shed":          func(f Refuse) Middleware { return Shed(1, f) },
		"ShedPerClient": func(f Refuse) Middleware { return ShedPerClient(1, f) },
	} {
		t.Run(name, func(t *testing.T) {
			var f refused
			started, release := make(chan struct{}), make(chan struct{})
			hold := newBlocker()
			h := layer(f.refuse)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/tail":
					EndAdmission(r.Context())
					EndAdmission(r.Context())
					close(started)
					<-release
				case "/hold":
					hold.ServeHTTP(w, r)
				}
			}))
			done := make(chan struct{})
			go func() {
				defer close(done)
				h.ServeHTTP(httptest.NewRecorder(), asClient(httptest.NewRequest("GET", "/tail", nil), "a"))
			}()
			<-started
			serve := func() int {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, asClient(httptest.NewRequest("GET", "/x", nil), "a"))
				return w.Code
			}
			if code := serve(); code != 200 {
				t.Fatalf("a request beside a started tail = %d (%v), want 200", code, f.kinds)
			}
			close(release)
			<-done
			// The limit of one still holds: one request in flight refuses the next.
			go h.ServeHTTP(httptest.NewRecorder(), asClient(httptest.NewRequest("GET", "/hold", nil), "a"))
			<-hold.arrived
			code := serve()
			close(hold.release)
			if code != 599 {
				t.Fatalf("a second request past the limit of one = %d, want refused", code)
			}
		})
	}
}
