package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/app/server"
	"example.com/obsvc/domain"
)

// fuzzServer is the real wiring on one store, with one project a fuzzed request can name.
type fuzzServer struct {
	name    string
	h       http.Handler
	st      server.Store
	project string
}

// newFuzzServers builds the service on SQLite and on PostgreSQL (a database of the cluster
// pgtest started, which fuzz workers share; see pgtest.Run): every fuzzed request goes to both.
func newFuzzServers(f *testing.F) []*fuzzServer {
	f.Helper()
	sqlite, err := sqlstore.OpenSQLite(f.Context(), filepath.Join(f.TempDir(), "fuzz.db"), sqlstore.DefaultSQLiteOptions())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = sqlite.Close() })
	postgres, err := sqlstore.OpenPostgres(f.Context(), pg.NewDatabase(f), sqlstore.DefaultPostgresOptions())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = postgres.Close() })
	var out []*fuzzServer
	for _, st := range []struct {
		name string
		st   server.Store
	}{{"sqlite", sqlite}, {"postgres", postgres}} {
		cfg := server.DefaultConfig()
		cfg.MaxInFlight, cfg.MaxInFlightPer = 0, 0
		svc, err := server.New(cfg, st.st, slog.New(slog.DiscardHandler), server.Deps{})
		if err != nil {
			f.Fatal(err)
		}
		p, err := svc.Core.CreateProject(domain.WithPrincipal(f.Context(), domain.Principal{Admin: true}), domain.ProjectInput{Name: "fuzz"})
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, &fuzzServer{name: st.name, h: svc.Handler, st: st.st, project: p.ID})
	}
	return out
}

// footprint is a cheap fingerprint of everything stored: projects with their update times and
// every entry id.
func (s *fuzzServer) footprint(t *testing.T) string {
	t.Helper()
	ps, err := s.st.ListProjects(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.ID + p.Name + p.UpdatedAt.String() + ";")
		err := s.st.ListLogs(t.Context(), domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}, Limit: 1_000_000}, func(pg domain.Page) error {
			for e, err := range pg.Entries {
				if err != nil {
					return err
				}
				b.WriteString(e.ID + ",")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// serve runs one request through the handler and checks the invariants: no panic escapes (the
// fuzz engine reports it), no 5xx, and a 4xx changes nothing that is stored.
func (s *fuzzServer) serve(t *testing.T, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	before := s.footprint(t)
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s: %s %s answered %d: %.500s", s.name, req.Method, req.URL, rec.Code, rec.Body.String())
	}
	if rec.Code >= 400 {
		if after := s.footprint(t); after != before {
			t.Fatalf("%s: %s %s answered %d but changed what is stored", s.name, req.Method, req.URL, rec.Code)
		}
	}
	return rec
}

// serveAll sends the request newReq makes for each server to every server, and checks that the
// stores answer alike: the same status on both.
func serveAll(t *testing.T, servers []*fuzzServer, newReq func(s *fuzzServer) *http.Request) []*httptest.ResponseRecorder {
	t.Helper()
	var recs []*httptest.ResponseRecorder
	for _, s := range servers {
		recs = append(recs, s.serve(t, newReq(s)))
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].Code != recs[0].Code {
			req := newReq(servers[0])
			t.Fatalf("%s %s: %s answered %d (%.300s), %s answered %d (%.300s)", req.Method, req.URL,
				servers[0].name, recs[0].Code, recs[0].Body.String(), servers[i].name, recs[i].Code, recs[i].Body.String())
		}
	}
	return recs
}

// FuzzHTTP sends random methods, paths, queries and bodies through the whole HTTP stack. The
// string PROJECT in any part is replaced by the id of an existing project, so that fuzzing
// reaches past the existence checks.
func FuzzHTTP(f *testing.F) {
	servers := newFuzzServers(f)
	f.Add(uint8(1), "/logs", "", "application/json", []byte(`[{"project_id":"PROJECT","message":"m"}]`))
	f.Add(uint8(0), "/logs", "project_id=PROJECT&limit=5&order=desc", "", []byte(nil))
	f.Add(uint8(2), "/projects/PROJECT", "", "application/json", []byte(`{"name":"x"}`))
	f.Add(uint8(3), "/logs", "project_id=PROJECT&start_time=1&end_time=0", "", []byte(nil))
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
