package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"

	"example.com/obsvc/domain"
)

// RenderEntry renders one entry exactly as GET /logs renders each element of its array (the
// same conversion and the same encoder settings), for the alert notifications' sample entries.
func RenderEntry(e domain.LogEntry) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := encodeEntry(&b, e); err != nil {
		return nil, fmt.Errorf("render entry: %w", err)
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// encodeEntry appends e to b as GET /logs renders an entry, HTML characters left as they are,
// and a newline (JSON escapes every newline inside, so the entry is one line).
func encodeEntry(b *bytes.Buffer, e domain.LogEntry) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	entry := toEntry(e)
	return enc.Encode(&entry)
}
