package esbulk

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"example.com/obsvc/adapters/internal/httpbody"
	"example.com/obsvc/domain"
)

// ProductHeader and ProductName mark an answer as Elasticsearch's: the official clients (Go
// from 8.0, node, Python, Java) refuse to talk to a server whose first successful answer lacks
// them.
const (
	ProductHeader = "X-Elastic-Product"
	ProductName   = "Elasticsearch"
)

// malformedError is a body that is no bulk body: a line that is not an action where one is
// due. Elasticsearch answers it 400 with a parse_exception.
type malformedError struct{ msg string }

func (e *malformedError) Error() string { return e.msg }

// itemStatus is the one table from a domain error kind to the status and Elasticsearch error
// type of an item, or of a whole request. Shippers retry 429 (and, for a whole request, 5xx) and
// drop any other 4xx item, so every failure a retry may cure is a 429: a client over its rate, a
// store busy or unreachable, the same request still in flight.
func itemStatus(k domain.Kind) (int, string) {
	switch k {
	case domain.KindInvalid, domain.KindKeyReused, domain.KindExpired:
		return http.StatusBadRequest, "illegal_argument_exception"
	case domain.KindNotFound, domain.KindUnknownProject:
		return http.StatusNotFound, "index_not_found_exception"
	case domain.KindForbidden:
		return http.StatusForbidden, "security_exception"
	case domain.KindUnauthenticated:
		return http.StatusUnauthorized, "security_exception"
	case domain.KindTooLarge:
		return http.StatusRequestEntityTooLarge, "illegal_argument_exception"
	case domain.KindRateLimited, domain.KindConflict, domain.KindUnavailable:
		return http.StatusTooManyRequests, "es_rejected_execution_exception"
	}
	return http.StatusInternalServerError, "exception"
}

type errorBody struct {
	Error  errorCause `json:"error"`
	Status int        `json:"status"`
}

type errorCause struct {
	RootCause []itemError `json:"root_cause"`
	Type      string      `json:"type"`
	Reason    string      `json:"reason"`
}

// WriteError answers err for a whole request in Elasticsearch's error shape,
// {"error":{"root_cause":[...],"type","reason"},"status"}: a body that is no bulk body, a
// content coding it cannot read, else a domain error through the one table itemStatus. The
// edge refuses these routes through it.
func WriteError(w http.ResponseWriter, r *http.Request, err error, log *slog.Logger) {
	var (
		status int
		typ    string
		msg    string
		me     *malformedError
		uc     *httpbody.UnsupportedCodingError
		de     *domain.Error
	)
	switch {
	case errors.As(err, &me):
		status, typ, msg = http.StatusBadRequest, "parse_exception", me.msg
	case errors.As(err, &uc):
		status, typ, msg = http.StatusUnsupportedMediaType, "illegal_argument_exception", uc.Error()
	case errors.As(err, &de):
		status, typ = itemStatus(de.Kind)
		msg = shown(err)
	default:
		status, typ = http.StatusInternalServerError, "exception"
	}
	if status == http.StatusInternalServerError {
		if log != nil {
			log.ErrorContext(r.Context(), "bulk request failed", "path", r.URL.Path, "err", err)
		}
		msg = "internal error"
	}
	h := w.Header()
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if h.Get("Retry-After") == "" {
			h.Set("Retry-After", "1")
		}
	case http.StatusUnauthorized:
		// No Basic challenge: a browser would prompt for it, and keep what it was given.
		h.Set("WWW-Authenticate", `ApiKey, Bearer`)
	}
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	writeJSON(w, r, status, errorBody{Error: errorCause{RootCause: []itemError{{Type: typ, Reason: msg}}, Type: typ, Reason: msg}, Status: status})
}

// writeJSON answers v with the product header.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding the answer failed", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Del("Content-Length")
	h.Set(ProductHeader, ProductName)
	h.Set("Content-Type", "application/json; charset=UTF-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body) // the status is out; a failed write has no one to tell
	}
}

// bulkAnswer is the bulk answer as a client reads it (the handler writes it item by item, see
// writeBulk).
type bulkAnswer struct {
	Took   int64                  `json:"took"`
	Errors bool                   `json:"errors"`
	Items  []map[string]itemReply `json:"items"`
}

type itemReply struct {
	Index   string     `json:"_index"`
	ID      *string    `json:"_id"`
	Version int        `json:"_version,omitempty"`
	Result  string     `json:"result,omitempty"`
	Shards  *shards    `json:"_shards,omitempty"`
	Status  int        `json:"status"`
	Error   *itemError `json:"error,omitempty"`
}

type shards struct {
	Total      int `json:"total"`
	Successful int `json:"successful"`
	Failed     int `json:"failed"`
}

// writeBulk answers the items in the order sent, each under its action's name, encoding one
// item at a time: a body of many small items is answered without a copy of its answer.
func writeBulk(w http.ResponseWriter, took time.Duration, items []*item, failed bool) {
	h := w.Header()
	h.Set(ProductHeader, ProductName)
	h.Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	fmt.Fprintf(bw, `{"took":%d,"errors":%t,"items":[`, took.Milliseconds(), failed)
	var buf []byte
	for i, it := range items {
		rep := itemReply{Index: it.index, Status: it.status, Error: it.err}
		if it.id != "" {
			rep.ID = &it.id
		}
		if it.status == http.StatusCreated {
			rep.Version, rep.Result = 1, "created"
			rep.Shards = &shards{Total: 1, Successful: 1}
		}
		b, err := json.Marshal(rep)
		if err != nil {
			return // the status is out; the client sees a truncated answer and retries
		}
		buf = buf[:0]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"`...)
		buf = append(buf, it.action...) // one of actionNames: nothing to escape
		buf = append(buf, `":`...)
		buf = append(buf, b...)
		buf = append(buf, '}')
		if _, err := bw.Write(buf); err != nil {
			return // the client went away; no one to tell
		}
	}
	bw.WriteString("]}")
	_ = bw.Flush()
}
