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
	// RetentionDays is how many days the project keeps its entries; nil keeps them forever.
	RetentionDays *int
}

// ProjectInput is what a client may set on a project. RetentionDays not Set means the default
// retention on CreateProject and keep-forever on UpdateProject (a replacement that leaves it out
// can only lengthen retention, never delete data).
type ProjectInput struct {
	Name          string
	RetentionDays Optional[int]
}

func (l Limits) validateProject(in ProjectInput) error {
	detail := checkChars(in.Name, 1, l.MaxNameChars)
	if detail == "" && strings.TrimSpace(in.Name) == "" {
		detail = "must not be only white space"
	}
	var fields []FieldError
	if detail != "" {
		fields = append(fields, FieldError{Path: []string{"name"}, Detail: detail})
	}
	if d := checkRetention(in.RetentionDays.Value); d != "" {
		fields = append(fields, FieldError{Path: []string{"retention_days"}, Detail: d})
	}
	if len(fields) == 0 {
		return nil
	}
	return &Error{Kind: KindInvalid, Msg: "invalid project", Fields: fields}
}

// storeTime rounds t to what every store keeps.
func storeTime(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}
