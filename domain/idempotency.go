package domain

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"time"
)

// MaxIdempotencyKeyLen is the longest idempotency key a client may send.
const MaxIdempotencyKeyLen = 255

// IdempotencyRecord is what a store keeps of a batch written under an idempotency key, in the
// same transaction as its entries: enough to answer a retry exactly as the first time.
type IdempotencyRecord struct {
	// Scope is whose key it is: the API key and the batch's projects, as 64 hex digits (see
	// idempotencyScope). Two clients never share one.
	Scope string
	Key   string
	// Fingerprint identifies the batch's content; a retry must carry the same.
	Fingerprint string
	Created     int
	CreatedAt   time.Time
}

// Created is the outcome of CreateLogs.
type Created struct {
	N int
	// Replayed is true when this answers a retry of a batch stored before.
	Replayed bool
}

// validIdempotencyKey accepts 1..255 printable ASCII characters.
func validIdempotencyKey(k string) bool {
	if k == "" || len(k) > MaxIdempotencyKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// idempotencyScope names the key space of a batch: the principal's API key and the distinct
// projects of its entries. It is the hex SHA-256 of scopeText, so that what a store keeps and
// indexes is 64 characters however many projects a batch names (an admin batch may name
// thousands, more than any index entry holds).
func idempotencyScope(p Principal, entries []LogEntry) string {
	sum := sha256.Sum256([]byte(scopeText(p, entries)))
	return hex.EncodeToString(sum[:])
}

// scopeText is "KEYID|ID,ID,..." with the distinct project ids sorted. The first release stored
// this text itself as the scope; the stores' migration 00003 turns such rows into
// idempotencyScope by hashing the text, so it must never change. It is unambiguous: a key id
// is hex and the project ids are validated UUIDs before a scope is made, so neither holds '|'
// or ','.
func scopeText(p Principal, entries []LogEntry) string {
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.ProjectID)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return p.KeyID + "|" + strings.Join(ids, ",")
}

// fingerprint hashes a batch as the client sent it (before defaults), field by field with
// lengths and presence marks, so that no two different batches share one.
func fingerprint(in []LogInput) string {
	h := sha256.New()
	var buf [8]byte
	str := func(s *string) {
		if s == nil {
			h.Write([]byte{0})
			return
		}
		h.Write([]byte{1})
		binary.BigEndian.PutUint64(buf[:], uint64(len(*s)))
		h.Write(buf[:])
		h.Write([]byte(*s))
	}
	for _, e := range in {
		str(&e.ProjectID)
		str(e.Message)
		str(e.Level)
		str(e.Subject)
		str(e.UserID)
		if e.Time == nil {
			h.Write([]byte{0})
		} else {
			h.Write([]byte{1})
			binary.BigEndian.PutUint64(buf[:], uint64(*e.Time))
			h.Write(buf[:])
		}
		// The fields added later follow a mark of their own, 2, and only when one is sent: a
		// batch without them keeps the fingerprint it had before they existed (so a retry across
		// the upgrade still replays), and the mark never starts an entry, whose first byte is 1.
		if e.Attributes != nil || e.TraceID != nil || e.SpanID != nil {
			h.Write([]byte{2})
			if e.Attributes == nil {
				h.Write([]byte{0})
			} else {
				a := string(e.Attributes)
				str(&a)
			}
			str(e.TraceID)
			str(e.SpanID)
		}
		// SeverityText (OTLP's severity_text beside a severity_number), likewise: mark 3, only
		// when sent.
		if e.SeverityText != nil {
			h.Write([]byte{3})
			str(e.SeverityText)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// inFlight is the set of idempotency keys whose first request this process is still handling.
type inFlight struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

// claim marks key as in flight; false when it already is.
func (f *inFlight) claim(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys == nil {
		f.keys = map[string]struct{}{}
	}
	if _, busy := f.keys[key]; busy {
		return false
	}
	f.keys[key] = struct{}{}
	return true
}

func (f *inFlight) release(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.keys, key)
}
