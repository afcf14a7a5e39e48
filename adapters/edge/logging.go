package edge

import (
	"encoding/binary"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"github.com/google/uuid"
)

// NewLogger logs JSON when out is not a terminal (a log pipeline reads it), text otherwise, and
// names the request a record was made for (ContextHandler).
func NewLogger(out io.Writer, level slog.Leveler) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if f, ok := out.(*os.File); ok && isTerminal(f) {
		return slog.New(ContextHandler{slog.NewTextHandler(out, opts)})
	}
	return slog.New(ContextHandler{slog.NewJSONHandler(out, opts)})
}

// NewBufferedLogger is NewLogger writing through a LogBuffer (the format still chosen by out);
// close writes out what is buffered and must be called before the process exits.
func NewBufferedLogger(out io.Writer, level slog.Leveler) (log *slog.Logger, close func() error) {
	buf := NewLogBuffer(out, LogFlushInterval)
	opts := &slog.HandlerOptions{Level: level}
	if f, ok := out.(*os.File); ok && isTerminal(f) {
		return slog.New(ContextHandler{slog.NewTextHandler(buf, opts)}), buf.Close
	}
	return slog.New(ContextHandler{slog.NewJSONHandler(buf, opts)}), buf.Close
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
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
