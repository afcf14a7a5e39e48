package otlpapi

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	"example.com/obsvc/domain"
)

// Attribute keys the mapping reads or writes (OpenTelemetry semantic conventions where they exist).
const (
	attrServiceName  = "service.name"
	attrUserID       = "user.id"
	attrEndUserID    = "enduser.id"
	attrScopeName    = "otel.scope.name"
	attrScopeVersion = "otel.scope.version"
	attrEventName    = "event_name"
)

// How many problems an error_message names before it only counts the rest.
const maxNamed = 5

// batch is a request turned into the domain's inputs, with where each record came from and the
// warnings of the mapping (ids of the wrong length, dropped).
type batch struct {
	records  []domain.LogInput
	paths    [][3]int // resourceLogs, scopeLogs, logRecords index of each record
	warnings []string
	warned   int
	// rejected are the records refused while decoding (see bounds), in path order: they are
	// not among records.
	rejected []rejection
}

func path(p [3]int) string {
	return "resourceLogs[" + strconv.Itoa(p[0]) + "].scopeLogs[" + strconv.Itoa(p[1]) + "].logRecords[" + strconv.Itoa(p[2]) + "]"
}

func (b *batch) warn(p [3]int, msg string) {
	b.warned++
	if len(b.warnings) < maxNamed {
		b.warnings = append(b.warnings, path(p)+": "+msg)
	}
}

// otlpField names a field of an entry as the record it came from has it.
var otlpField = map[string]string{
	"message":    "body",
	"level":      "severityText",
	"time":       "timeUnixNano",
	"subject":    "resource attribute service.name",
	"user_id":    "attribute user.id",
	"trace_id":   "traceId",
	"span_id":    "spanId",
	"attributes": "attributes",
}

// message is the partial_success error_message: the first rejected records by path and why,
// then the mapping's warnings; "" when there is neither.
func (b *batch) message(res domain.PartialResult) string {
	var named []rejection
	for _, p := range res.Problems {
		idx, err := strconv.Atoi(p.Path[0])
		if err != nil || idx < 0 || idx >= len(b.paths) {
			continue
		}
		field := p.Path[1]
		if f, ok := otlpField[field]; ok {
			field = f
		}
		named = append(named, rejection{path: b.paths[idx], field: field, detail: p.Detail})
	}
	// Both lists are in path order; the first of them together are named.
	named = append(named, b.rejected...)
	slices.SortStableFunc(named, func(x, y rejection) int { return slices.Compare(x.path[:], y.path[:]) })
	var parts []string
	for _, r := range named[:min(len(named), maxNamed)] {
		parts = append(parts, r.text())
	}
	rejected := res.Rejected + len(b.rejected)
	if more := rejected - min(rejected, maxNamed); more > 0 {
		parts = append(parts, strconv.Itoa(more)+" more records rejected")
	}
	parts = append(parts, b.warnings...)
	if more := b.warned - len(b.warnings); more > 0 {
		parts = append(parts, strconv.Itoa(more)+" more warnings")
	}
	return strings.Join(parts, "; ")
}

// toBatch maps every log record of req to an entry input (see README, the "OTLP mapping" row:
// it is the contract). fromJSON says the ids were read by protojson, which decodes the hex of OTLP
// JSON as if it were base64 (see hexID). limits are the service's own (Service.Limits, as
// configured): a severity_text becomes the level only when the service would accept it as one.
// rejected are the records refused while decoding, in path order: they are left out.
func toBatch(req *collogspb.ExportLogsServiceRequest, fromJSON bool, limits domain.Limits, rejected []rejection) *batch {
	b := &batch{rejected: rejected}
	n := 0
	for _, rl := range req.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			n += len(sl.GetLogRecords())
		}
	}
	b.records = make([]domain.LogInput, 0, n)
	b.paths = make([][3]int, 0, n)
	for i, rl := range req.GetResourceLogs() {
		resAttrs := rl.GetResource().GetAttributes()
		var subject *string
		for _, kv := range resAttrs {
			if kv.GetKey() == attrServiceName {
				s := valueString(kv.GetValue())
				subject = &s
			}
		}
		for j, sl := range rl.GetScopeLogs() {
			scope := sl.GetScope()
			for k, lr := range sl.GetLogRecords() {
				p := [3]int{i, j, k}
				if len(rejected) > 0 && rejected[0].path == p {
					rejected = rejected[1:]
					continue
				}
				in := domain.LogInput{Subject: subject}
				attrs := make(map[string]any, len(resAttrs)+len(lr.GetAttributes())+4)
				putAll(attrs, resAttrs)
				if name := scope.GetName(); name != "" {
					attrs[attrScopeName] = name
				}
				if v := scope.GetVersion(); v != "" {
					attrs[attrScopeVersion] = v
				}
				putAll(attrs, lr.GetAttributes())
				for _, kv := range lr.GetAttributes() {
					if kv.GetKey() == attrUserID || (kv.GetKey() == attrEndUserID && in.UserID == nil) {
						s := valueString(kv.GetValue())
						in.UserID = &s
					}
				}
				if ev := lr.GetEventName(); ev != "" {
					if _, clash := attrs[attrEventName]; !clash {
						attrs[attrEventName] = ev
					}
				}
				if len(attrs) > 0 {
					raw, err := json.Marshal(attrs)
					if err == nil { // every value is a string, number, bool, nil, slice or map
						in.Attributes = raw
					}
				}
				in.Time = recordTime(lr)
				in.Level = level(lr, limits)
				if st := lr.GetSeverityText(); st != "" {
					in.SeverityText = &st
				}
				msg := bodyText(lr.GetBody())
				in.Message = &msg
				if id, ok := hexID(lr.GetTraceId(), 16, fromJSON); ok {
					in.TraceID = id
				} else {
					b.warn(p, "traceId dropped: not 16 bytes (32 hex digits)")
				}
				if id, ok := hexID(lr.GetSpanId(), 8, fromJSON); ok {
					in.SpanID = id
				} else {
					b.warn(p, "spanId dropped: not 8 bytes (16 hex digits)")
				}
				b.records = append(b.records, in)
				b.paths = append(b.paths, p)
			}
		}
	}
	return b
}

// hexID turns an id as decoded into lower-case hex: nil and true when it is absent (empty or all
// zero, which OTLP defines as absent), nil and false when it has the wrong length.
//
// OTLP JSON carries ids as hex, where protobuf's JSON mapping has base64 for bytes, and protojson
// decodes the hex as base64. Hex digits are base64 digits, and 32 (16) of them decode to 24 (12)
// bytes that encode back to the very same text, so the hex the client sent is recovered exactly.
func hexID(raw []byte, size int, fromJSON bool) (*string, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	var text string
	if fromJSON {
		text = base64.StdEncoding.EncodeToString(raw)
		if len(text) != 2*size || !isHex(text) {
			return nil, false
		}
		text = strings.ToLower(text)
	} else {
		if len(raw) != size {
			return nil, false
		}
		text = hex.EncodeToString(raw)
	}
	if strings.Trim(text, "0") == "" {
		return nil, true
	}
	return &text, true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// recordTime is time_unix_nano in milliseconds (floor), else observed_time_unix_nano, else nil
// (the server's time).
func recordTime(lr *logspb.LogRecord) *int64 {
	ns := lr.GetTimeUnixNano()
	if ns == 0 {
		ns = lr.GetObservedTimeUnixNano()
	}
	if ns == 0 {
		return nil
	}
	ms := int64(ns / 1e6)
	return &ms
}

// severityNames are the level of each range of four severity numbers, 1-4 onwards.
var severityNames = [6]string{"trace", "debug", "info", "warn", "error", "fatal"}

// level is the range name of severity_number, else severity_text when it is a level a service
// with limits accepts, else nil (the default level). The service makes it canonical
// (domain.CanonicalLevel) like a level sent to POST /logs, and keeps severity_text as the
// attribute severity_text when it differs from that level beyond case, so a severity_text the
// service would refuse as a level never costs the record.
func level(lr *logspb.LogRecord, limits domain.Limits) *string {
	if n := int(lr.GetSeverityNumber()); n >= 1 && n <= 24 {
		return &severityNames[(n-1)/4]
	}
	if st := lr.GetSeverityText(); st != "" && limits.EntryFieldProblem("level", st) == "" {
		return &st
	}
	return nil
}

// bodyText is the message of a record: a string body as it is, any other body as canonical
// JSON, "" when there is none.
func bodyText(v *commonpb.AnyValue) string {
	if v == nil || v.GetValue() == nil {
		return ""
	}
	if s, ok := v.GetValue().(*commonpb.AnyValue_StringValue); ok {
		return s.StringValue
	}
	raw, err := json.Marshal(jsonValue(v))
	if err != nil {
		return ""
	}
	return string(raw)
}

// valueString is a value as a string: a string as it is, anything else as JSON.
func valueString(v *commonpb.AnyValue) string {
	if s, ok := v.GetValue().(*commonpb.AnyValue_StringValue); ok {
		return s.StringValue
	}
	return bodyText(v)
}

func putAll(m map[string]any, kvs []*commonpb.KeyValue) {
	for _, kv := range kvs {
		m[kv.GetKey()] = jsonValue(kv.GetValue())
	}
}

// jsonValue is an AnyValue as a value encoding/json encodes: bytes as base64 (as OTLP JSON has
// them), a double that JSON cannot hold (NaN, ±Inf) as its name, an empty value as null.
func jsonValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		if math.IsNaN(x.DoubleValue) || math.IsInf(x.DoubleValue, 0) {
			return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
		}
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		vs := x.ArrayValue.GetValues()
		out := make([]any, len(vs))
		for i, e := range vs {
			out[i] = jsonValue(e)
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		out := make(map[string]any, len(x.KvlistValue.GetValues()))
		putAll(out, x.KvlistValue.GetValues())
		return out
	}
	return nil
}
