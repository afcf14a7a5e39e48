package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSeverity is the OTLP severity number of each bench level (the first of its range).
var otlpSeverity = map[string]logspb.SeverityNumber{"debug": 5, "info": 9, "warn": 13, "error": 17}

// batchOTLP is rows as one protobuf ExportLogsServiceRequest: the entries it maps to are those
// of batchJSONWithAttributes.
func batchOTLP(rows []row) []byte {
	recs := make([]*logspb.LogRecord, len(rows))
	for i, r := range rows {
		recs[i] = &logspb.LogRecord{
			TimeUnixNano:   uint64(r.time) * 1e6,
			SeverityNumber: otlpSeverity[r.level],
			Body:           str(r.message),
			Attributes:     []*commonpb.KeyValue{kv("user.id", str(r.user))},
		}
	}
	req := &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", str(r0subject(rows)))}},
		ScopeLogs: []*logspb.ScopeLogs{{LogRecords: recs}},
	}}}
	b, err := proto.Marshal(req)
	if err != nil {
		panic(err)
	}
	return b
}

func r0subject(rows []row) string { return rows[0].subject }

// batchJSONWithAttributes is rows as a POST /logs body holding the entries batchOTLP maps to.
func batchJSONWithAttributes(projectID string, rows []row) []byte {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, r := range rows {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"project_id":%q,"time":%d,"level":%q,"message":%q,"subject":%q,"user_id":%q,"attributes":{"service.name":%q,"user.id":%q}}`,
			projectID, r.time, r.level, r.message, r.subject, r.user, r.subject, r.user)
	}
	buf.WriteByte(']')
	return buf.Bytes()
}

func postOTLPBatch(client *http.Client, url, projectID string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/logs", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Project-Id", projectID)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || len(b) != 0 { // an empty response: no partial success
		return fmt.Errorf("POST /v1/logs = %d %q", resp.StatusCode, b)
	}
	return nil
}

// BenchmarkOTLPIngestPostgres: POST /v1/logs (protobuf, 1,000-record requests, 2 clients)
// against POST /logs with the same entries (attributes included), same server, same run:
// records per second of each and their ratio (otlp/json).
func BenchmarkOTLPIngestPostgres(b *testing.B) {
	st, _ := benchPostgres(b)
	e := newBenchEnv(b, st, nil)
	batches := max(b.N, 4) * 4
	otlpBodies := make([][]byte, batches)
	jsonBodies := make([][]byte, batches)
	for i := range batches {
		otlpRows, jsonRows := benchBatch(2*i, createBatch), benchBatch(2*i+1, createBatch)
		otlpBodies[i] = batchOTLP(otlpRows)
		jsonBodies[i] = batchJSONWithAttributes(e.project, jsonRows)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: createClients}}
	b.ResetTimer()
	jsonTook := runConcurrent(b, createClients, batches, func(i int) error { return postBatch(client, e.url, jsonBodies[i]) })
	otlpTook := runConcurrent(b, createClients, batches, func(i int) error { return postOTLPBatch(client, e.url, e.project, otlpBodies[i]) })
	b.StopTimer()
	records := float64(batches * createBatch)
	otlpRate, jsonRate := records/otlpTook.Seconds(), records/jsonTook.Seconds()
	b.ReportMetric(otlpRate, "otlp_records/s")
	b.ReportMetric(jsonRate, "json_records/s")
	b.ReportMetric(otlpRate/jsonRate, "ratio")
}
