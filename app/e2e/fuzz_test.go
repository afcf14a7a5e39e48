package e2e

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzHTTP sends random methods, paths, queries and bodies through the whole HTTP stack. The
// string PROJECT in any part is replaced by the id of an existing project, so that fuzzing
// reaches past the existence checks.
func FuzzHTTP(f *testing.F) {
	servers := newFuzzServers(f)
	f.Add(uint8(1), "/logs", "", "application/json", []byte(`[{"project_id":"PROJECT","message":"m"}]`))
	f.Add(uint8(0), "/logs", "project_id=PROJECT&limit=5&order=desc", "", []byte(nil))
	// NDJSON: an entry, a blank line, an entry that is an array, two values on a line.
	f.Add(uint8(1), "/logs", "", "application/x-ndjson", []byte("{\"project_id\":\"PROJECT\",\"message\":\"m\"}\r\n\n[{}]\n{} {}"))
	f.Add(uint8(1), "/logs", "", "application/x-ndjson", []byte("{\"project_id\":\"PROJECT\",\"message\":\"m\",\"x\":1}\n"))
	f.Add(uint8(2), "/projects/PROJECT", "", "application/json", []byte(`{"name":"x"}`))
	f.Add(uint8(3), "/logs", "project_id=PROJECT&start_time=1&end_time=0", "", []byte(nil))
	// The query language on every route that takes it, a delete among them.
	f.Add(uint8(0), "/logs", "project_id=PROJECT&query="+url.QueryEscape(`level:error OR "a b" -x:[1 TO 2] (pay* AND NOT y:*)`), "", []byte(nil))
	f.Add(uint8(3), "/logs", "project_id=PROJECT&query="+url.QueryEscape(`attributes.level:"x\"y" AND n:>=1e308`), "", []byte(nil))
	f.Add(uint8(0), "/logs/stats", "project_id=PROJECT&start_time=0&end_time=9999&step=1000&by=http.route&query="+url.QueryEscape(`a:<5 OR -b:{1 TO *]`), "", []byte(nil))
	f.Add(uint8(0), "/logs/facets", "project_id=PROJECT&start_time=0&end_time=9999&field=a.b&field=level&query="+url.QueryEscape(`((x`), "", []byte(nil))
	f.Add(uint8(0), "/logs/fields", "project_id=PROJECT&start_time=0&end_time=9999&query="+url.QueryEscape(`ü* ß:"\u0000"`), "", []byte(nil))
	methods := []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}
	f.Fuzz(func(t *testing.T, m uint8, path, query, contentType string, body []byte) {
		method := methods[int(m)%len(methods)]
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		serveAll(t, servers, func(s *fuzzServer) *http.Request {
			u := &url.URL{Path: strings.ReplaceAll(path, "PROJECT", s.project), RawQuery: strings.ReplaceAll(query, "PROJECT", s.project)}
			b := bytes.ReplaceAll(body, []byte("PROJECT"), []byte(s.project))
			req := &http.Request{
				Method:     method,
				URL:        u,
				RequestURI: u.RequestURI(),
				Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header:        http.Header{},
				Host:          "localhost",
				Body:          io.NopCloser(bytes.NewReader(b)),
				ContentLength: int64(len(b)),
				RemoteAddr:    "127.0.0.1:1",
			}
			req = req.WithContext(t.Context())
			if contentType != "" {
				req.Header.Set("Content-Type", contentType)
			}
			return req
		})
	})
}

// FuzzTwirp sends random bodies to MakeHat in both encodings.
func FuzzTwirp(f *testing.F) {
	servers := newFuzzServers(f)
	f.Add(false, []byte(`{"inches":12}`))
	f.Add(true, []byte{0x08, 0x0c})
	f.Fuzz(func(t *testing.T, protobuf bool, body []byte) {
		ct := "application/json"
		if protobuf {
			ct = "application/protobuf"
		}
		recs := serveAll(t, servers, func(*fuzzServer) *http.Request {
			req := httptest.NewRequestWithContext(t.Context(), "POST", "/twirp/rpc.example.haberdasher.Haberdasher/MakeHat", bytes.NewReader(body))
			req.Host = "localhost"
			req.Header.Set("Content-Type", ct)
			return req
		})
		for _, rec := range recs {
			if rec.Code != 200 && !strings.Contains(rec.Body.String(), `"code"`) {
				t.Fatalf("a Twirp error %d without a Twirp error body: %s", rec.Code, rec.Body.String())
			}
		}
	})
}

// FuzzOTLP sends random OTLP/HTTP bodies to POST /v1/logs, protobuf or JSON, identity or gzip,
// naming the fuzz project: no 5xx, nothing stored from a refused request, both stores alike.
func FuzzOTLP(f *testing.F) {
	servers := newFuzzServers(f)
	f.Add(false, false, []byte(specExampleJSON))
	f.Add(false, true, []byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"m"},"traceId":"0102"}]}]}]}`))
	f.Add(true, false, []byte{0x0a, 0x08, 0x12, 0x06, 0x12, 0x04, 0x2a, 0x02, 0x0a, 0x00})
	f.Add(true, true, []byte{})
	// Size-amplifying seeds (FuzzOTLPBombs has more): records and attributes past their limits,
	// 2 bytes each, and kvlists nested past the attributes' depth.
	f.Add(true, true, wrap(repeatField(2, 20_000), 1, 2))
	f.Add(true, false, wrap(repeatField(6, 1000), 1, 2, 2))
	f.Add(false, true, []byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"attributes":[`+strings.Repeat(`{"key":"k","value":{"kvlistValue":{"values":[`, 40)+strings.Repeat(`]}}}`, 40)+`]}]}]}]}`))
	f.Fuzz(func(t *testing.T, protobuf, gz bool, body []byte) {
		ct := "application/json"
		if protobuf {
			ct = "application/x-protobuf"
		}
		if gz {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			_, _ = zw.Write(body)
			_ = zw.Close()
			body = buf.Bytes()
		}
		serveAll(t, servers, func(s *fuzzServer) *http.Request {
			req := httptest.NewRequestWithContext(t.Context(), "POST", "/v1/logs", bytes.NewReader(body))
			req.Host = "localhost"
			req.Header.Set("Content-Type", ct)
			req.Header.Set("X-Project-Id", s.project)
			if gz {
				req.Header.Set("Content-Encoding", "gzip")
			}
			return req
		})
	})
}
