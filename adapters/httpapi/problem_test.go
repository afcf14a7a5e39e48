package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"example.com/obsvc/domain"
)

// TestWriteErrorMapsEveryKind is the REST twin of the Twirp mapping table: every kind gets its
// status, a client-safe detail and the contract's problem format; causes of 5xx go to the log and
// never to the client.
func TestWriteErrorMapsEveryKind(t *testing.T) {
	driverErr := fmt.Errorf("create logs: %w", errors.New(`pq: relation "logs" does not exist at 10.0.0.7`))
	cases := []struct {
		name   string
		err    error
		status int
		logged bool
	}{
		{"invalid", domain.ParamError("limit", "must be between 1 and 10000"), 400, false},
		{"not found", domain.Errorf(domain.KindNotFound, "no project"), 404, false},
		{"unknown project", domain.Errorf(domain.KindUnknownProject, "unknown project"), 422, false},
		{"key reused", domain.Errorf(domain.KindKeyReused, "reused"), 422, false},
		{"conflict", domain.Errorf(domain.KindConflict, "busy"), 409, false},
		{"too large", domain.Errorf(domain.KindTooLarge, "too large"), 413, false},
		{"unavailable", domain.Unavailable(driverErr), 503, true},
		{"unauthenticated", domain.Errorf(domain.KindUnauthenticated, "who"), 401, false},
		{"forbidden", domain.Errorf(domain.KindForbidden, "no"), 403, false},
		{"rate limited", domain.Errorf(domain.KindRateLimited, "slow down"), 429, false},
		{"internal domain error", &domain.Error{Kind: domain.KindInternal, Msg: "no ids", Err: driverErr}, 500, true},
		{"a wrapped driver error", driverErr, 500, true},
		{"a wrapped domain error", fmt.Errorf("list logs: %w", domain.Errorf(domain.KindNotFound, "no project")), 404, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			w := httptest.NewRecorder()
			WriteError(w, httptest.NewRequest("GET", "/logs", nil), c.err, slog.New(slog.NewJSONHandler(&logs, nil)))
			if w.Code != c.status {
				t.Errorf("status %d, want %d", w.Code, c.status)
			}
			if ct := w.Header().Get("Content-Type"); ct != problemContentType {
				t.Errorf("Content-Type %q", ct)
			}
			var p struct {
				Status int    `json:"status"`
				Title  string `json:"title"`
				Detail string `json:"detail"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Status != c.status || p.Title == "" {
				t.Errorf("problem %s (%v)", w.Body.String(), err)
			}
			if strings.Contains(w.Body.String(), "pq:") || strings.Contains(w.Body.String(), "10.0.0.7") {
				t.Errorf("the client sees the cause: %s", w.Body.String())
			}
			if c.logged != strings.Contains(logs.String(), "10.0.0.7") {
				t.Errorf("cause logged = %v, want %v: %s", !c.logged, c.logged, logs.String())
			}
			switch c.status {
			case 401:
				if w.Header().Get("WWW-Authenticate") != "Bearer" {
					t.Error("401 without WWW-Authenticate: Bearer")
				}
			case 429, 503:
				if w.Header().Get("Retry-After") == "" {
					t.Errorf("%d without Retry-After", c.status)
				}
			}
		})
	}
}

// TestRefusalsLogAtWarn: a 503 (shed load, a store that does not answer) is a refusal the client
// retries, logged at WARN; a 429 (the client over its own share) has only its access log line;
// only what the service got wrong (500) is logged at ERROR.
func TestRefusalsLogAtWarn(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		level string // of the one record, or "" for none
	}{
		{"shed", domain.Errorf(domain.KindUnavailable, "busy"), "WARN"},
		{"store down", domain.Unavailable(errors.New("connection refused")), "WARN"},
		{"rate limited", domain.Errorf(domain.KindRateLimited, "slow down"), ""},
		{"internal", errors.New("bug"), "ERROR"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			WriteError(httptest.NewRecorder(), httptest.NewRequest("GET", "/logs", nil), c.err, slog.New(slog.NewJSONHandler(&logs, nil)))
			var got []string
			for line := range strings.Lines(logs.String()) {
				var rec struct{ Level string }
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("log line %q: %v", line, err)
				}
				got = append(got, rec.Level)
			}
			want := []string{c.level}
			if c.level == "" {
				want = nil
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("levels logged %v, want %v", got, want)
			}
		})
	}
}
