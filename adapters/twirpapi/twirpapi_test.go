package twirpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/twitchtv/twirp"

	"example.com/obsvc/domain"
)

// TestToTwirpMapsEveryKind is the mapping table, every kind plus errors that are not the
// domain's: a client sees a client-safe message only; causes go to the log.
func TestToTwirpMapsEveryKind(t *testing.T) {
	driverErr := fmt.Errorf("create logs: %w", errors.New(`pq: relation "logs" does not exist at 10.0.0.7`))
	cases := []struct {
		name     string
		err      error
		code     twirp.ErrorCode
		argument string
		logged   bool
	}{
		{"invalid with a field", domain.ParamError("inches", "must be positive"), twirp.InvalidArgument, "inches", false},
		{"invalid without a field", domain.Errorf(domain.KindInvalid, "bad"), twirp.InvalidArgument, "", false},
		{"not found", domain.Errorf(domain.KindNotFound, "no such"), twirp.NotFound, "", false},
		{"unknown project", domain.Errorf(domain.KindUnknownProject, "unknown project"), twirp.NotFound, "", false},
		{"too large", domain.Errorf(domain.KindTooLarge, "too large"), twirp.Malformed, "", false},
		{"unavailable", domain.Unavailable(driverErr), twirp.Unavailable, "", false},
		{"unauthenticated", domain.Errorf(domain.KindUnauthenticated, "who"), twirp.Unauthenticated, "", false},
		{"forbidden", domain.Errorf(domain.KindForbidden, "no"), twirp.PermissionDenied, "", false},
		{"conflict", domain.Errorf(domain.KindConflict, "busy"), twirp.Aborted, "", false},
		{"key reused", domain.Errorf(domain.KindKeyReused, "reused"), twirp.Aborted, "", false},
		{"rate limited", domain.Errorf(domain.KindRateLimited, "slow down"), twirp.ResourceExhausted, "", false},
		{"internal domain error", &domain.Error{Kind: domain.KindInternal, Msg: "no ids", Err: driverErr}, twirp.Internal, "", true},
		{"a wrapped driver error", driverErr, twirp.Internal, "", true},
		{"a wrapped domain error", fmt.Errorf("make hat: %w", domain.ParamError("inches", "must be positive")), twirp.InvalidArgument, "inches", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			got := toTwirp(context.Background(), slog.New(slog.NewJSONHandler(&logs, nil)), c.err)
			if got.Code() != c.code || got.Meta("argument") != c.argument {
				t.Errorf("= %s argument %q, want %s argument %q", got.Code(), got.Meta("argument"), c.code, c.argument)
			}
			shown := got.Msg() + fmt.Sprint(got.MetaMap())
			if strings.Contains(shown, "pq:") || strings.Contains(shown, "10.0.0.7") {
				t.Errorf("the client sees the cause: %q", shown)
			}
			if c.logged != strings.Contains(logs.String(), "10.0.0.7") {
				t.Errorf("cause logged = %v, want %v: %s", !c.logged, c.logged, logs.String())
			}
		})
	}
}

func newTestServer(t *testing.T, limit int64) *httptest.Server {
	t.Helper()
	svc := domain.NewService(nil, domain.Options{}) // MakeHat touches no store
	h := NewHandler(svc, Options{MaxBodyBytes: limit})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(domain.WithPrincipal(r.Context(), domain.Principal{Admin: true})))
	}))
	t.Cleanup(srv.Close)
	return srv
}

type twirpAnswer struct {
	status int
	Code   string            `json:"code"`
	Msg    string            `json:"msg"`
	Meta   map[string]string `json:"meta"`
	Inches int32             `json:"inches"`
}

func post(t *testing.T, srv *httptest.Server, contentType string, body io.Reader, length int64) twirpAnswer {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", srv.URL+PathPrefix+"MakeHat", body)
	req.Header.Set("Content-Type", contentType)
	req.ContentLength = length
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a twirpAnswer
	b, _ := io.ReadAll(resp.Body)
	if contentType == "application/json" || resp.StatusCode != 200 {
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatalf("answer %d %q is not JSON: %v", resp.StatusCode, b, err)
		}
	}
	a.status = resp.StatusCode
	return a
}

// endless is a body that never ends: only a cap stops a server reading it.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

func TestBodyCap(t *testing.T) {
	srv := newTestServer(t, 64)
	cases := []struct {
		name   string
		body   io.Reader
		length int64
		ct     string
		status int
		code   string
	}{
		{"small JSON", strings.NewReader(`{"inches":3}`), -1, "application/json", 200, ""},
		{"declared too large", strings.NewReader(`{"inches":3}` + strings.Repeat(" ", 100)), 112, "application/json", 400, "malformed"},
		{"streamed without end, JSON", endless{}, -1, "application/json", 400, "malformed"},
		{"streamed without end, protobuf", endless{}, -1, "application/protobuf", 400, "malformed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := post(t, srv, c.ct, c.body, c.length)
			if a.status != c.status || a.Code != c.code {
				t.Errorf("= %d %q %q, want %d %q", a.status, a.Code, a.Msg, c.status, c.code)
			}
		})
	}
}

func TestJSONInchesOutOfRangeNamesTheField(t *testing.T) {
	srv := newTestServer(t, 0)
	for body, want := range map[string]string{
		`{"inches":9223372036854775808}`: "invalid_argument",
		`{"inches":2147483648}`:          "invalid_argument",
		`{"inches":-2147483649}`:         "invalid_argument",
		`{"inches":1.5}`:                 "invalid_argument",
		`{"inches":"twelve"}`:            "invalid_argument",
		`{"inches":true}`:                "invalid_argument",
		`{"inches":0}`:                   "invalid_argument", // the domain's rule
		`{"inches":"12"}`:                "",                 // protojson takes int32 as a string too
		`{"inches":12,"unknown":{}}`:     "",
		`[1,2]`:                          "malformed",
		`{"inches":`:                     "malformed",
	} {
		a := post(t, srv, "application/json", strings.NewReader(body), -1)
		if a.Code != want || a.status >= 500 {
			t.Errorf("%s = %d %q %q, want %q", body, a.status, a.Code, a.Msg, want)
		}
		if want == "invalid_argument" && a.Meta["argument"] != "inches" {
			t.Errorf("%s: meta %v does not name inches", body, a.Meta)
		}
	}
}

// BenchmarkCheckJSONFields is the cost the field check adds to a well-formed JSON MakeHat call
// (compare ns/op and allocs/op across changes; the generated code decodes the body again).
func BenchmarkCheckJSONFields(b *testing.B) {
	r := httptest.NewRequest(http.MethodPost, PathPrefix+"MakeHat", nil)
	r.Header.Set("Content-Type", "application/json")
	body := []byte(`{"inches":12}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := checkJSONFields(r, body); err != nil {
			b.Fatal(err)
		}
	}
}
