package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README's tour is the part of it a newcomer pastes. TestReadmeTour runs it, so it cannot drift
// from the service: every ```sh block between tourBegin and tourEnd, in order, in one bash process
// under `set -euo pipefail`, against two real server processes (the one `make run` starts, and the
// keyed one the block after tourSecondTerminal starts), each block's output checked against its
// `# => ` lines.
const (
	tourBegin          = "<!-- tour:begin -->"
	tourEnd            = "<!-- tour:end -->"
	tourSecondTerminal = "<!-- tour:second-terminal -->"
	tourExpectPrefix   = "# => "
	tourOpenURL        = "http://localhost:8080" // what `make run` serves, as the tour names it
	tourKeyedURL       = "http://localhost:8081" // the second instance, with keys
	tourStepMarker     = "@@tour-step"
)

// tourStep is one ```sh block of the tour: its text and the lines its output must contain.
type tourStep struct {
	line   int // in README.md, for messages
	code   string
	expect []string
}

// tourReadme is the tour as README.md writes it.
type tourReadme struct {
	steps []tourStep
	// keyedStart is the block that starts the keyed instance in a terminal of its own; the test
	// starts that instance itself, with the API_KEYS the block gives.
	keyedStart string
}

func TestReadmeTour(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "sha256sum", "gzip", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("the README tour needs %s: %v", tool, err)
			}
			t.Skipf("SKIPPED LOUDLY: the README tour needs %s: %v", tool, err)
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	tour, err := tourParse(string(readme))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	keys := tourKeys(t, tour.keyedStart)

	dir := t.TempDir()
	bin := filepath.Join(dir, "obsvc")
	build := exec.Command("go", "build", "-o", bin, "example.com/obsvc/app")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	open := tourStartServer(t, bin, filepath.Join(dir, "open"), "")
	keyed := tourStartServer(t, bin, filepath.Join(dir, "keyed"), keys)

	// The Go OpenTelemetry step writes a program under the module (go run needs its go.mod); remove
	// it afterwards unless it was there before.
	scratch := filepath.Join(root, ".artifacts", "otel")
	if _, err := os.Stat(scratch); errors.Is(err, os.ErrNotExist) {
		t.Cleanup(func() { _ = os.RemoveAll(scratch) })
	}

	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for i, s := range tour.steps {
		code := strings.ReplaceAll(s.code, tourOpenURL, open)
		code = strings.ReplaceAll(code, tourKeyedURL, keyed)
		if strings.Contains(code, "localhost:808") {
			t.Fatalf("README.md:%d: a tour step names a port the test does not serve:\n%s", s.line, s.code)
		}
		fmt.Fprintf(&script, "printf '\\n%s %d@@\\n'\n%s\n", tourStepMarker, i, code)
	}
	scriptPath := filepath.Join(dir, "tour.sh")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", scriptPath)
	cmd.Dir = root
	cmd.Env = tourEnv(nil)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	outputs := tourSplit(stdout.String())
	for i, s := range tour.steps {
		got, ran := outputs[i]
		if !ran {
			t.Errorf("README.md:%d: step %d did not run (an earlier step failed)", s.line, i+1)
			continue
		}
		for _, want := range s.expect {
			if !strings.Contains(got, want) {
				t.Errorf("README.md:%d: step %d printed no %q; it printed:\n%s", s.line, i+1, want, got)
			}
		}
	}
	if runErr != nil {
		t.Errorf("the tour failed: %v\nstderr:\n%s\nstdout:\n%s", runErr, stderr.String(), stdout.String())
	}
	if t.Failed() {
		t.Logf("script:\n%s", script.String())
	}
}

// tourParse reads the tour's blocks from readme.
func tourParse(readme string) (tourReadme, error) {
	var tour tourReadme
	begin := strings.Index(readme, tourBegin)
	end := strings.Index(readme, tourEnd)
	if begin < 0 || end < begin {
		return tour, fmt.Errorf("no %s … %s section", tourBegin, tourEnd)
	}
	firstLine := strings.Count(readme[:begin], "\n") + 1
	sc := bufio.NewScanner(strings.NewReader(readme[begin:end]))
	var (
		in, second bool
		cur        tourStep
		code       strings.Builder
	)
	for n := firstLine; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, "```sh"):
			in, cur = true, tourStep{line: n + 1}
			code.Reset()
		case !in && strings.TrimSpace(line) == tourSecondTerminal:
			second = true
		case !in && strings.TrimSpace(line) != "":
			second = false
		case in && strings.TrimSpace(line) == "```":
			in = false
			cur.code = code.String()
			if second {
				if tour.keyedStart != "" {
					return tour, fmt.Errorf("line %d: a second %s block", cur.line, tourSecondTerminal)
				}
				tour.keyedStart, second = cur.code, false
				continue
			}
			if len(cur.expect) == 0 {
				return tour, fmt.Errorf("line %d: a tour block without a %q line", cur.line, tourExpectPrefix)
			}
			tour.steps = append(tour.steps, cur)
		case in:
			code.WriteString(line + "\n")
			if e, ok := strings.CutPrefix(strings.TrimSpace(line), tourExpectPrefix); ok {
				cur.expect = append(cur.expect, e)
			}
		}
	}
	switch {
	case in:
		return tour, errors.New("the tour ends inside a code block")
	case len(tour.steps) == 0:
		return tour, errors.New("the tour has no ```sh blocks")
	case tour.keyedStart == "":
		return tour, fmt.Errorf("the tour has no %s block", tourSecondTerminal)
	}
	return tour, sc.Err()
}

// tourKeys evaluates the API_KEYS="…" of the block that starts the keyed instance, with bash, as a
// reader's shell would.
func tourKeys(t *testing.T, block string) string {
	t.Helper()
	m := regexp.MustCompile(`API_KEYS="([^"]+)"`).FindStringSubmatch(block)
	if m == nil {
		t.Fatalf("the keyed instance's block sets no API_KEYS=\"…\":\n%s", block)
	}
	out, err := exec.Command("bash", "-c", `printf %s "`+m[1]+`"`).Output()
	if err != nil {
		t.Fatalf("evaluating API_KEYS=%q: %v", m[1], err)
	}
	return string(out)
}

// tourEnv is the environment without any setting of the service or of OpenTelemetry's exporters,
// plus extra.
func tourEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "OTEL_"):
		case name == "ADDR", name == "DATABASE_URL", name == "API_KEYS", name == "API_KEYS_FILE",
			name == "ALLOW_OPEN_NETWORK", name == "METRICS_ADDR", name == "PPROF_ADDR":
		default:
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// tourStartServer starts bin on a free loopback port with its SQLite store under dir (and apiKeys,
// when not empty), waits until it is ready, and stops it with SIGTERM when the test ends. It
// returns the base URL.
func tourStartServer(t *testing.T, bin, dir, apiKeys string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	var extra []string
	if apiKeys != "" {
		extra = append(extra, "API_KEYS="+apiKeys)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:"+strconv.Itoa(port), "-database-url", "sqlite:"+filepath.Join(dir, "obsvc.db"))
	cmd.Env = tourEnv(extra)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	base := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case err := <-exited:
			exited <- err
			logs, _ := os.ReadFile(logPath)
			t.Fatalf("the server exited before it was ready: %v\n%s", err, logs)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			logs, _ := os.ReadFile(logPath)
			t.Fatalf("the server was not ready within a minute:\n%s", logs)
		}
	}
}

// tourSplit cuts the script's output at the step markers: step index → what it printed.
func tourSplit(out string) map[int]string {
	marker := regexp.MustCompile(`(?m)^` + tourStepMarker + ` (\d+)@@\n`)
	outputs := map[int]string{}
	locs := marker.FindAllStringSubmatchIndex(out, -1)
	for i, loc := range locs {
		step, _ := strconv.Atoi(out[loc[2]:loc[3]])
		stop := len(out)
		if i+1 < len(locs) {
			stop = locs[i+1][0]
		}
		outputs[step] = out[loc[1]:stop]
	}
	return outputs
}
