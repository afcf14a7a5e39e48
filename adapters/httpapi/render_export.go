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
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	entry := toEntry(e)
	if err := enc.Encode(&entry); err != nil {
		return nil, fmt.Errorf("render entry: %w", err)
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}
