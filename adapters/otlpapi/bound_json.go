package otlpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// OTLP JSON is walked with jsontext's streaming decoder (the JSON v2 proposal's token layer,
// already a dependency through the OpenAPI tooling), which skips what the walk does not read
// without allocating for it; each
// log record and resource attribute that passes the walk is decoded from its own bytes by
// protojson. A field has its JSON name or its proto name (protojson accepts both); unknown
// fields are skipped; a field given twice is an error, as protojson has it.

var jsonUnmarshal = protojson.UnmarshalOptions{DiscardUnknown: true}

type jsonWalker struct {
	src []byte
	dec *jsontext.Decoder
}

func newJSONWalker(src []byte) *jsonWalker {
	// Duplicate names are allowed here and refused for the fields the walk reads (object), as
	// protojson has it. jsontext refuses invalid UTF-8 and nesting past 10,000 levels.
	return &jsonWalker{src: src, dec: jsontext.NewDecoder(bytes.NewBuffer(src), jsontext.AllowDuplicateNames(true))}
}

// depth is how many objects and arrays are open.
func (j *jsonWalker) depth() int { return j.dec.StackDepth() }

// skipTo consumes the input until depth is back at depth: it ends a value a walk stopped inside.
func (j *jsonWalker) skipTo(depth int) error {
	for j.dec.StackDepth() > depth {
		var err error
		switch j.dec.PeekKind() {
		case '}', ']':
			_, err = j.dec.ReadToken()
		default:
			err = j.dec.SkipValue() // a value, or a member's name
		}
		if err != nil {
			return jsonErr(err)
		}
	}
	return nil
}

// valueStart is where the next value starts in src: after the last token, any space and the
// ':' or ',' before the value.
func (j *jsonWalker) valueStart() int {
	i := int(j.dec.InputOffset())
	for i < len(j.src) {
		switch j.src[i] {
		case ' ', '\t', '\r', '\n', ':', ',':
			i++
			continue
		}
		break
	}
	return i
}

// raw consumes the next value and returns its bytes, walking it with fn (nil: skip it).
func (j *jsonWalker) raw(fn func() error) ([]byte, error) {
	start := j.valueStart()
	if fn == nil {
		fn = j.skip
	}
	if err := fn(); err != nil {
		return nil, err
	}
	return j.src[start:j.dec.InputOffset()], nil
}

// skip consumes the next value, whatever it is.
func (j *jsonWalker) skip() error { return jsonErr(j.dec.SkipValue()) }

func jsonErr(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// open consumes the start of an object or array (kind '{' or '['), false for null.
func (j *jsonWalker) open(kind jsontext.Kind) (bool, error) {
	t, err := j.dec.ReadToken()
	if err != nil {
		return false, jsonErr(err)
	}
	switch t.Kind() {
	case 'n':
		return false, nil
	case kind:
		return true, nil
	}
	return false, fmt.Errorf("want %v, not %v", kind, t.Kind())
}

// object consumes an object (or null), calling fn with each key; fn consumes the value. One of
// the fields the walk reads given twice, under either of its names, is an error.
func (j *jsonWalker) object(fn func(key string) error) error {
	ok, err := j.open('{')
	if !ok || err != nil {
		return err
	}
	var seen uint32 // the known fields seen, by fieldBit
	for j.dec.PeekKind() != '}' {
		t, err := j.dec.ReadToken()
		if err != nil {
			return jsonErr(err)
		}
		key := t.String()
		if bit := fieldBit(key); bit != 0 {
			if seen&bit != 0 {
				return fmt.Errorf("duplicate field %q", key)
			}
			seen |= bit
		}
		if err := fn(key); err != nil {
			return err
		}
	}
	_, err = j.dec.ReadToken() // '}'
	return jsonErr(err)
}

// fieldName is the one name of a field the walk reads, under either of its names; "" for others.
func fieldName(key string) string {
	switch key {
	case "resourceLogs", "resource_logs":
		return "resource_logs"
	case "scopeLogs", "scope_logs":
		return "scope_logs"
	case "logRecords", "log_records":
		return "log_records"
	case "arrayValue", "array_value":
		return "array_value"
	case "kvlistValue", "kvlist_value":
		return "kvlist_value"
	case "resource", "scope", "attributes", "body", "name", "version", "key", "value", "values":
		return key
	}
	return ""
}

// fieldBit is a distinct bit for each field fieldName knows, 0 for the others.
func fieldBit(key string) uint32 {
	name := fieldName(key)
	if name == "" {
		return 0
	}
	for i, n := range knownFields {
		if n == name {
			return 1 << i
		}
	}
	return 0
}

var knownFields = [...]string{"resource_logs", "scope_logs", "log_records", "array_value", "kvlist_value", "resource", "scope", "attributes", "body", "name", "version", "key", "value", "values"}

// array consumes an array (or null), calling fn for each element; fn consumes it.
func (j *jsonWalker) array(fn func() error) error {
	ok, err := j.open('[')
	if !ok || err != nil {
		return err
	}
	for j.dec.PeekKind() != ']' {
		if err := fn(); err != nil {
			return err
		}
	}
	_, err = j.dec.ReadToken() // ']'
	return jsonErr(err)
}

// str consumes a string (or null).
func (j *jsonWalker) str() (string, error) {
	t, err := j.dec.ReadToken()
	if err != nil {
		return "", jsonErr(err)
	}
	switch t.Kind() {
	case 'n':
		return "", nil
	case '"':
		return t.String(), nil
	}
	return "", fmt.Errorf("want a string, not %v", t.Kind())
}

// decodeJSON decodes an ExportLogsServiceRequest in OTLP JSON within c's bounds.
func (c *counter) decodeJSON(src []byte) (*collogspb.ExportLogsServiceRequest, error) {
	if first := bytes.TrimLeft(src, " \t\r\n"); len(first) == 0 || first[0] != '{' {
		return nil, errors.New("want an object")
	}
	j := newJSONWalker(src)
	req := &collogspb.ExportLogsServiceRequest{}
	err := j.object(func(key string) error {
		if fieldName(key) != "resource_logs" {
			return j.skip()
		}
		return j.array(func() error {
			if err := c.addResource(); err != nil {
				return err
			}
			rl, err := c.jsonResourceLogs(j, len(req.ResourceLogs))
			if rl != nil {
				req.ResourceLogs = append(req.ResourceLogs, rl)
			}
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	if _, err := j.dec.ReadToken(); !errors.Is(err, io.EOF) { // nothing after the object
		return nil, errors.New("data after the request object")
	}
	return req, nil
}

func (c *counter) jsonResourceLogs(j *jsonWalker, i int) (*logspb.ResourceLogs, error) {
	rl := &logspb.ResourceLogs{}
	var (
		over     *walk
		resBytes int
		scopes   [][]byte // the scopeLogs, walked once the resource is known
	)
	err := j.object(func(key string) error {
		switch fieldName(key) {
		case "resource":
			rl.Resource = &resourcepb.Resource{}
			return j.object(func(key string) error {
				if fieldName(key) != "attributes" {
					return j.skip()
				}
				attrs := 0
				return j.array(func() error {
					if over != nil {
						return j.skip()
					}
					w := c.attrWalk()
					if attrs++; attrs > c.b.attrs {
						w.detail = tooManyAttributes(c.b.attrs)
						over = w
						return j.skip()
					}
					depth := j.depth()
					raw, err := j.raw(func() error { return c.jsonKeyValue(j, w, 1) })
					if errors.Is(err, errOver) {
						over = w
						return j.skipTo(depth)
					}
					if err != nil {
						return err
					}
					if err := c.addValues(w.n); err != nil {
						return err
					}
					kv := &commonpb.KeyValue{}
					if err := jsonUnmarshal.Unmarshal(raw, kv); err != nil {
						return err
					}
					rl.Resource.Attributes = append(rl.Resource.Attributes, kv)
					resBytes += len(raw)
					return nil
				})
			})
		case "scope_logs":
			return j.array(func() error {
				raw, err := j.raw(nil)
				scopes = append(scopes, raw)
				return err
			})
		}
		return j.skip()
	})
	if err != nil {
		return nil, err
	}
	if over != nil {
		rl.Resource = nil
	}
	for _, raw := range scopes {
		if err := c.addScope(); err != nil {
			return nil, err
		}
		sl, err := c.jsonScopeLogs(newJSONWalker(raw), [3]int{i, len(rl.ScopeLogs)}, resBytes, over)
		if sl != nil {
			rl.ScopeLogs = append(rl.ScopeLogs, sl)
		}
		if err != nil {
			return nil, err
		}
	}
	return rl, nil
}

func (c *counter) jsonScopeLogs(j *jsonWalker, p [3]int, resBytes int, resOver *walk) (*logspb.ScopeLogs, error) {
	sl := &logspb.ScopeLogs{}
	err := j.object(func(key string) error {
		switch fieldName(key) {
		case "scope":
			sl.Scope = &commonpb.InstrumentationScope{}
			return j.object(func(key string) error {
				switch fieldName(key) {
				case "name":
					s, err := j.str()
					sl.Scope.Name = s
					return err
				case "version":
					s, err := j.str()
					sl.Scope.Version = s
					return err
				}
				return j.skip()
			})
		case "log_records":
			return j.array(func() error {
				p[2] = len(sl.LogRecords)
				if err := c.addRecord(); err != nil {
					return err
				}
				start := j.valueStart()
				lr, err := c.jsonRecord(j, p, resOver)
				if err != nil {
					return err
				}
				if err := c.addExpanded(int(j.dec.InputOffset())-start, resBytes); err != nil {
					return err
				}
				sl.LogRecords = append(sl.LogRecords, lr)
				return nil
			})
		}
		return j.skip()
	})
	return sl, err
}

// jsonRecord walks one record and decodes it, or rejects it (an empty record in its place).
func (c *counter) jsonRecord(j *jsonWalker, p [3]int, resOver *walk) (*logspb.LogRecord, error) {
	if resOver != nil {
		if err := j.skip(); err != nil {
			return nil, err
		}
		c.rejected = append(c.rejected, rejection{path: p, field: "resource " + resOver.field, detail: resOver.detail})
		return &logspb.LogRecord{}, nil
	}
	var (
		over     *walk
		attrWalk = c.attrWalk()
		body     = c.bodyWalk()
	)
	depth := j.depth() // outside the record's object, where the skip after a limit ends
	raw, err := j.raw(func() error {
		return j.object(func(key string) error {
			switch fieldName(key) {
			case "attributes":
				attrs := 0
				return j.array(func() error {
					if attrs++; attrs > c.b.attrs {
						attrWalk.detail = tooManyAttributes(c.b.attrs)
						over = attrWalk
						return errOver
					}
					err := c.jsonKeyValue(j, attrWalk, 1)
					if errors.Is(err, errOver) {
						over = attrWalk
					}
					return err
				})
			case "body":
				err := c.jsonAnyValue(j, body, 0)
				if errors.Is(err, errOver) {
					over = body
				}
				return err
			}
			return j.skip()
		})
	})
	if errors.Is(err, errOver) {
		// The walk stopped inside the record: skip to its end.
		if err := j.skipTo(depth); err != nil {
			return nil, err
		}
		c.rejected = append(c.rejected, rejection{path: p, field: over.field, detail: over.detail})
		return &logspb.LogRecord{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := c.addValues(attrWalk.n + body.n); err != nil {
		return nil, err
	}
	lr := &logspb.LogRecord{}
	if err := jsonUnmarshal.Unmarshal(raw, lr); err != nil {
		return nil, err
	}
	return lr, nil
}

// jsonKeyValue walks a KeyValue whose value is at depth (1: a top-level attribute).
func (c *counter) jsonKeyValue(j *jsonWalker, w *walk, depth int) error {
	if err := w.value(); err != nil {
		return err
	}
	return j.object(func(key string) error {
		if fieldName(key) != "value" {
			return j.skip()
		}
		return c.jsonAnyValue(j, w, depth)
	})
}

// jsonAnyValue walks an AnyValue at depth: an array or kvlist in it is refused at w.maxDepth.
func (c *counter) jsonAnyValue(j *jsonWalker, w *walk, depth int) error {
	if err := w.value(); err != nil {
		return err
	}
	return j.object(func(key string) error {
		name := fieldName(key)
		if name != "array_value" && name != "kvlist_value" {
			return j.skip()
		}
		if err := w.container(depth); err != nil {
			return err
		}
		return j.object(func(key string) error {
			if fieldName(key) != "values" {
				return j.skip()
			}
			return j.array(func() error {
				if name == "kvlist_value" {
					return c.jsonKeyValue(j, w, depth+1)
				}
				return c.jsonAnyValue(j, w, depth+1)
			})
		})
	})
}
