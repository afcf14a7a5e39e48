package edge

import (
	"io"
	"log/slog"
	"os"

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

// newRequestID makes the id of a request that brought none: a UUIDv7, time-ordered.
func newRequestID() string { return uuid.Must(uuid.NewV7()).String() }
