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
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"example.com/obsvc/domain"
)

// Path is where OTLP/HTTP exporters send logs.
const Path = "/v1/logs"

// DefaultMaxBodyBytes is the default cap on a request body after decompression, 64 MiB.
const DefaultMaxBodyBytes = 64 << 20

// The two content types of OTLP/HTTP.
const (
	contentProtobuf = "application/x-protobuf"
	contentJSON     = "application/json"
)

// Options configure the handler.
type Options struct {
	// MaxBodyBytes caps a body after decompression (DefaultMaxBodyBytes when zero).
	MaxBodyBytes int64
	Logger       *slog.Logger
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
	return &handler{svc: svc, opts: opts}
}

type handler struct {
	svc  *domain.Service
	opts Options
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ct := requestContentType(r)
	if ct == "" {
		h.fail(w, r, &statusError{status: http.StatusUnsupportedMediaType, msg: "Content-Type must be application/x-protobuf or application/json"})
		return
	}
	body, err := h.readBody(w, r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	req := &collogspb.ExportLogsServiceRequest{}
	if ct == contentProtobuf {
		err = proto.Unmarshal(body, req)
	} else {
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, req)
	}
	if err != nil {
		h.fail(w, r, domain.Errorf(domain.KindInvalid, "the body is not an ExportLogsServiceRequest in %s: %v", ct, err))
		return
	}
	batch := toBatch(req, ct == contentJSON, h.svc.Limits())
	sum := sha256.Sum256(body)
	res, err := h.svc.CreateLogsPartial(r.Context(), domain.PartialBatch{
		ProjectID:      r.Header.Get("X-Project-Id"),
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
		h.opts.OnExport(stored, res.Rejected)
	}
	resp := &collogspb.ExportLogsServiceResponse{}
	if msg := batch.message(res); msg != "" || res.Rejected > 0 {
		resp.PartialSuccess = &collogspb.ExportLogsPartialSuccess{RejectedLogRecords: int64(res.Rejected), ErrorMessage: validUTF8(msg)}
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
	limit := h.opts.MaxBodyBytes
	// The compressed body is capped too (gzip adds a few bytes per 32 KiB at worst).
	var src io.Reader = http.MaxBytesReader(w, r.Body, limit+limit/64+1024)
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, h.readError(err)
		}
		defer zr.Close()
		src = zr
	default:
		return nil, &statusError{status: http.StatusUnsupportedMediaType, msg: fmt.Sprintf("Content-Encoding %q is not supported: send gzip or identity", enc)}
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength <= limit {
		buf.Grow(int(r.ContentLength))
	}
	n, err := buf.ReadFrom(io.LimitReader(src, limit+1))
	if err != nil {
		return nil, h.readError(err)
	}
	if n > limit {
		return nil, tooLarge(limit)
	}
	return buf.Bytes(), nil
}

func (h *handler) readError(err error) error {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return tooLarge(h.opts.MaxBodyBytes)
	}
	if errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || isFlateError(err) {
		return domain.Errorf(domain.KindInvalid, "the body is not valid gzip: %v", err)
	}
	// The client went away or stalled: nothing useful can be answered, but say so.
	return domain.Errorf(domain.KindInvalid, "reading the body failed: %v", err)
}

func tooLarge(limit int64) error {
	return domain.Errorf(domain.KindTooLarge, "the body is over %d bytes after decompression (OTLP_MAX_BODY_BYTES)", limit)
}
