package otlpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"example.com/obsvc/domain"
)

// statusError is a failure that is an HTTP status and nothing else (415).
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

// statusOf is the one table from domain error kinds to the HTTP status and google.rpc.Code of an
// OTLP failure. OTLP exporters retry 429, 502, 503 and 504 only, so everything a retry may cure
// is one of those: an overloaded or unreachable store, and the same request still in flight.
func statusOf(k domain.Kind) (int, code.Code) {
	switch k {
	case domain.KindInvalid:
		return http.StatusBadRequest, code.Code_INVALID_ARGUMENT
	case domain.KindNotFound, domain.KindUnknownProject:
		return http.StatusNotFound, code.Code_NOT_FOUND
	case domain.KindTooLarge:
		return http.StatusRequestEntityTooLarge, code.Code_RESOURCE_EXHAUSTED
	case domain.KindUnavailable, domain.KindConflict:
		return http.StatusServiceUnavailable, code.Code_UNAVAILABLE
	case domain.KindUnauthenticated:
		return http.StatusUnauthorized, code.Code_UNAUTHENTICATED
	case domain.KindForbidden:
		return http.StatusForbidden, code.Code_PERMISSION_DENIED
	case domain.KindRateLimited:
		return http.StatusTooManyRequests, code.Code_RESOURCE_EXHAUSTED
	case domain.KindKeyReused, domain.KindExpired:
		return http.StatusUnprocessableEntity, code.Code_FAILED_PRECONDITION
	default:
		return http.StatusInternalServerError, code.Code_INTERNAL
	}
}

func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	WriteError(w, r, err, h.opts.Logger)
}

// WriteError answers err as a google.rpc.Status in the request's content type (protobuf unless
// the request is JSON), through the one Kind-to-status table. The edge refuses /v1/logs requests
// through it.
func WriteError(w http.ResponseWriter, r *http.Request, err error, log *slog.Logger) {
	var (
		httpStatus int
		c          code.Code
		msg        string
		se         *statusError
		de         *domain.Error
	)
	switch {
	case errors.As(err, &se):
		httpStatus, c, msg = se.status, code.Code_INVALID_ARGUMENT, se.msg
	case errors.As(err, &de):
		httpStatus, c = statusOf(de.Kind)
		shown := *de
		shown.Err = nil // the cause is for logs only
		msg = shown.Error()
		if de.Kind == domain.KindInternal {
			msg = ""
		}
	default:
		httpStatus, c = http.StatusInternalServerError, code.Code_INTERNAL
	}
	if httpStatus == http.StatusInternalServerError {
		if log != nil {
			log.ErrorContext(r.Context(), "otlp request failed", "path", r.URL.Path, "err", err)
		}
		msg = "internal error"
	}
	switch httpStatus {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		if w.Header().Get("Retry-After") == "" {
			w.Header().Set("Retry-After", "1")
		}
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	ct := requestContentType(r)
	if ct == "" {
		ct = contentProtobuf
	}
	write(w, ct, httpStatus, &status.Status{Code: int32(c), Message: validUTF8(msg)})
}

// validUTF8 makes a message safe for a proto3 string field: a decoder's error may quote the
// client's own bytes, and protojson refuses to encode a string that is not UTF-8.
func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// write answers m in content type ct.
func write(w http.ResponseWriter, ct string, httpStatus int, m proto.Message) {
	var (
		body []byte
		err  error
	)
	if ct == contentJSON {
		body, err = protojson.Marshal(m)
	} else {
		body, err = proto.Marshal(m)
	}
	if err != nil {
		http.Error(w, "encoding the answer failed", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(httpStatus)
	_, _ = w.Write(body) // the status is out; a failed write has no one to tell
}
