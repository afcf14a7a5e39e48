package domain

import (
	"strings"
	"time"
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
	detail := checkChars(in.Name, 1, l.MaxNameChars)
	if detail == "" && strings.TrimSpace(in.Name) == "" {
		detail = "must not be only white space"
	}
	if detail == "" {
		return nil
	}
	return &Error{Kind: KindInvalid, Msg: "invalid project", Fields: []FieldError{{Path: []string{"name"}, Detail: detail}}}
}

// storeTime rounds t to what every store keeps.
func storeTime(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}
