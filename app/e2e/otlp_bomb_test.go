package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"example.com/obsvc/adapters/sqlstore/storetest"
)

// maxBombAlloc bounds the bytes the whole process allocates while it answers one OTLP bomb: the
// answer must come from counting, not from decoding everything first (which allocated 300 MB
// and more for each of these bombs).
const maxBombAlloc = 32 << 20

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestOTLPBombsAreCountedNotDecoded sends the OTLP bodies that cost a few bytes per record or
// attribute, on both stores: each is answered as the contract says (413 for the request, or the
// record rejected in partial_success), stores nothing, and the process allocates less than
// maxBombAlloc while answering it. Not parallel: the allocation is the whole process's.
func TestOTLPBombsAreCountedNotDecoded(t *testing.T) {
	if testing.Short() {
		t.Skip("bodies of megabytes")
	}
	const n = 1_000_000
	// ExportLogsServiceRequest.resource_logs 1, ResourceLogs.scope_logs 2, ScopeLogs.log_records 2,
	// LogRecord.attributes 6, KeyValue.value 2, AnyValue.array_value 5, ArrayValue.values 1.
	records := wrap(repeatField(2, n), 1, 2)
	attrs := wrap(repeatField(6, n), 1, 2, 2)
	arrayAttr := wrap(repeatField(1, n), 1, 2, 2, 6, 2, 5)
	jsonRecords := `{"resourceLogs":[{"scopeLogs":[{"logRecords":[` + strings.Repeat("{},", n-1) + `{}]}]}]}`
	jsonAttrs := `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"attributes":[` + strings.Repeat("{},", n-1) + `{}]}]}]}]}`
	// A resource of 128 attributes of 500 bytes, repeated in 10,000 empty records: 640 MB of
	// attributes to map from 90 KB of body.
	resAttrs := make([]*commonpb.KeyValue, 128)
	for i := range resAttrs {
		resAttrs[i] = kv(fmt.Sprintf("k%03d", i), str(strings.Repeat("v", 500)))
	}
	manyEmpty := make([]*logspb.LogRecord, 10_000)
	for i := range manyEmpty {
		manyEmpty[i] = &logspb.LogRecord{}
	}
	amplified := encodeOTLP(t, ctProto, &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource: &resourcepb.Resource{Attributes: resAttrs}, ScopeLogs: []*logspb.ScopeLogs{{LogRecords: manyEmpty}},
	}}})

	cases := []struct {
		name        string
		contentType string
		body        []byte
		status      int
		says        string // in the status message or the partial success's error message
	}{
		{"1,000,000 empty records", ctProto, records, 413, "at most 10000 log records"},
		{"1,000,000 empty records in JSON", ctJSON, []byte(jsonRecords), 413, "at most 10000 log records"},
		{"a record of 1,000,000 attributes", ctProto, attrs, 200, "logRecords[0]: attributes must hold at most 128 keys"},
		{"a record of 1,000,000 attributes in JSON", ctJSON, []byte(jsonAttrs), 200, "logRecords[0]: attributes must hold at most 128 keys"},
		{"an attribute of 1,000,000 values", ctProto, arrayAttr, 200, "logRecords[0]: attributes hold more values than fit"},
		{"a gzip bomb of zeros", ctProto, make([]byte, 256<<20), 413, "OTLP_MAX_BODY_BYTES"},
		{"resource attributes repeated in 10,000 records", ctProto, amplified, 413, "with their resource attributes"},
	}
	for _, s := range e2eStores() {
		t.Run(s.name, func(t *testing.T) {
			e := newEnv(t, s.open, nil)
			p := e.project("bombs").Id
			for _, c := range cases {
				body := gzipped(t, c.body)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				a := postOTLP(t, http.DefaultClient, e.url, otlpCall{contentType: c.contentType, body: body, gzip: false, headers: map[string]string{"X-Project-Id": p, "Content-Encoding": "gzip"}})
				runtime.ReadMemStats(&after)
				if a.status != c.status {
					t.Errorf("%s: %d %q, want %d", c.name, a.status, a.raw, c.status)
					continue
				}
				said := a.st.GetMessage()
				if a.status == 200 {
					said = a.resp.GetPartialSuccess().GetErrorMessage()
					if got := a.resp.GetPartialSuccess().GetRejectedLogRecords(); got != 1 {
						t.Errorf("%s: %d records rejected, want 1", c.name, got)
					}
				}
				if !strings.Contains(said, c.says) {
					t.Errorf("%s: says %q, want %q in it", c.name, said, c.says)
				}
				alloc := after.TotalAlloc - before.TotalAlloc
				t.Logf("%s: %d bytes of gzip, %d; %.1f MiB allocated", c.name, len(body), a.status, float64(alloc)/(1<<20))
				if alloc > maxBombAlloc {
					t.Errorf("%s: the process allocated %d MiB answering it, want under %d MiB", c.name, alloc>>20, maxBombAlloc>>20)
				}
			}
			if n := storetest.CountEntries(t, e.store, p); n != 0 {
				t.Errorf("%d entries stored from bombs, want none", n)
			}
		})
	}
}

// bombBody is a body of one of the shapes that cost a few bytes per record or value, sized by n
// and depth: many empty records (past the limit), a record of many attributes (past it), an
// attribute array of n values, kvlists nested depth levels in an attribute or in a body, many
// empty resourceLogs or scopeLogs (past the limit), n zero bytes.
func bombBody(protobuf bool, shape uint8, n uint32, depth uint16) []byte {
	const most = 2_000_000
	count := int(n % most)
	d := int(depth%2000) + 1
	nestedPB := func() []byte { // a KeyValue of d nested kvlists: {2: {6: {1: {2: ...}}}}
		var kv []byte
		for range d {
			kv = wrap(kv, 2, 6, 1)
		}
		return kv
	}
	nestedJSON := func() string {
		return strings.Repeat(`{"key":"k","value":{"kvlistValue":{"values":[`, d) + strings.Repeat(`]}}}`, d)
	}
	records := func(json string) string { // one resourceLogs, one scopeLogs
		return `{"resourceLogs":[{"scopeLogs":[{"logRecords":[` + json + `]}]}]}`
	}
	switch shape % 8 {
	case 0:
		if protobuf {
			return wrap(repeatField(2, 10_001+count), 1, 2)
		}
		return []byte(records(strings.Repeat("{},", 10_000+count) + "{}"))
	case 1:
		if protobuf {
			return wrap(repeatField(6, 129+count), 1, 2, 2)
		}
		return []byte(records(`{"attributes":[` + strings.Repeat("{},", 128+count) + "{}]}"))
	case 2:
		if protobuf {
			return wrap(repeatField(1, count), 1, 2, 2, 6, 2, 5)
		}
		return []byte(records(`{"attributes":[{"key":"a","value":{"arrayValue":{"values":[` + strings.TrimSuffix(strings.Repeat("{},", count), ",") + `]}}}]}`))
	case 3:
		if protobuf {
			return wrap(nestedPB(), 1, 2, 2, 6)
		}
		return []byte(records(`{"attributes":[` + nestedJSON() + `]}`))
	case 4:
		if protobuf {
			return wrap(nestedPB(), 1, 2, 2, 5, 6, 1) // a body of a kvlist holding them
		}
		return []byte(records(`{"body":{"kvlistValue":{"values":[` + nestedJSON() + `]}}}`))
	case 5:
		return repeatField(1, 10_001+count)
	case 6:
		return wrap(repeatField(2, 10_001+count), 1)
	}
	return make([]byte, count*32)
}

// maxFuzzAlloc bounds what one fuzzed bomb may make the process allocate on one store.
const maxFuzzAlloc = 48 << 20

// FuzzOTLPBombs sends OTLP bodies of the shapes that cost a few bytes per record or value (see
// bombBody), gzip-compressed, to both stores: never a 5xx or a panic, a refused request stores
// nothing, both stores answer alike, and answering one allocates less than maxFuzzAlloc.
func FuzzOTLPBombs(f *testing.F) {
	servers := newFuzzServers(f)
	for shape := range uint8(8) {
		f.Add(true, shape, uint32(1_000_000), uint16(40))
		f.Add(false, shape, uint32(0), uint16(31))
	}
	f.Fuzz(func(t *testing.T, protobuf bool, shape uint8, n uint32, depth uint16) {
		body := bombBody(protobuf, shape, n, depth)
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(body)
		_ = zw.Close()
		ct := ctJSON
		if protobuf {
			ct = ctProto
		}
		var codes []int
		for _, s := range servers {
			before := s.footprint(t)
			req := httptest.NewRequestWithContext(t.Context(), "POST", "/v1/logs", bytes.NewReader(buf.Bytes()))
			req.Host = "localhost"
			req.Header.Set("Content-Type", ct)
			req.Header.Set("Content-Encoding", "gzip")
			req.Header.Set("X-Project-Id", s.project)
			rec := httptest.NewRecorder()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			s.h.ServeHTTP(rec, req)
			runtime.ReadMemStats(&m1)
			if rec.Code >= 500 {
				t.Fatalf("%s: shape %d of %d bytes answered %d: %.300s", s.name, shape%8, len(body), rec.Code, rec.Body.String())
			}
			if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > maxFuzzAlloc {
				t.Fatalf("%s: shape %d of %d bytes (%d gzip) allocated %d MiB, want under %d", s.name, shape%8, len(body), buf.Len(), alloc>>20, maxFuzzAlloc>>20)
			}
			if rec.Code >= 400 && s.footprint(t) != before {
				t.Fatalf("%s: shape %d answered %d but changed what is stored", s.name, shape%8, rec.Code)
			}
			codes = append(codes, rec.Code)
		}
		if codes[0] != codes[1] {
			t.Fatalf("shape %d: %s answered %d, %s %d", shape%8, servers[0].name, codes[0], servers[1].name, codes[1])
		}
	})
}
