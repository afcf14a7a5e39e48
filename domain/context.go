package domain

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
)

// The bounds of a context question (the API contract states them).
const (
	// DefaultContextEntries is how many entries each side of a context holds when the question
	// names no number; MaxContextEntries the most it may ask for on each side.
	DefaultContextEntries = 50
	MaxContextEntries     = 1000
)

// ContextQuery asks for one entry of a project and the entries around it in the listing order,
// (Time, ID): Before entries before it and After entries after it, nil meaning
// DefaultContextEntries. Query narrows the neighbours only, never the entry itself.
type ContextQuery struct {
	ProjectID string
	ID        string
	Before    *int
	After     *int
	// Query is the text of the query parameter, as sent; Parsed is it parsed, set by the
	// service before a store sees the question.
	Query  *string
	Parsed Query
	// Now is the time of the question (Unix ms): an entry older than the project's retention
	// at Now is gone, the entry itself included. The service sets it.
	Now int64
}

// Neighbours is the filter the neighbours of q's entry must match: the project and q's query.
func (q ContextQuery) Neighbours() LogFilter {
	return LogFilter{ProjectID: q.ProjectID, Query: q.Query, Parsed: q.Parsed}
}

// LogContext is an entry and its neighbours as a store streams them. Before yields the entries
// before Entry, oldest first, and After those after it; each may be ranged over once, Before
// first, and only inside the callback that received the LogContext.
type LogContext struct {
	Entry  LogEntry
	Before iter.Seq2[LogEntry, error]
	After  iter.Seq2[LogEntry, error]
}

// ContextFunc consumes a context. Its error is returned by LogContext unchanged.
type ContextFunc func(LogContext) error

// validateContext checks a context question and fills in its defaults.
func (l Limits) validateContext(q ContextQuery) (ContextQuery, error) {
	var fields []FieldError
	side := func(n *int, param string) *int {
		if n == nil {
			d := DefaultContextEntries
			return &d
		}
		if *n < 0 || *n > MaxContextEntries {
			fields = append(fields, FieldError{Param: param, Detail: "must be from 0 to " + strconv.Itoa(MaxContextEntries)})
		}
		return n
	}
	q.Before = side(q.Before, "before")
	q.After = side(q.After, "after")
	if q.Query != nil {
		f, err := l.validateFilter(q.Neighbours())
		var invalid *Error
		if errors.As(err, &invalid) && invalid.Kind == KindInvalid {
			fields = append(fields, invalid.Fields...)
		} else if err != nil {
			return q, err
		}
		q.Parsed = f.Parsed
	}
	if len(fields) > 0 {
		return q, &Error{Kind: KindInvalid, Msg: "invalid parameter", Fields: fields}
	}
	return q, nil
}

// entryNotFound is the answer for an id that names no entry the project still holds.
func entryNotFound(id string) error {
	return Errorf(KindNotFound, "no entry %s in this project", Brief(id))
}

// LogContext hands fn the project's entry q.ID with the entries around it (see ContextQuery),
// streamed from the store. An id that names no entry of the project, or one older than the
// project's retention, is KindNotFound, as is a project that does not exist. Authorisation
// and the read share are those of a listing.
func (s *Service) LogContext(ctx context.Context, q ContextQuery, fn ContextFunc) error {
	q, err := s.limits.validateContext(q)
	if err != nil {
		return err
	}
	now, release, err := s.openRead(ctx, q.ProjectID)
	if err != nil {
		return err
	}
	q.Now = now
	if !validID(q.ID) {
		release()
		return entryNotFound(q.ID)
	}
	defer release() // after the context has been streamed
	err = s.store.LogContext(ctx, q, fn)
	if KindOf(err) == KindNotFound {
		return entryNotFound(q.ID)
	}
	if err != nil {
		return fmt.Errorf("log context: %w", err)
	}
	return nil
}
