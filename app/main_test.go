package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"example.com/obsvc/app/server"
)

// syncBuffer is a bytes.Buffer safe for the server's log writes and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func getenvFrom(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// listeningAddr waits for the "listening" log line and returns its address.
func listeningAddr(t *testing.T, logs *syncBuffer, done <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
				return line.Addr
			}
		}
		select {
		case err := <-done:
			t.Fatalf("run returned before listening: %v\nlogs:\n%s", err, logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no listening line in the logs:\n%s", logs)
	return ""
}

func TestRunServesBothAPIsAndStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, getenvFrom(map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "x.db")}), &stdout, &stderr)
	}()
	base := "http://" + listeningAddr(t, &stdout, done)

	resp, err := http.Post(base+"/projects", "application/json", strings.NewReader(`{"name":"boot"}`))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("POST /projects = %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Post(base+"/twirp/rpc.example.haberdasher.Haberdasher/MakeHat", "application/json", strings.NewReader(`{"inches":3}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("MakeHat = %v %v", resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"inches":3`) {
		t.Errorf("MakeHat body %s", body)
	}

	cancel() // what SIGINT/SIGTERM do through signal.NotifyContext
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after shutdown = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	if !strings.Contains(stdout.String(), `"msg":"stopped"`) {
		t.Errorf("no stopped line in logs:\n%s", stdout.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "x.db")); err != nil {
		t.Errorf("the sqlite:PATH store was not created: %v", err)
	}
}

// The log is buffered: a clean shutdown must still write one access log line per request, the
// last ones included, before run returns.
func TestCleanShutdownWritesEveryAccessLogLine(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, getenvFrom(map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "x.db")}), &stdout, &stderr)
	}()
	base := "http://" + listeningAddr(t, &stdout, done)
	const requests = 200
	for i := range requests {
		req, _ := http.NewRequest("GET", base+"/projects/"+server.NewID(), nil)
		req.Header.Set("X-Request-Id", fmt.Sprintf("line-%d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(stdout.String(), "\n") {
		var l struct {
			Msg       string
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "request" {
			seen[l.RequestID] = true
		}
	}
	for i := range requests {
		if !seen[fmt.Sprintf("line-%d", i)] {
			t.Fatalf("no access log line for request %d of %d after a clean shutdown (%d lines)", i, requests, len(seen))
		}
	}
}

func TestRunDefaultStoreIsCreatedUnderData(t *testing.T) {
	t.Chdir(t.TempDir())
	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, getenvFrom(nil), &stdout, &stderr) }()
	listeningAddr(t, &stdout, done)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(defaultSQLitePath); err != nil {
		t.Fatalf("default store not created at %s: %v", defaultSQLitePath, err)
	}
}

func TestHelpListsEverySetting(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"-h"}, getenvFrom(nil), &stdout, &stderr); err != nil {
		t.Fatalf("-h = %v", err)
	}
	c := defaultConfig()
	c.flags().VisitAll(func(f *flag.Flag) {
		if !strings.Contains(stderr.String(), "-"+f.Name) || !strings.Contains(stderr.String(), envName(f.Name)) {
			t.Errorf("-h does not list -%s / %s:\n%s", f.Name, envName(f.Name), stderr.String())
		}
	})
	if !strings.Contains(stderr.String(), `(default ":8080")`) {
		t.Errorf("-h does not show the default address:\n%s", stderr.String())
	}
}

func TestInvalidConfigFailsWithAClearMessage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"bad duration env", nil, map[string]string{"SHUTDOWN_TIMEOUT": "soon"}, "SHUTDOWN_TIMEOUT"},
		{"bad number flag", []string{"-max-body-bytes", "lots"}, nil, "max-body-bytes"},
		{"zero batch", nil, map[string]string{"MAX_BATCH_ENTRIES": "0"}, "MAX_BATCH_ENTRIES"},
		{"bad log level", nil, map[string]string{"LOG_LEVEL": "loud"}, "LOG_LEVEL"},
		{"unknown scheme", nil, map[string]string{"DATABASE_URL": "mysql://x"}, "DATABASE_URL"},
		{"empty sqlite path", nil, map[string]string{"DATABASE_URL": "sqlite:"}, "DATABASE_URL"},
		{"unknown flag", []string{"-colour"}, nil, "colour"},
		{"stray argument", []string{"serve"}, nil, "serve"},
		{"address in use or bad", []string{"-addr", "256.0.0.1:1", "-allow-open-network"}, nil, "listen"},
		{"open on a non-loopback address", []string{"-addr", "0.0.0.0:0"}, nil, "ALLOW_OPEN_NETWORK"},
		{"open on a host name", nil, map[string]string{"ADDR": "example.com:0"}, "not a loopback address"},
		{"key of the empty secret", nil, map[string]string{"API_KEYS": "admin sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}, "empty secret"},
		{"one digest twice", nil, map[string]string{"API_KEYS": keyLine("admin", "s") + "\n" + keyLine("project "+server.NewID(), "s")}, "same digest"},
		{"bad allow-open value", nil, map[string]string{"ALLOW_OPEN_NETWORK": "maybe"}, "ALLOW_OPEN_NETWORK"},
		{"zero twirp body", nil, map[string]string{"TWIRP_MAX_BODY_BYTES": "0"}, "TWIRP_MAX_BODY_BYTES"},
		{"profiles on every interface", nil, map[string]string{"PPROF_ADDR": ":6060"}, "PPROF_ADDR"},
		{"profiles on a public address", []string{"-pprof-addr", "0.0.0.0:6060"}, nil, "PPROF_ADDR"},
		{"negative tail coalesce", nil, map[string]string{"TAIL_COALESCE": "-1ms"}, "TAIL_COALESCE"},
		{"tail coalesce past the heartbeat", nil, map[string]string{"TAIL_COALESCE": "20s"}, "TAIL_COALESCE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), c.args, getenvFrom(c.env), &stdout, &stderr)
			if err == nil {
				t.Fatal("run accepted an invalid configuration")
			}
			if !strings.Contains(err.Error()+stderr.String(), c.want) {
				t.Errorf("error %q (stderr %q) does not name %q", err, stderr.String(), c.want)
			}
		})
	}
}

func TestFlagsWinOverEnvironment(t *testing.T) {
	var out bytes.Buffer
	c, err := parseConfig([]string{"-addr", ":9000"}, getenvFrom(map[string]string{"ADDR": ":7000", "MAX_BODY_BYTES": "123"}), &out)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":9000" || c.MaxBodyBytes != 123 {
		t.Fatalf("config = %+v, want flag addr :9000 and env body limit 123", c)
	}
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}

func TestOpenServiceListensOnLoopbackAndAnswersLoopbackNamesOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", ":0"}, getenvFrom(map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "x.db")}), &stdout, &stderr)
	}()
	addr := listeningAddr(t, &stdout, done)
	host, port, _ := net.SplitHostPort(addr)
	if host != "127.0.0.1" {
		t.Fatalf("without keys, ADDR :0 listened on %s, want 127.0.0.1", addr)
	}
	for _, c := range []struct {
		host string
		want int
	}{{"localhost:" + port, 200}, {"127.0.0.1:" + port, 200}, {"[::1]:" + port, 200}, {"rebound.example:" + port, 403}, {"rebound.example", 403}} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+addr+"/projects", nil)
		req.Host = c.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Host %q: %d %s, want %d", c.host, resp.StatusCode, body, c.want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
