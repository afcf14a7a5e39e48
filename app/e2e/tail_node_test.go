package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/app/server"
)

var tailNode = nodePackage{dir: "testdata/tail-node", what: "EventSource tail"}

// TestTailWithNodeEventSource follows a tail with the npm eventsource package (the WHATWG
// EventSource for node, pinned in testdata/tail-node/package-lock.json), its fetch adding the API
// key, through a proxy that cuts the connection in the middle of every cutEvery-th event. Entries
// are posted while it runs; the package must reconnect by itself with Last-Event-ID (the id of the
// last whole event it got) and receive every entry once, in ingest order.
func TestTailWithNodeEventSource(t *testing.T) {
	node, dir := tailNode.install(t)
	for _, s := range e2eStores() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel() // most of the time is the client's 1 s reconnection delay
			testTailWithNodeEventSource(t, s.open, node, dir)
		})
	}
}

func testTailWithNodeEventSource(t *testing.T, open storeOpener, node, dir string) {
	const (
		total    = 200 // entries, posted in batches of batch
		batch    = 10
		cutEvery = 30 // events per connection before the proxy cuts it
		key      = "tail-key"
	)
	st := open(t)
	proj, _ := seedProjects(t, st)
	cfg := server.DefaultConfig()
	cfg.APIKeys = apitest.KeyLine("project "+proj.ID, key)
	cfg.TailPoll = 100 * time.Millisecond
	svc, err := server.New(cfg, st, slog.New(slog.DiscardHandler), server.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	// Record the Last-Event-ID of every tail request the package makes.
	var mu sync.Mutex
	var resumes []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == server.TailPath {
			mu.Lock()
			resumes = append(resumes, r.Header.Get("Last-Event-ID"))
			mu.Unlock()
		}
		svc.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	proxy := newCuttingProxy(t, srv.Listener.Addr().String(), cutEvery)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "tail.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"TAIL_URL="+proxy.url+server.TailPath+"?project_id="+proj.ID,
		"OBSVC_KEY="+key, "END_MESSAGE=end", "TAIL_TIMEOUT_MS=90000")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan nodeLine, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var l nodeLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				l = nodeLine{Type: "garbage"}
			}
			l.Text = sc.Text()
			lines <- l
		}
	}()
	var got []nodeLine
	// The tail starts at the entries ingested after it opens: post nothing before that.
	for opened := false; !opened; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the script ended before its tail opened: %v\n%s", cmd.Wait(), stderr.String())
			}
			got = append(got, l)
			opened = l.Type == "open"
		case <-ctx.Done():
			t.Fatal("the tail did not open")
		}
	}

	var want []string
	for b := 0; b < total; b += batch {
		var buf bytes.Buffer
		buf.WriteByte('[')
		for k := range batch {
			msg := fmt.Sprintf("m%03d", b+k)
			if b+k == total-1 {
				msg = "end"
			}
			want = append(want, msg)
			if k > 0 {
				buf.WriteByte(',')
			}
			fmt.Fprintf(&buf, `{"project_id":%q,"message":%q}`, proj.ID, msg)
		}
		buf.WriteByte(']')
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/logs", &buf)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST /logs: %d", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond) // entries keep arriving while the client reconnects
	}
	for l := range lines {
		got = append(got, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node tail.mjs: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), joinText(got))
	}

	var messages []string
	ids := map[string]bool{}
	errs := 0
	for _, l := range got {
		switch l.Type {
		case "log":
			messages = append(messages, l.Message)
			ids[l.ID] = true
		case "error":
			errs++
		case "open":
		default:
			t.Errorf("script line %s", l.Text)
		}
	}
	if !slices.Equal(messages, want) {
		t.Errorf("received %d entries, want the %d posted, each once, in order\ngot:\n%s", len(messages), len(want), joinText(got))
	}
	cuts := proxy.cuts()
	mu.Lock()
	defer mu.Unlock()
	// Each cut ends an event halfway, so the client must resume from the event before it.
	if least := total/cutEvery - 1; cuts < least || errs < cuts {
		t.Errorf("the proxy cut %d connections and the client saw %d errors; want at least %d of each", cuts, errs, least)
	}
	if len(resumes) < cuts+1 || resumes[0] != "" {
		t.Fatalf("tail requests with Last-Event-ID %q for %d cuts: want a fresh start and then one resume per cut", resumes, cuts)
	}
	for _, id := range resumes[1:] {
		if !ids[id] {
			t.Errorf("resumed with Last-Event-ID %q, which is no id the client received", id)
		}
	}
	t.Logf("%d entries received through %d cuts, resumed with Last-Event-ID each time", len(messages), cuts)
}

// nodeLine is one line the script writes; Text is the line itself.
type nodeLine struct{ Type, ID, Message, Text string }

func joinText(ls []nodeLine) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// cuttingProxy forwards TCP connections to a server and cuts each one in the middle of its
// cutEvery-th event (counted by its "event: log" lines), the way a flaky network or a restarting
// load balancer ends a stream.
type cuttingProxy struct {
	url      string
	cutEvery int
	mu       sync.Mutex
	n        int
}

func newCuttingProxy(t *testing.T, upstream string, cutEvery int) *cuttingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cuttingProxy{url: "http://" + ln.Addr().String(), cutEvery: cutEvery}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { p.forward(c, upstream) })
		}
	})
	return p
}

func (p *cuttingProxy) cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *cuttingProxy) forward(c net.Conn, upstream string) {
	defer c.Close()
	u, err := net.Dial("tcp", upstream)
	if err != nil {
		return
	}
	defer u.Close()
	go func() {
		_, _ = io.Copy(u, c)
		_ = u.Close() // the client went away: end the upstream side too
	}()
	marker := []byte("event: log\n")
	var window []byte // the tail of what was sent, so a marker split between reads counts
	events := 0
	buf := make([]byte, 32<<10)
	for {
		n, err := u.Read(buf)
		chunk := buf[:n]
		for len(chunk) > 0 {
			scan := append(window, chunk...)
			i := bytes.Index(scan, marker)
			if i < 0 {
				if _, err := c.Write(chunk); err != nil {
					return
				}
				window = append(window[:0], scan[max(0, len(scan)-len(marker)):]...)
				break
			}
			// Pass on everything up to and including this marker.
			upto := i + len(marker) - len(window)
			events++
			if events == p.cutEvery {
				// Its id line is sent, its data only in part, its blank line never: a client
				// must drop the event, resume from the one before, and get it again.
				_, _ = c.Write(chunk[:min(len(chunk), upto+len(`data: {"id"`))])
				p.mu.Lock()
				p.n++
				p.mu.Unlock()
				return
			}
			if _, err := c.Write(chunk[:upto]); err != nil {
				return
			}
			chunk = chunk[upto:]
			window = window[:0]
		}
		if err != nil {
			return
		}
	}
}
