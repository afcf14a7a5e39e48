package otlpapi

import (
	"errors"
	"strconv"
	"unicode/utf8"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"example.com/obsvc/domain"
)

// A request is decoded within bounds, counting as it goes, so that what a request costs is paid
// only up to what the service would accept: a body of a few bytes per record or per attribute
// otherwise turns into hundreds of bytes of decoded messages each, and into entries and JSON.
//
// The decoders below walk the wire (protobuf through protowire, OTLP JSON through a token pass)
// down to the log records and decode each record on its own (proto.Unmarshal, protojson), once
// its walk has counted what it holds:
//   - past MAX_BATCH_ENTRIES records (resourceLogs, scopeLogs) the request is refused at once,
//     413, as before but without decoding the rest;
//   - a record with more attributes than MAX_ATTRIBUTES, more attribute values (nested ones
//     included) than fit in MAX_ATTRIBUTES_BYTES, attributes nested deeper than the domain
//     allows, or a body with more values than fit in the message limit, is never decoded: it
//     is rejected in partial_success, as the service would reject it after decoding; a
//     resource whose attributes break those rules rejects every record under it;
//   - the request as a whole holds at most one attribute or body value per valueBytes bytes of
//     the body cap, and its records with their resource's attributes (which each record
//     repeats) at most expandFactor times the body cap, 413 beyond: the decoded messages and
//     the mapped entries stay a small multiple of the cap.
//
// Only what the mapping reads is decoded: resource attributes, scope name and version, the log
// records. The rest (schema URLs, entity references, scope attributes) is walked over, never
// allocated.

// valueBytes is the fewest body bytes a request carries per attribute or body value on average.
const valueBytes = 32

// expandFactor bounds the records with their resource attributes, as a multiple of the body cap.
const expandFactor = 4

// maxBodyDepth bounds how deeply a record's body nests (it is stored as JSON text, so the
// attributes' depth limit does not apply); deeper rejects the record.
const maxBodyDepth = 1000

// bounds are what one request may hold.
type bounds struct {
	records    int // records, and resourceLogs and scopeLogs each
	attrs      int // attributes of a record or of a resource
	attrValues int // attribute values of a record or resource, nested ones included
	attrDepth  int // nesting of attributes, the attributes object being level 1
	bodyValues int // values of a record's body
	values     int // attribute and body values of the whole request
	expanded   int // bytes of the records with their resource attributes
}

func newBounds(l domain.Limits, bodyCap int64) bounds {
	return bounds{
		records:    l.MaxBatchEntries,
		attrs:      l.MaxAttributes,
		attrValues: max(l.MaxAttributesBytes/2, 1), // each value is at least 2 bytes of JSON
		attrDepth:  l.MaxAttributesDepth,
		bodyValues: max(l.MaxMessageBytes/2, 1),
		values:     int(min(bodyCap/valueBytes, 1<<40)),
		expanded:   int(min(bodyCap*expandFactor, 1<<50)),
	}
}

// derivedBodyCap is the most a request within limits can take on the wire: each record a message
// and attributes at their limits (twice over, for protobuf's framing of small values) and 1 KiB
// of the other fields, and 1 MiB for the resources and scopes.
func derivedBodyCap(l domain.Limits) int64 {
	perRecord := 2*int64(l.MaxMessageBytes) + 2*int64(l.MaxAttributesBytes) + 1<<10
	return int64(l.MaxBatchEntries)*perRecord + 1<<20
}

// rejection is a record refused while decoding: it is not decoded, and not handed to the domain.
type rejection struct {
	path   [3]int
	field  string // as the record has it (attributes, body)
	detail string
}

func (r rejection) text() string { return path(r.path) + ": " + r.field + " " + r.detail }

// counter carries the counts of one request.
type counter struct {
	b                          bounds
	resources, scopes, records int
	values, expanded           int
	rejected                   []rejection
}

func (c *counter) tooLarge(what string, limit int, why string) error {
	return domain.Errorf(domain.KindTooLarge, "a request holds at most %d %s%s; this one holds more", limit, what, why)
}

func (c *counter) addResource() error {
	if c.resources++; c.resources > c.b.records {
		return c.tooLarge("resourceLogs", c.b.records, " (MAX_BATCH_ENTRIES)")
	}
	return nil
}

func (c *counter) addScope() error {
	if c.scopes++; c.scopes > c.b.records {
		return c.tooLarge("scopeLogs", c.b.records, " (MAX_BATCH_ENTRIES)")
	}
	return nil
}

func (c *counter) addRecord() error {
	if c.records++; c.records > c.b.records {
		return c.tooLarge("log records", c.b.records, "")
	}
	return nil
}

// addExpanded counts a record of size bytes under a resource whose attributes take resBytes.
func (c *counter) addExpanded(size, resBytes int) error {
	if c.expanded += size + resBytes; c.expanded > c.b.expanded {
		return domain.Errorf(domain.KindTooLarge, "the log records with their resource attributes (repeated in each) come to over %d bytes (%d times OTLP_MAX_BODY_BYTES)", c.b.expanded, expandFactor)
	}
	return nil
}

func (c *counter) addValues(n int) error {
	if c.values += n; c.values > c.b.values {
		return c.tooLarge("attribute and body values", c.b.values, " (one per "+strconv.Itoa(valueBytes)+" bytes of OTLP_MAX_BODY_BYTES)")
	}
	return nil
}

// errOver ends the walk of a record or resource that breaks a limit; walk.field and walk.detail
// say which.
var errOver = errors.New("over a limit")

// walk counts the values under one record's attributes, its body or a resource's attributes.
type walk struct {
	n, max   int // values seen, and the most allowed
	maxDepth int // the depth at which a container is refused
	field    string
	detail   string
}

func (w *walk) value() error {
	if w.n++; w.n > w.max {
		w.detail = "hold more values than fit in the limit of their encoding"
		if w.field == "body" {
			w.detail = "holds more values than fit in the message limit"
		}
		return errOver
	}
	return nil
}

func (w *walk) container(depth int) error {
	if depth >= w.maxDepth {
		w.detail = "must be nested at most " + strconv.Itoa(w.maxDepth) + " levels deep"
		return errOver
	}
	return nil
}

func (c *counter) attrWalk() *walk {
	return &walk{max: c.b.attrValues, maxDepth: c.b.attrDepth, field: "attributes"}
}

func (c *counter) bodyWalk() *walk {
	return &walk{max: c.b.bodyValues, maxDepth: maxBodyDepth, field: "body"}
}

func tooManyAttributes(limit int) string {
	return "must hold at most " + strconv.Itoa(limit) + " keys"
}

// ---- protobuf ----

// eachField calls fn with every field of the message b; the value is the field's bytes for
// length-delimited fields, nil for the others.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return protowire.ParseError(m)
		}
		var v []byte
		if typ == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(b[n:])
		}
		if err := fn(num, typ, v); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}

// Field numbers of the OTLP messages (opentelemetry/proto/{collector/logs,logs,common,resource}/v1).
const (
	fRequestResourceLogs = 1 // ExportLogsServiceRequest.resource_logs
	fResourceLogsRes     = 1 // ResourceLogs.resource
	fResourceLogsScope   = 2 // ResourceLogs.scope_logs
	fResourceAttributes  = 1 // Resource.attributes
	fScopeLogsScope      = 1 // ScopeLogs.scope
	fScopeLogsRecords    = 2 // ScopeLogs.log_records
	fScopeName           = 1 // InstrumentationScope.name
	fScopeVersion        = 2 // InstrumentationScope.version
	fRecordBody          = 5 // LogRecord.body
	fRecordAttributes    = 6 // LogRecord.attributes
	fKeyValueValue       = 2 // KeyValue.value
	fAnyArray            = 5 // AnyValue.array_value
	fAnyKvlist           = 6 // AnyValue.kvlist_value
	fListValues          = 1 // ArrayValue.values, KeyValueList.values
)

// isMessage says a field is the length-delimited one numbered num: a field of another wire type
// is an unknown field to proto.Unmarshal, and so to the walk.
func isMessage(num protowire.Number, typ protowire.Type, want protowire.Number) bool {
	return num == want && typ == protowire.BytesType
}

// decodeProto decodes an ExportLogsServiceRequest in protobuf within c's bounds.
func (c *counter) decodeProto(b []byte) (*collogspb.ExportLogsServiceRequest, error) {
	req := &collogspb.ExportLogsServiceRequest{}
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if !isMessage(num, typ, fRequestResourceLogs) {
			return nil
		}
		if err := c.addResource(); err != nil {
			return err
		}
		rl, err := c.protoResourceLogs(v, len(req.ResourceLogs))
		if rl != nil {
			req.ResourceLogs = append(req.ResourceLogs, rl)
		}
		return err
	})
	return req, err
}

func (c *counter) protoResourceLogs(b []byte, i int) (*logspb.ResourceLogs, error) {
	rl := &logspb.ResourceLogs{}
	var (
		over     *walk // the resource's attributes break a limit: every record is rejected
		attrs    int
		resBytes int
	)
	// The resource first, wherever it is: whether its records are decoded depends on it.
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if !isMessage(num, typ, fResourceLogsRes) {
			return nil
		}
		if rl.Resource == nil {
			rl.Resource = &resourcepb.Resource{}
		}
		return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
			if over != nil || !isMessage(num, typ, fResourceAttributes) {
				return nil
			}
			w := c.attrWalk()
			if attrs++; attrs > c.b.attrs {
				w.detail = tooManyAttributes(c.b.attrs)
				over = w
				return nil
			}
			err := c.protoKeyValue(v, w, 1)
			if errors.Is(err, errOver) {
				over = w
				return nil
			}
			if err != nil {
				return err
			}
			if err := c.addValues(w.n); err != nil {
				return err
			}
			kv := &commonpb.KeyValue{}
			if err := proto.Unmarshal(v, kv); err != nil {
				return err
			}
			rl.Resource.Attributes = append(rl.Resource.Attributes, kv)
			resBytes += len(v)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if over != nil {
		rl.Resource = nil
	}
	err = eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if !isMessage(num, typ, fResourceLogsScope) {
			return nil
		}
		if err := c.addScope(); err != nil {
			return err
		}
		sl, err := c.protoScopeLogs(v, [3]int{i, len(rl.ScopeLogs)}, resBytes, over)
		if sl != nil {
			rl.ScopeLogs = append(rl.ScopeLogs, sl)
		}
		return err
	})
	return rl, err
}

func (c *counter) protoScopeLogs(b []byte, p [3]int, resBytes int, resOver *walk) (*logspb.ScopeLogs, error) {
	sl := &logspb.ScopeLogs{}
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case isMessage(num, typ, fScopeLogsScope):
			if sl.Scope == nil {
				sl.Scope = &commonpb.InstrumentationScope{}
			}
			return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
				if typ != protowire.BytesType || (num != fScopeName && num != fScopeVersion) {
					return nil
				}
				if !utf8.Valid(v) {
					return errors.New("string field contains invalid UTF-8")
				}
				if num == fScopeName {
					sl.Scope.Name = string(v)
				} else {
					sl.Scope.Version = string(v)
				}
				return nil
			})
		case isMessage(num, typ, fScopeLogsRecords):
			p[2] = len(sl.LogRecords)
			if err := c.addRecord(); err != nil {
				return err
			}
			if err := c.addExpanded(len(v), resBytes); err != nil {
				return err
			}
			lr, err := c.protoRecord(v, p, resOver)
			if lr != nil {
				sl.LogRecords = append(sl.LogRecords, lr)
			}
			return err
		}
		return nil
	})
	return sl, err
}

// protoRecord decodes one record, or rejects it (an empty record in its place) when its walk
// breaks a limit.
func (c *counter) protoRecord(b []byte, p [3]int, resOver *walk) (*logspb.LogRecord, error) {
	if resOver != nil {
		c.rejected = append(c.rejected, rejection{path: p, field: "resource " + resOver.field, detail: resOver.detail})
		return &logspb.LogRecord{}, nil
	}
	var (
		attrs     int
		over      *walk
		attrWalk  = c.attrWalk()
		bodyWalks int
	)
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case isMessage(num, typ, fRecordAttributes):
			if attrs++; attrs > c.b.attrs {
				attrWalk.detail = tooManyAttributes(c.b.attrs)
				over = attrWalk
				return errOver
			}
			if err := c.protoKeyValue(v, attrWalk, 1); err != nil {
				if errors.Is(err, errOver) {
					over = attrWalk
				}
				return err
			}
		case isMessage(num, typ, fRecordBody):
			w := c.bodyWalk()
			w.n = bodyWalks // a repeated body merges: its values add up
			if err := c.protoAnyValue(v, w, 0); err != nil {
				if errors.Is(err, errOver) {
					over = w
				}
				return err
			}
			bodyWalks = w.n
		}
		return nil
	})
	if errors.Is(err, errOver) {
		c.rejected = append(c.rejected, rejection{path: p, field: over.field, detail: over.detail})
		return &logspb.LogRecord{}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := c.addValues(attrWalk.n + bodyWalks); err != nil {
		return nil, err
	}
	lr := &logspb.LogRecord{}
	if err := proto.Unmarshal(b, lr); err != nil {
		return nil, err
	}
	return lr, nil
}

// protoKeyValue walks a KeyValue whose value is at depth (1: a top-level attribute).
func (c *counter) protoKeyValue(b []byte, w *walk, depth int) error {
	if err := w.value(); err != nil {
		return err
	}
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if !isMessage(num, typ, fKeyValueValue) {
			return nil
		}
		return c.protoAnyValue(v, w, depth)
	})
}

// protoAnyValue walks an AnyValue at depth: an array or kvlist in it is refused at w.maxDepth.
func (c *counter) protoAnyValue(b []byte, w *walk, depth int) error {
	if err := w.value(); err != nil {
		return err
	}
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		kvlist := isMessage(num, typ, fAnyKvlist)
		if !kvlist && !isMessage(num, typ, fAnyArray) {
			return nil
		}
		if err := w.container(depth); err != nil {
			return err
		}
		return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
			if !isMessage(num, typ, fListValues) {
				return nil
			}
			if kvlist {
				return c.protoKeyValue(v, w, depth+1)
			}
			return c.protoAnyValue(v, w, depth+1)
		})
	})
}
