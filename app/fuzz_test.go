package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/domain"
)

// fuzzServer is the real wiring on a SQLite store, with one project a fuzzed request can name.
type fuzzServer struct {
	h       http.Handler
	st      store
	project string
}

func newFuzzServer(f *testing.F) *fuzzServer {
	f.Helper()
	st, err := sqlstore.OpenSQLite(f.Context(), filepath.Join(f.TempDir(), "fuzz.db"), sqlstore.DefaultSQLiteOptions())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = st.Close() })
	cfg := defaultConfig()
	cfg.MaxInFlight = 0
	svc, err := newService(cfg, st, slog.New(slog.DiscardHandler), deps{})
	if err != nil {
		f.Fatal(err)
	}
	h := svc.handler
	p, err := svc.core.CreateProject(domain.WithPrincipal(f.Context(), domain.Principal{Admin: true}), domain.ProjectInput{Name: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	return &fuzzServer{h: h, st: st, project: p.ID}
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
		t.Fatalf("%s %s answered %d: %.500s", req.Method, req.URL, rec.Code, rec.Body.String())
	}
	if rec.Code >= 400 {
		if after := s.footprint(t); after != before {
			t.Fatalf("%s %s answered %d but changed what is stored", req.Method, req.URL, rec.Code)
		}
	}
	return rec
}

// FuzzHTTP sends random methods, paths, queries and bodies through the whole HTTP stack. The
// string PROJECT in any part is replaced by the id of an existing project, so that fuzzing
// reaches past the existence checks.
func FuzzHTTP(f *testing.F) {
	s := newFuzzServer(f)
	f.Add(uint8(1), "/logs", "", "application/json", []byte(`[{"project_id":"PROJECT","message":"m"}]`))
	f.Add(uint8(0), "/logs", "project_id=PROJECT&limit=5&order=desc", "", []byte(nil))
	f.Add(uint8(2), "/projects/PROJECT", "", "application/json", []byte(`{"name":"x"}`))
	f.Add(uint8(3), "/logs", "project_id=PROJECT&start_time=1&end_time=0", "", []byte(nil))
	methods := []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}
	f.Fuzz(func(t *testing.T, m uint8, path, query, contentType string, body []byte) {
		method := methods[int(m)%len(methods)]
		path = strings.ReplaceAll(path, "PROJECT", s.project)
		query = strings.ReplaceAll(query, "PROJECT", s.project)
		body = bytes.ReplaceAll(body, []byte("PROJECT"), []byte(s.project))
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		u := &url.URL{Path: path, RawQuery: query}
		req := &http.Request{
			Method:     method,
			URL:        u,
			RequestURI: u.RequestURI(),
			Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:        http.Header{},
			Host:          "fuzz.test",
			Body:          io.NopCloser(bytes.NewReader(body)),
			ContentLength: int64(len(body)),
			RemoteAddr:    "127.0.0.1:1",
		}
		req = req.WithContext(t.Context())
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		s.serve(t, req)
	})
}

// FuzzTwirp sends random bodies to MakeHat in both encodings.
func FuzzTwirp(f *testing.F) {
	s := newFuzzServer(f)
	f.Add(false, []byte(`{"inches":12}`))
	f.Add(true, []byte{0x08, 0x0c})
	f.Fuzz(func(t *testing.T, protobuf bool, body []byte) {
		ct := "application/json"
		if protobuf {
			ct = "application/protobuf"
		}
		req := httptest.NewRequestWithContext(t.Context(), "POST", "/twirp/rpc.example.haberdasher.Haberdasher/MakeHat", bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		rec := s.serve(t, req)
		if rec.Code != 200 && !strings.Contains(rec.Body.String(), `"code"`) {
			t.Fatalf("a Twirp error %d without a Twirp error body: %s", rec.Code, rec.Body.String())
		}
	})
}
