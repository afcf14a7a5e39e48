package domain

import "context"

type requestIDKey struct{}

// WithRequestID returns ctx carrying the id of the request it serves, so that every layer's logs
// and error answers can name it.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the request id ctx carries, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}
