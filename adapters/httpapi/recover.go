package httpapi

import (
	"fmt"
	"net/http"
)

// recoverer turns a panic in a handler into a logged 500 problem, when nothing was written yet,
// instead of a dropped connection. http.ErrAbortHandler keeps its meaning: abort the response.
func (p problemWriter) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler || tw.wrote {
				panic(http.ErrAbortHandler)
			}
			p.write(w, r, fmt.Errorf("panic: %v", v))
		}()
		next.ServeHTTP(tw, r)
	})
}

// trackingWriter notes whether the response has started.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer (flushes, deadlines).
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
