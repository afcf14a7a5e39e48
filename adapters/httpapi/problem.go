package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"unicode/utf8"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/domain"
)

// problemContentType is the media type of every error body (RFC 9457).
const problemContentType = "application/problem+json"

// statusOf is the one table from domain error kinds to HTTP statuses.
func statusOf(k domain.Kind) int {
	switch k {
	case domain.KindInvalid:
		return http.StatusBadRequest
	case domain.KindNotFound:
		return http.StatusNotFound
	case domain.KindUnknownProject, domain.KindKeyReused, domain.KindExpired:
		return http.StatusUnprocessableEntity
	case domain.KindConflict:
		return http.StatusConflict
	case domain.KindTooLarge:
		return http.StatusRequestEntityTooLarge
	case domain.KindUnavailable:
		return http.StatusServiceUnavailable
	case domain.KindUnauthenticated:
		return http.StatusUnauthorized
	case domain.KindForbidden:
		return http.StatusForbidden
	case domain.KindRateLimited:
		return http.StatusTooManyRequests
	default:
		return http.StatusInternalServerError
	}
}

// httpError is an error that is an HTTP status and nothing else (415, 405, an unknown route):
// conditions that belong to the transport, not the domain.
type httpError struct {
	status int
	detail string
}

func (e *httpError) Error() string { return e.detail }

// problemWriter writes every error response of the REST API; all error exits of the generated
// code and of the middleware lead here.
type problemWriter struct {
	log *slog.Logger
}

// write answers err as application/problem+json. Causes of 5xx are logged, never shown.
func (p problemWriter) write(w http.ResponseWriter, r *http.Request, err error) {
	var (
		status int
		detail string
		fields []rest.ProblemField
		he     *httpError
		de     *domain.Error
	)
	switch {
	case errors.As(err, &he):
		status, detail = he.status, he.detail
	case errors.As(err, &de):
		status, detail = statusOf(de.Kind), de.Msg
		fields = problemFields(de.Fields)
	default:
		status = http.StatusInternalServerError
	}
	if status >= 500 {
		// A 503 is a refusal (shed load, a store that does not answer, a deadline): the client is
		// told to retry, and the operator sees it at WARN. ERROR is for what the service got wrong.
		level := slog.LevelError
		if status == http.StatusServiceUnavailable {
			level = slog.LevelWarn
		}
		p.log.Log(r.Context(), level, "request failed", "method", clip(r.Method), "path", clip(r.URL.Path), "status", status, "err", err)
		if status == http.StatusInternalServerError || detail == "" {
			detail = "the server failed to handle the request"
		}
	}
	writeProblem(w, r, status, bound(detail, maxDetail), fields)
}

// maxDetail bounds the detail of a problem document and of each of its fields, maxSegment each
// segment of a field's pointer and its parameter name. The domain quotes no more than a short
// prefix of a client's value (domain.Brief); this bounds every message whatever its source (a
// parser's, a validator's naming a client's key), so that no client decides the size of an
// answer or has its input echoed back whole.
const (
	maxDetail  = 300
	maxSegment = 64
)

// bound cuts s to at most n bytes, at a character boundary, marking the cut with an ellipsis.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// writeProblem writes one problem document with the given status, naming the request's id.
func writeProblem(w http.ResponseWriter, r *http.Request, status int, detail string, fields []rest.ProblemField) {
	body := rest.Problem{Type: "about:blank", Title: http.StatusText(status), Status: int32(status), Detail: detail}
	if len(fields) > 0 {
		body.Errors = &fields
	}
	h := w.Header()
	// The request's id, as the edge set it on the answer before any handler ran.
	if id := h.Get("X-Request-Id"); id != "" {
		body.RequestId = &id
	}
	h.Del("Content-Length")
	h.Set("Content-Type", problemContentType)
	h.Set("X-Content-Type-Options", "nosniff")
	switch status {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", "Bearer")
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		if h.Get("Retry-After") == "" {
			h.Set("Retry-After", "1")
		}
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body) // the status is out; a failed write has no one to tell
}

// problemFields renders domain field errors as the contract's pointer/parameter members.
func problemFields(fs []domain.FieldError) []rest.ProblemField {
	if len(fs) == 0 {
		return nil
	}
	out := make([]rest.ProblemField, len(fs))
	for i, f := range fs {
		out[i] = rest.ProblemField{Detail: bound(f.Detail, maxDetail)}
		if f.Param != "" {
			param := bound(f.Param, maxSegment)
			out[i].Parameter = &param
		} else {
			path := make([]string, len(f.Path))
			for j, seg := range f.Path {
				path[j] = bound(seg, maxSegment)
			}
			ptr := jsonPointer(path)
			out[i].Pointer = &ptr
		}
	}
	return out
}

// jsonPointer renders path as an RFC 6901 pointer; an empty path is the whole document ("").
func jsonPointer(path []string) string {
	var b strings.Builder
	for _, seg := range path {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(seg))
	}
	return b.String()
}

// WriteError answers err as a problem document through the one Kind-to-status table: for the
// middleware that refuses a request before any handler runs (authentication, load shedding,
// rate limits).
func WriteError(w http.ResponseWriter, r *http.Request, err error, log *slog.Logger) {
	problemWriter{log: log}.write(w, r, err)
}

// maxLoggedValue bounds a value taken from a request and written to the log.
const maxLoggedValue = 256

// clip truncates a request's value for the log, so that no client decides the size of a line.
func clip(v string) string {
	if len(v) <= maxLoggedValue {
		return v
	}
	return v[:maxLoggedValue] + "…"
}
