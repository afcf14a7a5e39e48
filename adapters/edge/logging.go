package edge

import (
	"context"
	"io"
	"log/slog"
	"os"
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

// ContextHandler adds the request id a context carries to every log record made with it, so the
// store's and adapters' logs name the request they served.
type ContextHandler struct{ slog.Handler }

func (h ContextHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := requestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h ContextHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return ContextHandler{h.Handler.WithAttrs(as)}
}

func (h ContextHandler) WithGroup(name string) slog.Handler {
	return ContextHandler{h.Handler.WithGroup(name)}
}
