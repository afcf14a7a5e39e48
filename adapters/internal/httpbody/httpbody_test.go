package httpbody_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"example.com/obsvc/adapters/internal/httpbody"
	"example.com/obsvc/domain"
)

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestRead(t *testing.T) {
	const limit = 1000
	small := bytes.Repeat([]byte("a"), limit)
	bomb := gz(t, bytes.Repeat([]byte{0}, 64<<20)) // 64 MiB of zeros in about 64 KiB
	cases := []struct {
		name, coding string
		body         []byte
		want         []byte
		kind         domain.Kind // the error's, when not want
		unsupported  bool
	}{
		{name: "identity at the limit", body: small, want: small},
		{name: "identity over it", body: append(small, 'b'), kind: domain.KindTooLarge},
		{name: "gzip at the limit", coding: "gzip", body: gz(t, small), want: small},
		{name: "x-gzip, any case", coding: " X-Gzip ", body: gz(t, small), want: small},
		{name: "gzip over the limit once inflated", coding: "gzip", body: gz(t, append(small, 'b')), kind: domain.KindTooLarge},
		{name: "a gzip bomb", coding: "gzip", body: bomb, kind: domain.KindTooLarge},
		{name: "not gzip", coding: "gzip", body: []byte("plain text"), kind: domain.KindInvalid},
		{name: "truncated gzip", coding: "gzip", body: gz(t, small)[:20], kind: domain.KindInvalid},
		{name: "another coding", coding: "br", body: small, unsupported: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(c.body))
			if c.coding != "" {
				r.Header.Set("Content-Encoding", c.coding)
			}
			got, err := httpbody.Read(httptest.NewRecorder(), r, limit, "THE_SETTING")
			switch {
			case c.want != nil:
				if err != nil || !bytes.Equal(got, c.want) {
					t.Fatalf("got %d bytes, %v; want %d bytes", len(got), err, len(c.want))
				}
			case c.unsupported:
				var uc *httpbody.UnsupportedCodingError
				if !errors.As(err, &uc) || uc.Coding != c.coding {
					t.Fatalf("got %v, want an UnsupportedCodingError for %q", err, c.coding)
				}
			default:
				if domain.KindOf(err) != c.kind || got != nil {
					t.Fatalf("got %d bytes, %v (kind %v); want kind %v", len(got), err, domain.KindOf(err), c.kind)
				}
				if c.kind == domain.KindTooLarge && !strings.Contains(err.Error(), "THE_SETTING") {
					t.Fatalf("%v does not name the setting", err)
				}
			}
		})
	}
}
