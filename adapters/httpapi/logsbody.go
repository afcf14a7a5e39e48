package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"example.com/obsvc/domain"
)

// errEntryShape says checkLogsBody found entries of the wrong shape: the body is well-formed JSON,
// and kin-openapi can list everything wrong with it.
var errEntryShape = errors.New("entries of the wrong shape")

// checkLogsBody checks a POST /logs body against the spec's shape in one pass into small typed
// probes, without building a generic value of the whole body: an array of objects whose known
// fields have the declared JSON types, with project_id and message present, and nothing after
// the array. A valid body then skips kin-openapi's body validation, which made up a quarter of
// the CPU time of ingest (it decodes into interface{} values and walks the schema for each);
// lengths and other rules are the domain's. A body that is not well-formed JSON gets its answer
// here; one with entries of the wrong shape returns errEntryShape, and the caller lets
// kin-openapi name every problem, so answers to bad input stay those of the spec's validator.
func checkLogsBody(body []byte) error {
	var entries []entryProbe
	err := json.Unmarshal(body, &entries)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return bodyError([]string{}, fmt.Sprintf("the body is not valid JSON: %v (at byte %d)", se, se.Offset))
	case err != nil || entries == nil:
		return errEntryShape
	}
	for _, e := range entries {
		if !e.ProjectID.set || !e.Message.set {
			return errEntryShape
		}
	}
	return nil
}

// entryProbe decodes an entry's fields only far enough to know their JSON types.
type entryProbe struct {
	ProjectID jsonString `json:"project_id"`
	Message   jsonString `json:"message"`
	Level     jsonString `json:"level"`
	Subject   jsonString `json:"subject"`
	UserID    jsonString `json:"user_id"`
	Time      jsonInt64  `json:"time"`
}

// jsonString accepts a JSON string (not null) and notes that it was there.
type jsonString struct{ set bool }

func (s *jsonString) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		return errNotString
	}
	s.set = true
	return nil
}

// jsonInt64 accepts a JSON integer that fits int64.
type jsonInt64 struct{}

func (jsonInt64) UnmarshalJSON(b []byte) error {
	if _, err := strconv.ParseInt(string(b), 10, 64); err != nil {
		return errNotInt64
	}
	return nil
}

var (
	errNotString = errors.New("not a string")
	errNotInt64  = errors.New("not an int64")
)

func bodyError(path []string, detail string) error {
	return &domain.Error{Kind: domain.KindInvalid, Msg: "the body is not valid JSON", Fields: []domain.FieldError{{Path: path, Detail: detail}}}
}
