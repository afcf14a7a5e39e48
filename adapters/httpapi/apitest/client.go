package apitest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"sync"
	"testing"
)

// Get sends GET url with the default client and returns the response with its whole body,
// already read and closed; a request that cannot be sent fails the test.
func Get(tb testing.TB, url string) (*http.Response, []byte) {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// KeyLine is one line of API_KEYS: kind ("admin" or "project ID") and the SHA-256 digest of
// secret.
func KeyLine(kind, secret string) string {
	d := sha256.Sum256([]byte(secret))
	return kind + " sha256:" + hex.EncodeToString(d[:])
}

// SyncBuffer is a bytes.Buffer safe for a server's log writes and the test's reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
