package edge

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
)

// maxRequestIDLen caps a client's X-Request-Id.
const maxRequestIDLen = 128

// ValidRequestID accepts 1..maxRequestIDLen visible ASCII characters: safe to log and echo.
func ValidRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// newRequestID makes the id of a request that brought none: a UUIDv7 (RFC 9562), time-ordered to
// the millisecond, its 74 other bits from math/rand/v2's generator (ChaCha8, per thread, seeded by
// the system). An id names a request in the log; it is no secret and needs no system entropy,
// whereas uuid.NewV7 reads crypto/rand and takes a process-wide lock for each one.
func newRequestID() string {
	var u uuid.UUID
	ms := uint64(time.Now().UnixMilli())
	hi, lo := rand.Uint64(), rand.Uint64()
	binary.BigEndian.PutUint64(u[0:8], ms<<16|0x7000|hi&0x0fff)  // 48 bits of time, version 7, 12 random
	binary.BigEndian.PutUint64(u[8:16], lo&^(0b11<<62)|0b10<<62) // variant 10, 62 random
	return u.String()
}

type requestIDKey struct{}

// withRequestID returns ctx carrying the id of the request it serves, so that the logs made
// with it name the request (ContextHandler). Answers name it from the response's X-Request-Id
// header, which Observe sets before any handler runs.
func withRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// requestID returns the request id ctx carries, or "".
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}
