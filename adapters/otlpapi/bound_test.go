package otlpapi

import (
	"bytes"
	"strings"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"example.com/obsvc/domain"
)

func sv(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

func kvOf(k string, v *commonpb.AnyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: v}
}

func kvlist(kvs ...*commonpb.KeyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: kvs}}}
}

func array(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
}

// nestedValue is a string in levels-1 kvlists: as an attribute, levels deep below the
// attributes object (the domain allows MaxAttributesDepth).
func nestedValue(levels int) *commonpb.AnyValue {
	v := sv("leaf")
	for range levels - 1 {
		v = kvlist(kvOf("k", v))
	}
	return v
}

// richRequest uses every field of every message the decoders walk, some twice.
func richRequest() *collogspb.ExportLogsServiceRequest {
	record := func(i int) *logspb.LogRecord {
		return &logspb.LogRecord{
			TimeUnixNano: uint64(1_700_000_000_000_000_000 + i), ObservedTimeUnixNano: 7,
			SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_WARN, SeverityText: "WARN",
			Body: kvlist(kvOf("a", array(sv("x"), &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 3}})), kvOf("b", &commonpb.AnyValue{})),
			Attributes: []*commonpb.KeyValue{
				kvOf("user.id", sv("u")), kvOf("n", nestedValue(5)),
				kvOf("d", &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 1.5}}),
				kvOf("bytes", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{1, 2}}}),
			},
			DroppedAttributesCount: 2, Flags: 1,
			TraceId:   bytes.Repeat([]byte{0xab}, 16),
			SpanId:    bytes.Repeat([]byte{0xcd}, 8),
			EventName: "ev",
		}
	}
	return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{
		{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kvOf("service.name", sv("svc")), kvOf("r", array(sv("1"), sv("2")))}},
			ScopeLogs: []*logspb.ScopeLogs{
				{Scope: &commonpb.InstrumentationScope{Name: "scope", Version: "1.0"}, LogRecords: []*logspb.LogRecord{record(0), record(1), {}}},
				{LogRecords: []*logspb.LogRecord{record(2)}},
				{Scope: &commonpb.InstrumentationScope{Name: "only a name"}},
			},
		},
		{},
		{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{record(3)}}}},
	}}
}

func testCounter() *counter {
	return &counter{b: newBounds(domain.DefaultLimits(), DefaultMaxBodyBytes)}
}

// TestBoundedDecodersAgreeWithProto: on a request within the limits, the walking decoders give
// what proto.Unmarshal and protojson give, in both encodings.
func TestBoundedDecodersAgreeWithProto(t *testing.T) {
	want := richRequest()
	pb, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := testCounter().decodeProto(pb)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("protobuf: decoded\n%v\nwant\n%v", got, want)
	}

	js, err := protojson.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var viaJSON collogspb.ExportLogsServiceRequest
	if err := protojson.Unmarshal(js, &viaJSON); err != nil {
		t.Fatal(err)
	}
	got, err = testCounter().decodeJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, &viaJSON) {
		t.Errorf("JSON: decoded\n%v\nwant\n%v", got, &viaJSON)
	}

	// The proto names of the fields, and fields the mapping never reads, are accepted as
	// protojson accepts them.
	alt := `{"resource_logs":[{"schemaUrl":"s","resource":{"attributes":[{"key":"k","value":{"stringValue":"v"}}],"droppedAttributesCount":1},` +
		`"scope_logs":[{"scope":{"name":"n","attributes":[{"key":"x"}]},"log_records":[{"body":{"kvlist_value":{"values":[{"key":"a","value":{"array_value":{"values":[{"intValue":"5"}]}}}]}},"unknown":[1,{"a":2}]}]}]}]}`
	var wantAlt collogspb.ExportLogsServiceRequest
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal([]byte(alt), &wantAlt); err != nil {
		t.Fatal(err)
	}
	got, err = testCounter().decodeJSON([]byte(alt))
	if err != nil {
		t.Fatal(err)
	}
	// What is never decoded: the schema URL, dropped counts and scope attributes.
	wantAlt.ResourceLogs[0].SchemaUrl = ""
	wantAlt.ResourceLogs[0].Resource.DroppedAttributesCount = 0
	wantAlt.ResourceLogs[0].ScopeLogs[0].Scope.Attributes = nil
	if !proto.Equal(got, &wantAlt) {
		t.Errorf("JSON with proto names: decoded\n%v\nwant\n%v", got, &wantAlt)
	}
}

// TestBoundedDecodersRefuseWhatProtoRefuses: malformed bodies stay errors.
func TestBoundedDecodersRefuseWhatProtoRefuses(t *testing.T) {
	for _, body := range []string{
		`[]`, `null`, `{"resourceLogs":5}`, `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":5}]}]}]}`,
		`{"resourceLogs":[],"resource_logs":[]}`, `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"x"}]}]}]}`,
		`{"resourceLogs":[]} {}`, `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{}`,
	} {
		if _, err := testCounter().decodeJSON([]byte(body)); err == nil {
			t.Errorf("JSON %s: decoded, want an error", body)
		}
	}
	for _, body := range [][]byte{
		{0x0a},                               // a truncated length
		{0x00, 0x00},                         // field number 0
		{0x0a, 0x04, 0x12, 0x02, 0x12, 0x05}, // a record longer than its scopeLogs
		{0x0a, 0x06, 0x12, 0x04, 0x12, 0x02, 0x1a, 0x01}, // a record's severity_text cut short
	} {
		if _, err := testCounter().decodeProto(body); err == nil {
			t.Errorf("protobuf % x: decoded, want an error", body)
		}
	}
}

// TestBoundedDecodersRejectRecordsOverTheLimits: a record over the attribute limits is rejected
// by path and decoded as an empty record; the others are decoded in full.
func TestBoundedDecodersRejectRecordsOverTheLimits(t *testing.T) {
	l := domain.DefaultLimits()
	many := make([]*commonpb.KeyValue, l.MaxAttributes+1)
	for i := range many {
		many[i] = kvOf(strings.Repeat("k", i+1), sv("v"))
	}
	long := make([]*commonpb.AnyValue, l.MaxAttributesBytes/2)
	for i := range long {
		long[i] = &commonpb.AnyValue{}
	}
	bodyValues := make([]*commonpb.AnyValue, l.MaxMessageBytes/2)
	for i := range bodyValues {
		bodyValues[i] = &commonpb.AnyValue{}
	}
	ok := &logspb.LogRecord{Body: sv("ok"), Attributes: many[:l.MaxAttributes]}
	req := &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{
		{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{
			ok,
			{Attributes: many},
			{Attributes: []*commonpb.KeyValue{kvOf("deep", nestedValue(l.MaxAttributesDepth+1))}},
			{Attributes: []*commonpb.KeyValue{kvOf("long", array(long...))}},
			{Body: array(bodyValues...)},
			{Attributes: []*commonpb.KeyValue{kvOf("deep enough", nestedValue(l.MaxAttributesDepth))}},
		}}}},
		{Resource: &resourcepb.Resource{Attributes: many}, ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{ok, ok}}}},
	}}
	want := []rejection{
		{[3]int{0, 0, 1}, "attributes", "must hold at most 128 keys"},
		{[3]int{0, 0, 2}, "attributes", "must be nested at most 32 levels deep"},
		{[3]int{0, 0, 3}, "attributes", "hold more values than fit in the limit of their encoding"},
		{[3]int{0, 0, 4}, "body", "holds more values than fit in the message limit"},
		{[3]int{1, 0, 0}, "resource attributes", "must hold at most 128 keys"},
		{[3]int{1, 0, 1}, "resource attributes", "must hold at most 128 keys"},
	}
	pb, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	js, err := protojson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, enc := range []string{"protobuf", "JSON"} {
		c := testCounter()
		var got *collogspb.ExportLogsServiceRequest
		if enc == "protobuf" {
			got, err = c.decodeProto(pb)
		} else {
			got, err = c.decodeJSON(js)
		}
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		if len(c.rejected) != len(want) {
			t.Fatalf("%s: rejected %v, want %v", enc, c.rejected, want)
		}
		for i := range want {
			if c.rejected[i] != want[i] {
				t.Errorf("%s: rejection %d = %v, want %v", enc, i, c.rejected[i], want[i])
			}
		}
		recs := got.ResourceLogs[0].ScopeLogs[0].LogRecords
		if len(recs) != 6 || !proto.Equal(recs[0], ok) || !proto.Equal(recs[1], &logspb.LogRecord{}) || len(recs[5].Attributes) != 1 {
			t.Errorf("%s: records %v, want the first and last in full, the rejected ones empty", enc, recs)
		}
		if got.ResourceLogs[1].Resource != nil {
			t.Errorf("%s: a resource over the limits decoded: %v", enc, got.ResourceLogs[1].Resource)
		}
	}
}

// emptyRecords is one resourceLogs of one scopeLogs of n empty records, 2 bytes each.
func emptyRecords(n int) []byte {
	var sl []byte
	for range n {
		sl = protowire.AppendTag(sl, fScopeLogsRecords, protowire.BytesType)
		sl = protowire.AppendBytes(sl, nil)
	}
	rl := protowire.AppendBytes(protowire.AppendTag(nil, fResourceLogsScope, protowire.BytesType), sl)
	return protowire.AppendBytes(protowire.AppendTag(nil, fRequestResourceLogs, protowire.BytesType), rl)
}

// TestBoundedDecodersStopAtTheLimit: one record past MAX_BATCH_ENTRIES refuses the request, in
// both encodings, with no record past the limit walked (the counts stop at limit + 1).
func TestBoundedDecodersStopAtTheLimit(t *testing.T) {
	l := domain.DefaultLimits()
	for _, n := range []int{l.MaxBatchEntries, l.MaxBatchEntries + 1, 1_000_000} {
		for _, enc := range []string{"protobuf", "JSON"} {
			c := testCounter()
			var err error
			if enc == "protobuf" {
				_, err = c.decodeProto(emptyRecords(n))
			} else {
				_, err = c.decodeJSON([]byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[` + strings.Repeat("{},", n-1) + `{}]}]}]}`))
			}
			switch {
			case n <= l.MaxBatchEntries && err != nil:
				t.Errorf("%s, %d records: %v", enc, n, err)
			case n > l.MaxBatchEntries && domain.KindOf(err) != domain.KindTooLarge:
				t.Errorf("%s, %d records: %v, want KindTooLarge", enc, n, err)
			case c.records > l.MaxBatchEntries+1:
				t.Errorf("%s, %d records: counted %d, want the count to stop at %d", enc, n, c.records, l.MaxBatchEntries+1)
			}
		}
	}
}

// BenchmarkOTLPDecode compares the bounded decoders with decoding the whole body at once (the
// baseline: proto.Unmarshal, protojson) on 1,000 records of a typical shape, in both encodings.
func BenchmarkOTLPDecode(b *testing.B) {
	records := make([]*logspb.LogRecord, 1000)
	for i := range records {
		records[i] = &logspb.LogRecord{
			TimeUnixNano: uint64(1_700_000_000_000_000_000 + i), SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_INFO,
			Body: sv("GET /api/orders/12345 200 in 12ms"),
			Attributes: []*commonpb.KeyValue{
				kvOf("http.request.method", sv("GET")), kvOf("url.path", sv("/api/orders/12345")),
				kvOf("http.response.status_code", &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 200}}),
				kvOf("user.id", sv("u-42")), kvOf("labels", kvlist(kvOf("a", sv("1")), kvOf("b", sv("2")))),
			},
			TraceId: bytes.Repeat([]byte{0xab}, 16), SpanId: bytes.Repeat([]byte{0xcd}, 8),
		}
	}
	req := &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kvOf("service.name", sv("checkout")), kvOf("host.name", sv("h1"))}},
		ScopeLogs: []*logspb.ScopeLogs{{Scope: &commonpb.InstrumentationScope{Name: "app"}, LogRecords: records}},
	}}}
	pb, err := proto.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	js, err := protojson.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("protobuf/baseline", func(b *testing.B) {
		b.SetBytes(int64(len(pb)))
		for b.Loop() {
			var r collogspb.ExportLogsServiceRequest
			if err := proto.Unmarshal(pb, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("protobuf/bounded", func(b *testing.B) {
		b.SetBytes(int64(len(pb)))
		for b.Loop() {
			if _, err := testCounter().decodeProto(pb); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json/baseline", func(b *testing.B) {
		b.SetBytes(int64(len(js)))
		for b.Loop() {
			var r collogspb.ExportLogsServiceRequest
			if err := jsonUnmarshal.Unmarshal(js, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json/bounded", func(b *testing.B) {
		b.SetBytes(int64(len(js)))
		for b.Loop() {
			if _, err := testCounter().decodeJSON(js); err != nil {
				b.Fatal(err)
			}
		}
	})
}
