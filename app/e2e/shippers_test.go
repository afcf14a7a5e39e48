package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
)

// The log shippers of the bulk API's contract, run as they run in production: rsyslog's
// omelasticsearch reading a file with imfile, and syslog-ng's elasticsearch-http() (from its
// configuration library, over its http() destination) following a file. Each is a private
// process with its own configuration, PID file and state under the test's directory, never the
// system's log daemon, and is stopped when the test ends. .ci/run installs rsyslog and unpacks
// syslog-ng into /opt/syslog-ng (Debian's packages of the two conflict).
//
// Each reads shipperLines lines; the bad ones carry a level of 40 characters (the contract allows
// 32), which the shipper's template copies into the document's level, so the bulk API must refuse
// exactly those items with a 400 each and store every other line once. The shipper's own record
// of each refusal is the observable: rsyslog's errorfile (one request/reply pair per failed
// item) and syslog-ng's trace of what curl sent and received; the service's refused-items
// counter must agree. Both configurations are README.md's, read from it.

const shipperLines = 3000

// shipperBad are the indexes of the bad lines: the first batch, a middle one, the last line.
var shipperBad = []int{7, 1500, shipperLines - 1}

var shipperLevels = []string{"info", "warn", "error", "debug"}

// shipperLine is line i of the file: "<level> <message>", the level the message's first word.
func shipperLine(i int) string {
	if slices.Contains(shipperBad, i) {
		return strings.Repeat("x", 40) + " bad line " + strconv.Itoa(i)
	}
	return fmt.Sprintf("%s shipped line %d of %d user=u%d", shipperLevels[i%len(shipperLevels)], i, shipperLines, i%7)
}

// shipper is one log shipper under test.
type shipper struct {
	name string
	// find returns how to run the shipper, or why it cannot be run here.
	find func() (shipperRun, error)
	// start writes the shipper's configuration for sending file to base (the service's URL) as
	// project with key, and starts it in dir.
	start func(t *testing.T, run shipperRun, dir, file, base, project, key string) *shipperProc
	// refused reads the items the shipper saw refused, by message, from its output in dir.
	refused func(t *testing.T, dir string) (map[string]refusal, error)
}

// shipperRun is how to run a shipper found on this machine.
type shipperRun struct {
	bin  string
	args []string // before the test's own
	env  []string // added to the test's environment
	// root is where an unpacked syslog-ng lives ("" when installed).
	root string
}

// refusal is one item the shipper was answered a failure for.
type refusal struct {
	status int
	reply  string
}

func TestShippers(t *testing.T) {
	for _, sh := range []shipper{rsyslogShipper, syslogNGShipper} {
		t.Run(sh.name, func(t *testing.T) {
			if testing.Short() {
				t.Skip("shipper tests skipped under -short (make quick); make test runs them")
			}
			run, err := sh.find()
			if err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is required under CI=true (.ci/run installs it): %v", sh.name, err)
				}
				t.Skipf("!!! %s is not installed (.ci/run installs it), its bulk API test is SKIPPED: %v", sh.name, err)
			}
			forEachStore(t, func(t *testing.T, open storeOpener) { testShipper(t, open, sh, run) })
		})
	}
}

func testShipper(t *testing.T, open storeOpener, sh shipper, run shipperRun) {
	st := open(t)
	p, _ := seedProjects(t, st)
	const key, admin = "shipper-key", "admin-key"
	cfg := server.DefaultConfig()
	cfg.APIKeys = apitest.KeyLine("project "+p.ID, key) + "," + apitest.KeyLine("admin", admin)
	log := &apitest.SyncBuffer{}
	_, srv := servetest.Serve(t, cfg, st, slog.New(slog.NewTextHandler(log, nil)))
	client, err := rest.NewClientWithResponses(srv.URL, rest.WithHTTPClient(&http.Client{Transport: apitest.NewTransport(t, nil)}),
		rest.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+key)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "app.log")
	var text strings.Builder
	for i := range shipperLines {
		text.WriteString(shipperLine(i) + "\n")
	}
	if err := os.WriteFile(file, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	proc := sh.start(t, run, dir, file, srv.URL, p.ID, key)

	// Delivered: every good line counted and every bad one reported by the shipper.
	good := shipperLines - len(shipperBad)
	count := func() int {
		r, err := client.LogStatsWithResponse(t.Context(), &rest.LogStatsParams{ProjectId: p.ID, By: ptr(rest.LogStatsParamsBy("none")),
			StartTime: started.Add(-time.Hour).UnixMilli(), EndTime: time.Now().Add(time.Hour).UnixMilli(), Step: 3_600_000})
		if err != nil || r.JSON200 == nil {
			t.Fatalf("stats: %v %d %s", err, r.StatusCode(), r.Body)
		}
		return int(r.JSON200.Total)
	}
	var (
		n       int
		refused map[string]refusal
		readErr error
	)
	deadline := time.Now().Add(90 * time.Second)
	for {
		n = count()
		refused, readErr = sh.refused(t, dir)
		if n >= good && readErr == nil && len(refused) >= len(shipperBad) {
			break
		}
		if time.Now().After(deadline) || proc.exited() {
			t.Fatalf("%s: after %v, %d of %d good lines stored and %d of %d bad ones reported (%v)\n%s\nserver log:\n%s",
				sh.name, time.Since(started).Round(time.Millisecond), n, good, len(refused), len(shipperBad), readErr, proc.output(), log)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("%s: %d lines delivered in %v", sh.name, shipperLines, time.Since(started).Round(time.Millisecond))
	// Nothing more can arrive once the shipper has stopped: then count exactly.
	proc.stop(t)
	if n = count(); n != good {
		t.Errorf("%d entries stored, want %d (every good line once)", n, good)
	}
	if refused, readErr = sh.refused(t, dir); readErr != nil {
		t.Fatalf("%s's record of refused items: %v", sh.name, readErr)
	}

	// The service's own count of the items it refused, beside the shipper's.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	resp, body := roundTrip(t, http.DefaultClient, req)
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics = %d %s", resp.StatusCode, body)
	}
	for name, want := range map[string]int{"obsvc_es_bulk_items_stored_total": good, "obsvc_es_bulk_items_refused_total": len(shipperBad)} {
		if got := sample(t, string(body), name, nil); got != float64(want) {
			t.Errorf("%s = %v, want %d", name, got, want)
		}
	}

	lr, err := client.ListLogsWithResponse(t.Context(), &rest.ListLogsParams{ProjectId: p.ID, Limit: ptr(int32(10_000))})
	if err != nil || lr.JSON200 == nil {
		t.Fatalf("list: %v %d %s", err, lr.StatusCode(), lr.Body)
	}
	stored := map[string]int{}
	for _, e := range *lr.JSON200 {
		stored[e.Message]++
		if i := lineIndex(e.Message); i < 0 || e.Level != shipperLevels[i%len(shipperLevels)] {
			t.Errorf("entry %q has level %q", e.Message, e.Level)
		}
	}
	for i := range shipperLines {
		line := shipperLine(i)
		want := 1
		if slices.Contains(shipperBad, i) {
			want = 0
			r, ok := refused[line]
			switch {
			case !ok:
				t.Errorf("bad line %d was not reported refused", i)
			case r.status != 400 || !strings.Contains(r.reply, "level"):
				t.Errorf("bad line %d: status %d, reply %s; want 400 naming the level", i, r.status, r.reply)
			}
		}
		if stored[line] != want {
			t.Errorf("line %d (%.40q) stored %d times, want %d", i, line, stored[line], want)
		}
	}
	for msg, r := range refused {
		if i := lineIndex(msg); i < 0 || !slices.Contains(shipperBad, i) {
			t.Errorf("a good line was refused: %q: %d %s", msg, r.status, r.reply)
		}
	}
}

// lineIndex is the index of the line whose message is msg, or -1.
func lineIndex(msg string) int {
	m := shipperLineIndex.FindStringSubmatch(msg)
	if m == nil {
		return -1
	}
	i, _ := strconv.Atoi(m[1])
	return i
}

var shipperLineIndex = regexp.MustCompile(`line (\d+)`)

// shipperProc is a running shipper whose output goes to a file.
type shipperProc struct {
	cmd  *exec.Cmd
	out  string
	done chan struct{}
	err  error
}

// startShipper starts cmd with its output in dir/name.out; the test's end stops it.
func startShipper(t *testing.T, cmd *exec.Cmd, dir, name string) *shipperProc {
	t.Helper()
	p := &shipperProc{cmd: cmd, out: filepath.Join(dir, name+".out"), done: make(chan struct{})}
	f, err := os.Create(p.out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = dir
	// Killed with the test process, should it die before its cleanup stops the shipper.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd, err)
	}
	go func() {
		defer close(p.done)
		p.err = cmd.Wait()
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

func (p *shipperProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the shipper, SIGTERM first, and waits for it.
func (p *shipperProc) stop(t *testing.T) {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Errorf("%s did not stop on SIGTERM within 10s; killed", p.cmd.Path)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// output is the shipper's output and how it ended, for a failure's message.
func (p *shipperProc) output() string {
	b, _ := os.ReadFile(p.out)
	if len(b) > 8<<10 {
		b = append([]byte("...\n"), b[len(b)-8<<10:]...)
	}
	state := "running"
	if p.exited() {
		state = fmt.Sprintf("exited: %v", p.err)
	}
	return fmt.Sprintf("%s (%s), its output:\n%s", p.cmd.Path, state, b)
}

// writeConfig writes text to dir/name and returns its path.
func writeConfig(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// hostPort splits the service's URL.
func hostPort(t *testing.T, base string) (host, port string) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname(), u.Port()
}

// shipperMarker precedes, in README.md, the fenced configuration of a shipper named after it.
const shipperMarker = "<!-- shipper:"

// readmeShipperConfig is README.md's configuration of the shipper name with the placeholders it
// names replaced by the test's (old, new pairs): the test runs what the README shows.
func readmeShipperConfig(t *testing.T, name string, replace ...string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), shipperMarker+name+" -->\n```\n")
	if !ok {
		t.Fatalf("README.md has no %s%s --> followed by a fenced block", shipperMarker, name)
	}
	block, _, ok = strings.Cut(block, "\n```\n")
	if !ok {
		t.Fatalf("README.md: the %s block does not end", name)
	}
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(block, replace[i]) {
			t.Fatalf("README.md's %s block no longer holds %q", name, replace[i])
		}
		block = strings.ReplaceAll(block, replace[i], replace[i+1])
	}
	return block + "\n"
}

var rsyslogShipper = shipper{
	name: "rsyslog",
	find: func() (shipperRun, error) {
		bin, err := exec.LookPath("rsyslogd")
		if err != nil {
			return shipperRun{}, err
		}
		if m, _ := filepath.Glob("/usr/lib/*/rsyslog/omelasticsearch.so"); len(m) == 0 {
			return shipperRun{}, errors.New("no omelasticsearch module (Debian's rsyslog-elasticsearch)")
		}
		return shipperRun{bin: bin}, nil
	},
	start: func(t *testing.T, run shipperRun, dir, file, base, project, key string) *shipperProc {
		host, port := hostPort(t, base)
		if err := os.Mkdir(filepath.Join(dir, "work"), 0o755); err != nil {
			t.Fatal(err)
		}
		// README's configuration, with a state directory of its own (imfile's positions) and
		// rsyslog's own messages, errors included, in a file.
		conf := writeConfig(t, dir, "rsyslog.conf", fmt.Sprintf(`global(workDirectory=%q)
if $programname == "rsyslogd" then action(type="omfile" file=%q)
`, filepath.Join(dir, "work"), filepath.Join(dir, "rsyslogd.log"))+readmeShipperConfig(t, "rsyslog",
			"/var/log/app.log", file, "/var/log/obsvc-refused.json", filepath.Join(dir, "es-errors.json"),
			`"OBSVC_HOST"`, strconv.Quote(host), `"8080"`, strconv.Quote(port), "PROJECT_ID", project, "OBSVC_KEY", key))
		// -n: in the foreground; -i: its own PID file; -f: only this configuration.
		return startShipper(t, exec.Command(run.bin, "-n", "-f", conf, "-i", filepath.Join(dir, "rsyslogd.pid")), dir, "rsyslogd")
	},
	refused: func(t *testing.T, dir string) (map[string]refusal, error) {
		b, err := os.ReadFile(filepath.Join(dir, "es-errors.json"))
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		// One JSON object per failed request: {"url": ..., "response": [{"request": action and
		// document, "reply": the item's answer}, ...]}.
		out := map[string]refusal{}
		dec := json.NewDecoder(bytes.NewReader(b))
		for {
			var rec struct {
				Response []struct{ Request, Reply string }
			}
			if err := dec.Decode(&rec); err != nil {
				if errors.Is(err, io.EOF) {
					return out, nil
				}
				return out, fmt.Errorf("errorfile: %w", err)
			}
			for _, r := range rec.Response {
				doc, err := bulkDoc(r.Request)
				if err != nil {
					return out, err
				}
				var reply struct{ Status int }
				if err := json.Unmarshal([]byte(r.Reply), &reply); err != nil {
					return out, fmt.Errorf("errorfile reply %q: %w", r.Reply, err)
				}
				out[doc.Message] = refusal{status: reply.Status, reply: r.Reply}
			}
		}
	},
}

// bulkDoc is the document of an action/document pair as a shipper sent it.
func bulkDoc(pair string) (struct{ Message string }, error) {
	var doc struct{ Message string }
	lines := strings.Split(strings.TrimSpace(pair), "\n")
	if len(lines) != 2 {
		return doc, fmt.Errorf("not an action and a document: %q", pair)
	}
	err := json.Unmarshal([]byte(lines[1]), &doc)
	return doc, err
}

// syslogNGRoot is where .ci/run unpacks syslog-ng; SYSLOG_NG_ROOT names another.
func syslogNGRoot() string {
	if r := os.Getenv("SYSLOG_NG_ROOT"); r != "" {
		return r
	}
	return "/opt/syslog-ng"
}

var syslogNGShipper = shipper{
	name: "syslog-ng",
	find: func() (shipperRun, error) {
		root := syslogNGRoot()
		bin := filepath.Join(root, "usr/sbin/syslog-ng")
		if _, err := os.Stat(bin); err != nil {
			// Installed rather than unpacked.
			if bin, err2 := exec.LookPath("syslog-ng"); err2 == nil {
				return shipperRun{bin: bin}, nil
			}
			return shipperRun{}, err
		}
		mods, _ := filepath.Glob(filepath.Join(root, "usr/lib/syslog-ng/3.*/libhttp.so"))
		if len(mods) == 0 {
			return shipperRun{}, fmt.Errorf("no http module under %s (Debian's syslog-ng-mod-http)", root)
		}
		return shipperRun{bin: bin, root: root,
			args: []string{"--module-path=" + filepath.Dir(mods[0])},
			env:  []string{"LD_LIBRARY_PATH=" + filepath.Join(root, "usr/lib/syslog-ng")},
		}, nil
	},
	start: func(t *testing.T, run shipperRun, dir, file, base, project, key string) *shipperProc {
		// README's configuration, in batches of 20 lines (100 unless set): syslog-ng writes a trace
		// message longer than 8 KiB in pieces that other threads' messages can come between.
		conf := readmeShipperConfig(t, "syslog-ng", "/var/log/app.log", file, "http://OBSVC_HOST:8080", base,
			"PROJECT_ID", project, "OBSVC_KEY", key, `type("")`, `type("") batch-lines(20)`)
		if run.root != "" {
			// An unpacked syslog-ng: its configuration library is where it was unpacked.
			conf = strings.Replace(conf, "\n", fmt.Sprintf("\n@define include-path %q\n", filepath.Join(run.root, "etc/syslog-ng")+":"+filepath.Join(run.root, "usr/share/syslog-ng/include")), 1)
		}
		conf = writeConfig(t, dir, "syslog-ng.conf", conf)
		// -F: in the foreground; its own persist file, control socket and PID file; -t: trace,
		// which logs every request and answer curl sends and receives (the items' statuses).
		args := append(slices.Clone(run.args), "-F", "--no-caps", "-e", "-t", "-f", conf,
			"-R", filepath.Join(dir, "syslog-ng.persist"), "-c", filepath.Join(dir, "syslog-ng.ctl"), "-p", filepath.Join(dir, "syslog-ng.pid"))
		cmd := exec.Command(run.bin, args...)
		cmd.Env = append(os.Environ(), run.env...)
		return startShipper(t, cmd, dir, "syslog-ng")
	},
	refused: func(t *testing.T, dir string) (map[string]refusal, error) {
		return syslogNGRefusals(filepath.Join(dir, "syslog-ng.out"))
	},
}

// syslogNGTrace is one line of curl's trace in syslog-ng's output: what a worker sent (data_out)
// or received (data_in), newlines shown as dots.
var syslogNGTrace = regexp.MustCompile(`cURL debug; worker='(\d+)', type='(data_out|data_in)', data='(.*)'$`)

// syslogNGRefusals pairs each bulk answer in syslog-ng's trace with the request its worker sent
// before it, and returns the items answered other than 2xx, by message. An exchange whose answer
// is not whole yet (the last of a worker, still arriving) is left for the next read.
func syslogNGRefusals(path string) (map[string]refusal, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type exchange struct{ sent, got string }
	var done []exchange
	open := map[string]*exchange{} // by worker
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		m := syslogNGTrace.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		worker, kind, data := m[1], m[2], m[3]
		x := open[worker]
		if kind == "data_out" {
			if x != nil && x.got != "" { // the worker's next request: the last one is answered
				done = append(done, *x)
				x = nil
			}
			if x == nil {
				x = &exchange{}
				open[worker] = x
			}
			x.sent += data
			continue
		}
		if x == nil {
			return nil, fmt.Errorf("an answer without a request in the trace: %.300s", data)
		}
		x.got += data
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := map[string]refusal{}
	last := map[*exchange]bool{}
	for _, x := range open {
		done = append(done, *x)
		last[&done[len(done)-1]] = true
	}
	for i := range done {
		x := &done[i]
		var answer struct {
			Items []map[string]json.RawMessage
		}
		if err := json.Unmarshal([]byte(unchunk(x.got)), &answer); err != nil {
			if last[x] {
				continue // still arriving
			}
			return out, fmt.Errorf("an answer in the trace: %w: %.300s", err, x.got)
		}
		// The body's lines are action, document, action, ... with each newline shown as a dot.
		lines := strings.Split(strings.ReplaceAll(strings.TrimSuffix(x.sent, "."), "}.{", "}\n{"), "\n")
		if len(lines) != 2*len(answer.Items) {
			return out, fmt.Errorf("a request of %d lines answered with %d items: %.300s", len(lines), len(answer.Items), x.sent)
		}
		for i, item := range answer.Items {
			for _, v := range item {
				var res struct{ Status int }
				if err := json.Unmarshal(v, &res); err != nil {
					return out, err
				}
				if res.Status >= 200 && res.Status < 300 {
					continue
				}
				var doc struct{ Message string }
				if err := json.Unmarshal([]byte(lines[2*i+1]), &doc); err != nil {
					return out, fmt.Errorf("a document in the trace: %w: %q", err, lines[2*i+1])
				}
				out[doc.Message] = refusal{status: res.Status, reply: string(v)}
			}
		}
	}
	return out, nil
}

// unchunk is the body of an answer curl's trace shows as received: when it came in chunks
// (HTTP/1.1 chunked transfer coding, its CRLFs shown as two dots), their data joined.
func unchunk(s string) string {
	var b strings.Builder
	rest := s
	for {
		size, after, ok := strings.Cut(rest, "..")
		n, err := strconv.ParseUint(size, 16, 32)
		if !ok || err != nil || len(after) < int(n)+2 {
			return s // not chunked (or not whole): as it is
		}
		if n == 0 {
			return b.String()
		}
		b.WriteString(after[:n])
		rest = after[n+2:]
	}
}
