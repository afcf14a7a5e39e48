// Package otlpapi serves OTLP/HTTP logs (POST /v1/logs): the OpenTelemetry protocol's
// ExportLogsServiceRequest as protobuf or as OTLP JSON, identity or gzip, answered in the
// request's content type with an ExportLogsServiceResponse or a google.rpc.Status.
//
// It is a hand-written handler, not part of the generated strict server: the strict server
// decodes JSON bodies only, and an OTLP body is protobuf as often as JSON, possibly gzip, with a
// size cap that applies after decompression. openapi.yaml still describes the route.
//
// The decoding is the protocol's own generated Go types (go.opentelemetry.io/proto/otlp); what a
// record becomes, and which records are refused, the domain decides (Service.CreateLogsPartial).
package otlpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"sync"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"

	"example.com/obsvc/adapters/internal/httpbody"
	"example.com/obsvc/domain"
)

// Path is where OTLP/HTTP exporters send logs.
const Path = "/v1/logs"

// ProjectHeader names the project of an export sent with an admin key (domain.Names.Project).
const ProjectHeader = "X-Project-Id"

// DefaultMaxBodyBytes is the default cap on a request body after decompression, 4 MiB: the
// default largest message of gRPC, and so of the OTLP/gRPC receivers exporters already batch
// for. A decode costs a small multiple of it (see bounds), and DefaultMaxDecodes of them must
// fit in a service of 100 MiB.
const DefaultMaxBodyBytes = 4 << 20

// DefaultMaxDecodes and DefaultMaxDecodesPerClient are how many requests are read and decoded
// at once, in all and for one client.
const (
	DefaultMaxDecodes          = 4
	DefaultMaxDecodesPerClient = 2
)

// The two content types of OTLP/HTTP.
const (
	contentProtobuf = "application/x-protobuf"
	contentJSON     = "application/json"
)

// Options configure the handler.
type Options struct {
	// MaxBodyBytes caps a body after decompression (DefaultMaxBodyBytes when zero).
	MaxBodyBytes int64
	// MaxDecodes and MaxDecodesPerClient cap the requests being read, decoded and stored at once,
	// in all (503 beyond) and per client as ClientID names it (429 beyond); zero is the default
	// and below zero no cap.
	MaxDecodes          int
	MaxDecodesPerClient int
	// ClientID names whom a request counts against for MaxDecodesPerClient; nil counts every
	// request against one client.
	ClientID func(*http.Request) string
	Logger   *slog.Logger
	// OnExport, when set, is told of each export the handler answered 200: how many records it
	// stored (0 when it replays an earlier request) and how many it rejected.
	OnExport func(stored, rejected int)
}

// NewHandler returns the handler of POST /v1/logs.
func NewHandler(svc *domain.Service, opts Options) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxDecodes == 0 {
		opts.MaxDecodes = DefaultMaxDecodes
	}
	if opts.MaxDecodesPerClient == 0 {
		opts.MaxDecodesPerClient = DefaultMaxDecodesPerClient
	}
	if opts.ClientID == nil {
		opts.ClientID = func(*http.Request) string { return "" }
	}
	// The body cap is never more than a request within the service's limits can take.
	opts.MaxBodyBytes = min(opts.MaxBodyBytes, derivedBodyCap(svc.Limits()))
	return &handler{svc: svc, opts: opts, slots: slots{total: opts.MaxDecodes, perClient: opts.MaxDecodesPerClient, byClient: map[string]int{}}}
}

type handler struct {
	svc   *domain.Service
	opts  Options
	slots slots
}

// slots count the requests being decoded, in all and per client.
type slots struct {
	total, perClient int
	mu               sync.Mutex
	inUse            int
	byClient         map[string]int // only clients with a request in a slot
}

// take claims a slot for client, or says why there is none: release gives it back.
func (s *slots) take(client string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.perClient > 0 && s.byClient[client] >= s.perClient:
		return nil, domain.Errorf(domain.KindRateLimited, "this client has %d OTLP requests being decoded, its limit (OTLP_MAX_DECODES_PER_CLIENT); retry when one has finished", s.perClient)
	case s.total > 0 && s.inUse >= s.total:
		return nil, domain.Errorf(domain.KindUnavailable, "the server is decoding %d OTLP requests, its limit (OTLP_MAX_DECODES); retry shortly", s.total)
	}
	s.inUse++
	s.byClient[client]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.inUse--
		if s.byClient[client]--; s.byClient[client] == 0 {
			delete(s.byClient, client)
		}
	}, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ct := requestContentType(r)
	if ct == "" {
		h.fail(w, r, &statusError{status: http.StatusUnsupportedMediaType, msg: "Content-Type must be application/x-protobuf or application/json"})
		return
	}
	// The slot is held from the first byte read to the answer: the body, its decoding and the
	// entries made of it are what a request costs.
	release, err := h.slots.take(h.opts.ClientID(r))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer release()
	body, err := h.readBody(w, r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	c := &counter{b: newBounds(h.svc.Limits(), h.opts.MaxBodyBytes)}
	var req *collogspb.ExportLogsServiceRequest
	if ct == contentProtobuf {
		req, err = c.decodeProto(body)
	} else {
		req, err = c.decodeJSON(body)
	}
	if err != nil {
		if domain.KindOf(err) != domain.KindTooLarge {
			err = domain.Errorf(domain.KindInvalid, "the body is not an ExportLogsServiceRequest in %s: %v", ct, err)
		}
		h.fail(w, r, err)
		return
	}
	batch := toBatch(req, ct == contentJSON, h.svc.Limits(), c.rejected)
	sum := sha256.Sum256(body)
	res, err := h.svc.CreateLogsPartial(r.Context(), domain.PartialBatch{
		ProjectID:      r.Header.Get(ProjectHeader),
		Records:        batch.records,
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
		Fingerprint:    "otlp-logs-sha256:" + hex.EncodeToString(sum[:]),
	})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if h.opts.OnExport != nil {
		stored := res.Stored
		if res.Replayed {
			stored = 0
		}
		h.opts.OnExport(stored, res.Rejected+len(c.rejected))
	}
	resp := &collogspb.ExportLogsServiceResponse{}
	if msg := batch.message(res); msg != "" || res.Rejected+len(c.rejected) > 0 {
		resp.PartialSuccess = &collogspb.ExportLogsPartialSuccess{RejectedLogRecords: int64(res.Rejected + len(c.rejected)), ErrorMessage: validUTF8(msg)}
	}
	write(w, ct, http.StatusOK, resp)
}

// requestContentType is the request's OTLP content type, "" when it is neither.
func requestContentType(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	switch mt {
	case contentProtobuf, contentJSON:
		return mt
	}
	return ""
}

// readBody reads the whole body, decompressed, refusing more than MaxBodyBytes of it before
// reading further: a small gzip body that inflates without bound costs at most the cap.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := httpbody.Read(w, r, h.opts.MaxBodyBytes, "OTLP_MAX_BODY_BYTES")
	if uc := (*httpbody.UnsupportedCodingError)(nil); errors.As(err, &uc) {
		return nil, &statusError{status: http.StatusUnsupportedMediaType, msg: uc.Error()}
	}
	return body, err
}
