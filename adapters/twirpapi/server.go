// Package twirpapi is the Twirp adapter: it serves the generated Haberdasher interface by calling
// the domain and maps domain errors to Twirp errors in one function.
package twirpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"

	"github.com/twitchtv/twirp"
	"google.golang.org/protobuf/encoding/protojson"

	"example.com/obsvc/api/haberdasher"
	"example.com/obsvc/domain"
)

type server struct {
	svc *domain.Service
	log *slog.Logger
}

// MakeHat implements haberdasher.Haberdasher.
func (s *server) MakeHat(ctx context.Context, size *haberdasher.Size) (*haberdasher.Hat, error) {
	hat, err := s.svc.MakeHat(ctx, size.GetInches())
	if err != nil {
		return nil, toTwirp(ctx, s.log, err)
	}
	return &haberdasher.Hat{Inches: hat.Inches, Color: hat.Color, Name: hat.Name}, nil
}

// DefaultMaxBodyBytes is the default cap of a Twirp request body: a Size is a few bytes in
// either encoding, so anything near this is not a request this service serves.
const DefaultMaxBodyBytes = 4 << 10

// Options configure the Twirp handler.
type Options struct {
	// MaxBodyBytes caps a request body (DefaultMaxBodyBytes when zero); a larger one is refused
	// with a Twirp error before the generated code reads it.
	MaxBodyBytes int64
	// Logger receives the causes of internal errors, which clients never see.
	Logger *slog.Logger
	// Hooks run after the adapter's own (metrics).
	Hooks []*twirp.ServerHooks
}

// NewHandler returns the Twirp Haberdasher service; mount it at PathPrefix.
func NewHandler(svc *domain.Service, opts Options) http.Handler {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	limit := opts.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	gen := haberdasher.NewHaberdasherServer(&server{svc: svc, log: log}, twirp.WithServerHooks(twirp.ChainHooks(opts.Hooks...)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			gen.ServeHTTP(w, r) // the generated server answers bad_route
			return
		}
		body, err := readBody(w, r, limit)
		if err == nil {
			err = checkJSONFields(r, body)
		}
		if err != nil {
			WriteError(w, r, err, log)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		gen.ServeHTTP(w, r)
	})
}

// readBody reads a request body of at most limit bytes. Over the limit is KindTooLarge, which
// the caller answers before the generated code has read anything into memory.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	// Made only when needed: formatting it for every call was a measurable share of MakeHat.
	tooLarge := func() error {
		return domain.Errorf(domain.KindTooLarge, "the request body is larger than %d bytes", limit)
	}
	if r.ContentLength > limit {
		return nil, tooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge()
	case err != nil:
		return nil, &domain.Error{Kind: domain.KindInvalid, Msg: "the request body could not be read", Err: err}
	}
	return body, nil
}

// checkJSONFields names the field of a JSON Size whose value protojson cannot take (an inches out
// of int32's range, a string that is no number, ...): the generated code would answer only that
// the request could not be decoded. A body that is not a JSON object is left to the generated
// code, which answers malformed.
func checkJSONFields(r *http.Request, body []byte) error {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return nil
	}
	// A body the generated code's decoder (the same options) takes has no field to name: the
	// common case costs one decode, not a decode of the object and one per field.
	if (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, &haberdasher.Size{}) == nil {
		return nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return nil
	}
	for name, raw := range fields {
		one, err := json.Marshal(map[string]json.RawMessage{name: raw})
		if err != nil {
			return nil
		}
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(one, &haberdasher.Size{}); err != nil {
			return domain.ParamError(name, fmt.Sprintf("must be a whole number from %d to %d", int32(-1<<31), int32(1<<31-1)))
		}
	}
	return nil
}

// PathPrefix is where the Haberdasher service is mounted.
const PathPrefix = haberdasher.HaberdasherPathPrefix
