package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// bulkTime is a row's time as the documents of the bulk API carry it.
func bulkTime(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

// BatchBulk is rows as the body of an Elasticsearch bulk request into index (the project): a
// create action and a document per row, the document as a shipper writes it (ECS field names),
// mapping to the entries BatchJSON holds.
func BatchBulk(index string, rows []Row) []byte {
	var buf bytes.Buffer
	action := fmt.Sprintf(`{"create":{"_index":%q}}`, index)
	for _, r := range rows {
		buf.WriteString(action)
		fmt.Fprintf(&buf, "\n{\"@timestamp\":%q,\"log\":{\"level\":%q},\"message\":%q,\"service\":{\"name\":%q},\"user\":{\"id\":%q}}\n",
			bulkTime(r.Time), r.Level, r.Message, r.Subject, r.User)
	}
	return buf.Bytes()
}

// bulkAnswer is the part of a bulk answer a benchmark checks: every item stored.
type bulkAnswer struct {
	Errors bool              `json:"errors"`
	Items  []json.RawMessage `json:"items"`
}

// postBulk sends one bulk request to url (a full _bulk URL) and returns its answer, which must
// be a 200; checkBulk checks it afterwards, outside the timed part, as postBatch's answer is
// not read: the figures are the servers', not a client's decoding of 1,000 items.
func postBulk(client *http.Client, url string, body []byte) ([]byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("POST %s = %d %.300s", url, resp.StatusCode, b)
	}
	return b, nil
}

// checkBulk checks a bulk answer of url: every one of items documents taken.
func checkBulk(url string, answer []byte, items int) error {
	var a bulkAnswer
	if err := json.Unmarshal(answer, &a); err != nil {
		return fmt.Errorf("POST %s: %w: %.300s", url, err, answer)
	}
	if a.Errors || len(a.Items) != items {
		return fmt.Errorf("POST %s: errors %v, %d items of %d: %.300s", url, a.Errors, len(a.Items), items, answer)
	}
	return nil
}

// BenchmarkBulkIngestPostgres: POST /_bulk (1,000 create actions per request, 2 clients) beside
// POST /logs of the same entries, same server, same run, and beside VictoriaLogs'
// /insert/elasticsearch/_bulk of the same bodies when its binary is found (VICTORIALOGS, else
// victoria-logs on PATH). Reported: rows per second of each, bulk/json (target >= 0.9) and
// bulk/victorialogs. Each of our requests is committed durably before it is answered;
// VictoriaLogs answers once it has buffered the rows.
func BenchmarkBulkIngestPostgres(b *testing.B) {
	st, _ := benchPostgres(b)
	bulkIngestVersus(b, newBenchEnv(b, st, nil))
}

// BenchmarkBulkIngestSQLite is BenchmarkBulkIngestPostgres on SQLite.
func BenchmarkBulkIngestSQLite(b *testing.B) {
	bulkIngestVersus(b, newBenchEnv(b, benchSQLite(b), nil))
}

func bulkIngestVersus(b *testing.B, e *benchEnv) {
	b.Helper()
	vl := startVictoriaLogs(b)
	batches := max(b.N, 4) * 4
	jsonBodies, bulkBodies := make([][]byte, batches), make([][]byte, batches)
	for i := range batches {
		// Different rows for each, so neither is answered from what the other stored.
		jsonBodies[i] = BatchJSON(e.project, Batch(2*i, createBatch))
		bulkBodies[i] = BatchBulk(e.project, Batch(2*i+1, createBatch))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: createClients}}
	vlURL := vl + "/insert/elasticsearch/_bulk?_msg_field=message&_time_field=@timestamp&_stream_fields=service.name"
	ourAnswers, vlAnswers := make([][]byte, batches), make([][]byte, batches)
	// In four rounds of a quarter of the batches each, ours in the order POST /logs then bulk,
	// then bulk then POST /logs, and so on, so that neither gains from going first (a colder
	// cache) or last (a larger table: an insert costs more as the table grows), nor from a
	// checkpoint or a vacuum that happens to fall on the other's turn.
	const rounds = 4
	var jsonTook, bulkTook, vlTook time.Duration
	b.ResetTimer()
	for round := range rounds {
		from, to := batches*round/rounds, batches*(round+1)/rounds
		n := to - from
		postJSON := func() {
			jsonTook += runConcurrent(b, createClients, n, func(i int) error { return postBatch(client, e.url, jsonBodies[from+i]) })
		}
		postOurBulk := func() {
			bulkTook += runConcurrent(b, createClients, n, func(i int) (err error) {
				ourAnswers[from+i], err = postBulk(client, e.url+"/_bulk", bulkBodies[from+i])
				return err
			})
		}
		if round%2 == 0 {
			postJSON()
			postOurBulk()
		} else {
			postOurBulk()
			postJSON()
		}
		if vl != "" {
			vlTook += runConcurrent(b, createClients, n, func(i int) (err error) {
				vlAnswers[from+i], err = postBulk(client, vlURL, bulkBodies[from+i])
				return err
			})
		}
	}
	b.StopTimer()
	for i := range batches {
		if err := checkBulk("/_bulk", ourAnswers[i], createBatch); err != nil {
			b.Fatal(err)
		}
		if vl != "" {
			if err := checkBulk(vlURL, vlAnswers[i], createBatch); err != nil {
				b.Fatal(err)
			}
		}
	}
	rows := float64(batches * createBatch)
	bulkRate, jsonRate := rows/bulkTook.Seconds(), rows/jsonTook.Seconds()
	b.ReportMetric(bulkRate, "bulk_rows/s")
	b.ReportMetric(jsonRate, "json_rows/s")
	b.ReportMetric(bulkRate/jsonRate, "ratio")
	if vl != "" {
		vlRate := rows / vlTook.Seconds()
		b.ReportMetric(vlRate, "victorialogs_rows/s")
		b.ReportMetric(bulkRate/vlRate, "ratio_victorialogs")
	}
}

// victoriaLogsBinary is VictoriaLogs' binary: VICTORIALOGS (as make bench-e2e takes it), else
// victoria-logs on PATH; "" when neither.
func victoriaLogsBinary() string {
	if p := os.Getenv("VICTORIALOGS"); p != "" {
		return p
	}
	p, _ := exec.LookPath("victoria-logs")
	return p
}

// startVictoriaLogs starts VictoriaLogs on a free loopback port with its data under b's
// directory and returns its base URL, or "" (said in the log) when its binary is not found. It
// is stopped when b ends, and killed if this process dies first.
func startVictoriaLogs(b *testing.B) string {
	b.Helper()
	bin := victoriaLogsBinary()
	if bin == "" {
		b.Log("VictoriaLogs is not installed (VICTORIALOGS=path, or victoria-logs on PATH; go install github.com/VictoriaMetrics/VictoriaLogs/app/victoria-logs@v1.52.1): its figure is left out")
		return ""
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	dir := b.TempDir()
	logf, err := os.Create(filepath.Join(dir, "victorialogs.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-httpListenAddr", addr, "-storageDataPath", filepath.Join(dir, "data"), "-retentionPeriod", "100y", "-loggerLevel", "WARN")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		b.Fatalf("start VictoriaLogs: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
	})
	base := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			b.Fatalf("VictoriaLogs did not answer /health within a minute: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
