// Package httpbody reads a request body whole, decoded by its Content-Encoding and capped after
// decoding: what POST /logs, OTLP's /v1/logs and the Elasticsearch bulk API share. Each of them
// answers in its own format, so Read reports what went wrong as a domain error (KindTooLarge,
// KindInvalid) or an *UnsupportedCodingError, and the adapter words its answer.
//
// It lives under adapters/internal so that those adapters may share it without importing one
// another (make arch-check): it holds no adapter's state, only the standard library's readers.
package httpbody

import (
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"example.com/obsvc/domain"
)

// UnsupportedCodingError is a Content-Encoding other than gzip and identity.
type UnsupportedCodingError struct {
	Coding string // as sent, lowered, at most 64 bytes
}

func (e *UnsupportedCodingError) Error() string {
	return fmt.Sprintf("Content-Encoding %q is not supported: send gzip or identity", e.Coding)
}

// Read reads r's whole body, gunzipped when its Content-Encoding is gzip (or x-gzip), refusing
// more than limit bytes of it after decoding before reading further: a small gzip body that
// inflates without bound costs at most limit bytes. Over the limit it is KindTooLarge, with a
// message naming setting (the configuration that sets limit); a body that is not valid gzip (a
// truncated one, say) KindInvalid; another coding an *UnsupportedCodingError. The compressed
// body is capped too (gzip adds a few bytes per 32 KiB at worst).
func Read(w http.ResponseWriter, r *http.Request, limit int64, setting string) ([]byte, error) {
	coding := strings.ToLower(strings.TrimSpace(strings.Join(r.Header.Values("Content-Encoding"), ",")))
	var src io.Reader
	switch coding {
	case "", "identity":
		if r.ContentLength > limit {
			return nil, tooLarge(limit, setting)
		}
		src = http.MaxBytesReader(w, r.Body, limit+1)
	case "gzip", "x-gzip":
		compressed := limit + limit/64 + 1024
		if r.ContentLength > compressed {
			return nil, tooLarge(limit, setting)
		}
		zr, err := gzip.NewReader(http.MaxBytesReader(w, r.Body, compressed))
		if err != nil {
			return nil, readError(err, limit, setting)
		}
		defer zr.Close()
		src = zr
	default:
		if len(coding) > 64 {
			coding = coding[:64]
		}
		return nil, &UnsupportedCodingError{Coding: coding}
	}
	size := int64(64 << 10)
	if r.ContentLength > 0 {
		size = r.ContentLength
	}
	buf, err := readAtMost(src, limit+1, size)
	if err != nil {
		return nil, readError(err, limit, setting)
	}
	if int64(len(buf)) > limit {
		return nil, tooLarge(limit, setting)
	}
	return buf, nil
}

// readAtMost reads src to its end or to most bytes, into a buffer that starts at size and
// doubles, never past most: a body that inflates without bound costs most bytes and the half
// of it copied last, not twice the cap that bytes.Buffer's growth would reach.
func readAtMost(src io.Reader, most, size int64) ([]byte, error) {
	buf := make([]byte, 0, min(max(size, 512), most))
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) >= most {
				return buf, nil
			}
			buf = slices.Grow(buf, int(min(int64(cap(buf)), most-int64(len(buf)))))
			buf = buf[:len(buf):min(cap(buf), int(most))]
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// readError is the domain error of err, what reading a body of at most limit bytes reported.
func readError(err error, limit int64, setting string) error {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return tooLarge(limit, setting)
	}
	var corrupt flate.CorruptInputError
	if errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) || errors.As(err, &corrupt) {
		return &domain.Error{Kind: domain.KindInvalid, Msg: "the body is not valid gzip: " + err.Error(), Err: err}
	}
	// The client went away or stalled: nothing useful can be answered, but say so.
	return &domain.Error{Kind: domain.KindInvalid, Msg: "reading the body failed: " + err.Error(), Err: err}
}

func tooLarge(limit int64, setting string) error {
	return domain.Errorf(domain.KindTooLarge, "the body is over %d bytes after decompression (%s)", limit, setting)
}
