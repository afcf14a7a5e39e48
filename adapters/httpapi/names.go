package httpapi

import "example.com/obsvc/domain"

// The headers of this transport that the service's answers name.
const (
	// IdempotencyHeader carries a write's idempotency key.
	IdempotencyHeader = "Idempotency-Key"
	// ResumeHeader carries the position a live tail resumes after (the SSE reconnect).
	ResumeHeader = "Last-Event-ID"
	// RetryAfterHeader tells a refused client when to retry.
	RetryAfterHeader = "Retry-After"
)

// Names are this transport's names for the parts of a request the service's answers name; the
// composition root hands them to domain.NewService.
func Names() domain.Names {
	return domain.Names{IdempotencyKey: IdempotencyHeader, Resume: ResumeHeader, RetryAfter: RetryAfterHeader}
}
