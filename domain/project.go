package domain

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Project owns log entries. Its timestamps carry the precision every store keeps (microseconds,
// UTC), so a project reads back exactly as it was returned when written.
type Project struct {
	ID        string
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ProjectInput is what a client may set on a project.
type ProjectInput struct {
	Name string
}

func (l Limits) validateProject(in ProjectInput) error {
	var detail string
	switch n := utf8.RuneCountInString(in.Name); {
	case n == 0:
		detail = "must not be empty"
	case n > l.MaxNameChars:
		detail = "must be at most " + strconv.Itoa(l.MaxNameChars) + " characters"
	case !utf8.ValidString(in.Name):
		detail = "must be valid UTF-8"
	case strings.IndexByte(in.Name, 0) >= 0:
		detail = noNUL
	case strings.TrimSpace(in.Name) == "":
		detail = "must not be only white space"
	default:
		return nil
	}
	return &Error{Kind: KindInvalid, Msg: "invalid project", Fields: []FieldError{{Path: []string{"name"}, Detail: detail}}}
}

// storeTime rounds t to what every store keeps.
func storeTime(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}
