package httpapi

import (
	"errors"
	"net/http"

	"example.com/obsvc/adapters/internal/httpbody"
)

// readLogsBody reads the whole body of POST /logs, decoded by its Content-Encoding (gzip, or
// none), refusing more than limit bytes of it after decoding without reading further: a small
// gzip body that inflates without bound costs at most limit bytes and is a 413, and a body that
// is not valid gzip (a truncated one, say) is a 400. Another coding is a 415.
func readLogsBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := httpbody.Read(w, r, limit, "MAX_BODY_BYTES")
	if uc := (*httpbody.UnsupportedCodingError)(nil); errors.As(err, &uc) {
		return nil, &httpError{status: http.StatusUnsupportedMediaType, detail: uc.Error()}
	}
	return body, err
}
