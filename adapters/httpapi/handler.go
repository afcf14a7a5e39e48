// Package httpapi is the REST adapter: it serves the generated strict server interface by calling
// the domain, validates requests against openapi.yaml, and answers every error as
// application/problem+json (RFC 9457) from one place.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/domain"
)

// Options configure the REST handler.
type Options struct {
	// MaxBodyBytes bounds a request body (413 beyond).
	MaxBodyBytes int64
	// StallTimeout bounds how long a streamed listing waits for the client to take each part of
	// the body (about 32 KiB): a client that stops reading is cut off after it, rather than
	// holding the connection and a store reader until the server's write timeout. Zero means
	// DefaultStallTimeout.
	StallTimeout time.Duration
	Logger       *slog.Logger
	// OnLogsCreated and OnLogsDeleted, when set, are told how many entries each successful
	// write or delete stored or removed (for metrics).
	OnLogsCreated func(n int)
	OnLogsDeleted func(n int64)
	// ExportPageSize is how many entries an export reads from the store at a time
	// (domain.Limits.DefaultPageSize when zero); ExportPageTimeout, when positive, bounds the
	// time each of those reads spends in the store, not the time the client takes over it: an
	// export as a whole lasts as long as its client takes the entries, StallTimeout apart.
	ExportPageSize    int
	ExportPageTimeout time.Duration
	// TailHeartbeat is how long an idle tail stays silent (DefaultTailHeartbeat when zero).
	TailHeartbeat time.Duration
	// StopTails, when closed, ends every open tail: closed when the server starts to shut
	// down, so that tails do not hold the drain.
	StopTails <-chan struct{}
	// TailStarted, when not nil, is called with a tail's request context once its start is done
	// (domain.TailRequest.Started): the edge gives back the request's share of the in-flight
	// limits, which a tail holds while it starts and not while it waits.
	TailStarted func(context.Context)
}

// DefaultMaxBodyBytes is the documented body limit, 10 MiB.
const DefaultMaxBodyBytes = 10 << 20

// DefaultStallTimeout is the StallTimeout of Options that name none.
const DefaultStallTimeout = 15 * time.Second

// NewHandler returns the REST API as an http.Handler: validation from the spec in front of the
// generated routes, which call svc.
func NewHandler(svc *domain.Service, opts Options) (http.Handler, error) {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.StallTimeout <= 0 {
		opts.StallTimeout = DefaultStallTimeout
	}
	if opts.TailHeartbeat <= 0 {
		opts.TailHeartbeat = DefaultTailHeartbeat
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	problems := problemWriter{log: opts.Logger}
	v, err := newValidator(opts.MaxBodyBytes, svc.Limits(), problems)
	if err != nil {
		return nil, err
	}
	srv := &server{svc: svc, log: opts.Logger, stall: opts.StallTimeout, onCreated: opts.OnLogsCreated, onDeleted: opts.OnLogsDeleted, buffers: &sync.Pool{},
		exportPage: opts.ExportPageSize, exportTimeout: opts.ExportPageTimeout}
	strict := rest.NewStrictHandlerWithOptions(srv,
		[]rest.StrictMiddlewareFunc{withRequestURL},
		rest.StrictHTTPServerOptions{
			RequestErrorHandlerFunc:  problems.bodyError,
			ResponseErrorHandlerFunc: problems.write,
		})
	mux := http.NewServeMux()
	// Not generated (see tailHandler): server.cfg.yaml leaves the operation out.
	mux.Handle("GET /logs/tail", tailHandler{svc: svc, problems: problems, stall: opts.StallTimeout, heartbeat: opts.TailHeartbeat, stop: opts.StopTails, started: opts.TailStarted})
	rest.HandlerWithOptions(createLogsOnce{ServerInterface: strict, srv: srv, problems: problems}, rest.StdHTTPServerOptions{
		BaseRouter:       mux,
		ErrorHandlerFunc: problems.paramError,
	})
	return problems.recoverer(v.middleware(problemFallback(mux))), nil
}

// bodyError answers a body the generated decoder could not read.
func (p problemWriter) bodyError(w http.ResponseWriter, r *http.Request, err error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		p.write(w, r, tooLarge(mbe.Limit))
		return
	}
	p.write(w, r, &domain.Error{Kind: domain.KindInvalid, Msg: "the body is not valid JSON for this operation",
		Fields: []domain.FieldError{{Path: []string{}, Detail: err.Error()}}, Err: err})
}

// paramError answers a parameter the generated code could not bind.
func (p problemWriter) paramError(w http.ResponseWriter, r *http.Request, err error) {
	var (
		invalid  *rest.InvalidParamFormatError
		required *rest.RequiredParamError
		many     *rest.TooManyValuesForParamError
		param    string
	)
	switch {
	case errors.As(err, &invalid):
		param = invalid.ParamName
	case errors.As(err, &required):
		param = required.ParamName
	case errors.As(err, &many):
		param = many.ParamName
	}
	if param == "" {
		p.write(w, r, &domain.Error{Kind: domain.KindInvalid, Msg: "invalid request", Err: err})
		return
	}
	p.write(w, r, domain.ParamError(param, err.Error()))
}

// problemFallback answers requests no route matches (404, or 405 with Allow) as problems rather
// than ServeMux's plain text.
func problemFallback(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		rec := &statusRecorder{header: http.Header{}, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		status := rec.code
		if allow := rec.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		detail := "no such resource"
		if status == http.StatusMethodNotAllowed {
			detail = fmt.Sprintf("method %s is not allowed here", r.Method)
		}
		writeProblem(w, r, status, detail, nil)
	})
}

// statusRecorder keeps the status and headers ServeMux's own 404/405 handlers set, and drops
// their plain-text body.
type statusRecorder struct {
	header http.Header
	code   int
}

func (s *statusRecorder) Header() http.Header         { return s.header }
func (s *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusRecorder) WriteHeader(code int)        { s.code = code }
