package domain

import (
	"encoding/base64"
	"encoding/json"
)

// Cursor is a position in a listing: the (Time, ID) of the last entry of a page and the order the
// listing runs in. Clients see it only as an opaque string (see EncodeCursor).
type Cursor struct {
	Time int64
	ID   string
	Desc bool
}

type cursorWire struct {
	T int64  `json:"t"`
	I string `json:"i"`
	D bool   `json:"d,omitempty"`
}

// EncodeCursor renders c as opaque base64url text.
func EncodeCursor(c Cursor) string {
	b, _ := json.Marshal(cursorWire{T: c.Time, I: c.ID, D: c.Desc}) // a struct of plain fields always marshals
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor parses text made by EncodeCursor; anything else is KindInvalid on "cursor".
func DecodeCursor(text string) (Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return Cursor{}, ParamError("cursor", "is not a cursor this service issued")
	}
	var w cursorWire
	if err := json.Unmarshal(b, &w); err != nil || !validID(w.I) {
		return Cursor{}, ParamError("cursor", "is not a cursor this service issued")
	}
	return Cursor{Time: w.T, ID: w.I, Desc: w.D}, nil
}
