package httpapi

import (
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"example.com/obsvc/domain"
)

// readLogsBody reads the whole body of POST /logs, decoded by its Content-Encoding (gzip, or
// none), refusing more than limit bytes of it after decoding without reading further: a small
// gzip body that inflates without bound costs at most limit bytes and is a 413, and a body that
// is not valid gzip (a truncated one, say) is a 400. Another coding is a 415.
//
// adapters/otlpapi reads its bodies the same way (its readBody), but an adapter may not import
// another (make arch-check), and what the two share is a few lines of the standard library.
func readLogsBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	coding := strings.ToLower(strings.TrimSpace(strings.Join(r.Header.Values("Content-Encoding"), ",")))
	var (
		src io.Reader
		gz  bool
	)
	switch coding {
	case "", "identity":
		if r.ContentLength > limit {
			return nil, tooLarge(limit)
		}
		src = http.MaxBytesReader(w, r.Body, limit)
	case "gzip", "x-gzip":
		gz = true
		// The compressed body is capped too: gzip adds a few bytes per 32 KiB at worst.
		compressed := limit + limit/64 + 1024
		if r.ContentLength > compressed {
			return nil, tooLarge(limit)
		}
		zr, err := gzip.NewReader(http.MaxBytesReader(w, r.Body, compressed))
		if err != nil {
			return nil, readBodyError(err, limit, gz)
		}
		defer zr.Close()
		src = zr
	default:
		return nil, &httpError{status: http.StatusUnsupportedMediaType,
			detail: fmt.Sprintf("Content-Encoding %q is not supported: send gzip or identity", bound(coding, 64))}
	}
	body, err := io.ReadAll(io.LimitReader(src, limit+1))
	if err != nil {
		return nil, readBodyError(err, limit, gz)
	}
	if int64(len(body)) > limit {
		if gz {
			return nil, domain.Errorf(domain.KindTooLarge, "the body is larger than %d bytes after decompression", limit)
		}
		return nil, tooLarge(limit)
	}
	return body, nil
}

// readBodyError answers err, what reading a body of limit bytes reported.
func readBodyError(err error, limit int64, gz bool) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(limit)
	}
	var corrupt flate.CorruptInputError
	if gz && (errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) || errors.As(err, &corrupt)) {
		return &domain.Error{Kind: domain.KindInvalid, Msg: "the body is not valid gzip: " + err.Error(), Err: err}
	}
	return &domain.Error{Kind: domain.KindInvalid, Msg: "the body could not be read", Err: err}
}
