package domain

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind classifies an error by what a caller can do about it. Transports map each kind to their own
// vocabulary (an HTTP status, a Twirp code) in one place.
type Kind uint8

// The kinds of error the domain and its stores report.
const (
	// KindInternal is a fault of the service itself; its details are for logs only.
	KindInternal Kind = iota
	// KindInvalid is input that breaks a rule; Fields say which.
	KindInvalid
	// KindNotFound is an id that names nothing, malformed ids included.
	KindNotFound
	// KindUnknownProject is a write that names a project that does not exist.
	KindUnknownProject
	// KindTooLarge is input over a configured size limit.
	KindTooLarge
	// KindUnavailable is a store that cannot be reached right now; retrying later may work.
	KindUnavailable
	// KindUnauthenticated is a request that does not say who it acts for.
	KindUnauthenticated
	// KindForbidden is a principal acting beyond what its key covers.
	KindForbidden
	// KindConflict is a request that collides with one still in flight (same idempotency key).
	KindConflict
	// KindKeyReused is an idempotency key sent again with a different request.
	KindKeyReused
	// KindRateLimited is a client over its allowed rate; retrying later works.
	KindRateLimited
	// KindExpired is a write of entries already older than their project's retention.
	KindExpired
)

func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindNotFound:
		return "not found"
	case KindUnknownProject:
		return "unknown project"
	case KindTooLarge:
		return "too large"
	case KindUnavailable:
		return "unavailable"
	case KindUnauthenticated:
		return "unauthenticated"
	case KindForbidden:
		return "forbidden"
	case KindConflict:
		return "conflict"
	case KindKeyReused:
		return "idempotency key reused"
	case KindRateLimited:
		return "rate limited"
	case KindExpired:
		return "expired"
	default:
		return "internal"
	}
}

// FieldError names one offending piece of input: a body field by its JSON-pointer path (Path, e.g.
// ["2", "level"]) or a request parameter by name (Param).
type FieldError struct {
	Path   []string
	Param  string
	Detail string
}

// Error is the one error type the domain returns. Msg is safe to show a client; Err, the cause, is
// for logs only.
type Error struct {
	Kind   Kind
	Msg    string
	Fields []FieldError
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Msg)
	for i, f := range e.Fields {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		if f.Param != "" {
			b.WriteString(f.Param)
		} else {
			b.WriteString("/" + strings.Join(f.Path, "/"))
		}
		b.WriteString(" ")
		b.WriteString(f.Detail)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf reports the Kind of the first *Error in err's chain, or KindInternal if there is none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// Errorf returns an *Error of kind k with a client-safe message.
func Errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// Unavailable wraps a store's connection failure as KindUnavailable.
func Unavailable(err error) *Error {
	return &Error{Kind: KindUnavailable, Msg: "the store is unavailable", Err: err}
}

// ParamError is a KindInvalid error about one request parameter.
func ParamError(param, detail string) *Error {
	return &Error{Kind: KindInvalid, Msg: "invalid parameter", Fields: []FieldError{{Param: param, Detail: detail}}}
}

// MissingProjectsError is how a store answers a write naming projects that do not exist: which
// ones, each id once, in the order the batch first names them. It carries no answer for a
// client (KindOf reports it as KindInternal): the service turns it into a KindUnknownProject
// *Error naming the offending entries, at most Limits.MaxFieldErrors of them.
type MissingProjectsError struct {
	IDs []string
}

func (e *MissingProjectsError) Error() string {
	if len(e.IDs) == 1 {
		return "project " + Brief(e.IDs[0]) + " does not exist"
	}
	return fmt.Sprintf("%d projects do not exist", len(e.IDs))
}

// maxBrief bounds how much of a client's value a message quotes.
const maxBrief = 40

// Brief quotes a value a client sent (an id, a header, a cursor) for a message or a log line:
// whole when it is short, else its first maxBrief bytes (whole characters) and an ellipsis, so
// that no client decides the size of an answer or of a log line, nor has its input echoed.
func Brief(v string) string {
	if len(v) <= maxBrief {
		return strconv.Quote(v)
	}
	cut := maxBrief
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return strconv.Quote(v[:cut]) + "…"
}
