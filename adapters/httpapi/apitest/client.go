package apitest

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
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
