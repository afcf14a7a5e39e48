package edge

import (
	"log/slog"
	"net/http"
	"time"
)

// quietRoute reports routes logged at debug level: probes and scrapes would drown the access log.
func quietRoute(route string) bool {
	switch route {
	case "GET /healthz", "GET /readyz", "GET /metrics":
		return true
	}
	return false
}

// Observe is the outermost middleware: it takes or makes the request id, puts it in the context
// and the response, and after the request writes one access log line and the HTTP metrics,
// labelled by the ServeMux pattern that served it (never the raw path; see NotePattern).
//
// It runs on every request, MakeHat's few-microsecond calls included, so it copies the request
// once (the id in the context) and hands the route back through its response writer rather than
// a second context value and copy.
func Observe(log *slog.Logger, m *Metrics) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			id := r.Header.Get("X-Request-Id")
			if !ValidRequestID(id) {
				id = newRequestID()
			}
			w.Header()["X-Request-Id"] = []string{id}
			r = r.WithContext(withRequestID(r.Context(), id))
			rec := &responseRecorder{ResponseWriter: w, status: http.StatusOK}
			defer func() {
				// Also on panic (then the connection is dropped): the line and the metrics still count it.
				elapsed := time.Since(start)
				route := rec.pattern
				if route == "" {
					route = "unmatched"
				}
				method := methodLabel(r.Method)
				m.observeHTTP(route, method, rec.status, elapsed)
				level := slog.LevelInfo
				if quietRoute(route) {
					level = slog.LevelDebug
				}
				log.LogAttrs(r.Context(), level, "request",
					slog.String("method", method),
					slog.String("route", route),
					slog.Int("status", rec.status),
					slog.Int64("bytes", rec.bytes),
					slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
				)
			}()
			next.ServeHTTP(rec, r)
		})
	}
}

// methodLabel bounds the method a metric label or log field may show: any token is a valid
// method to net/http, and each invented one would otherwise make new series that live until
// restart. Methods outside RFC 9110's set and PATCH become "other".
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

// NotePattern sits right around the mux and records the pattern it (or a mux nested in it)
// chose for the request in Observe's response writer, found through the writers' Unwrap chain:
// the middleware between them hand on copies of the request (WithContext), and ServeMux writes
// the pattern into the copy it is given.
func NotePattern(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if rec := recorderOf(w); rec != nil {
				rec.pattern = r.Pattern
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// recorderOf finds Observe's writer in w or among the writers w wraps.
func recorderOf(w http.ResponseWriter) *responseRecorder {
	for range 16 { // a bound against a writer that unwraps to itself
		switch v := w.(type) {
		case *responseRecorder:
			return v
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return nil
		}
	}
	return nil
}

// responseRecorder notes the status and body size of a response on its way out.
type responseRecorder struct {
	http.ResponseWriter
	status  int
	bytes   int64
	wrote   bool
	pattern string // the route that served, from NotePattern
}

func (r *responseRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *responseRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *responseRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
