package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/domain"
)

// A POST /logs body loses nothing its client sent. encoding/json, which decodes the entries,
// drops members it does not know, matches names regardless of case (`"Level"` fills level),
// keeps the last of a name given twice, and replaces invalid UTF-8 with U+FFFD. scanEntries
// reads the body once more beforehand with jsontext, which refuses invalid UTF-8 and reports
// where, and looks at the member names of each entry:
//
//   - a contract field given twice, or a name that differs from a contract field only in case,
//     is a problem naming its pointer (`/0/Level`);
//   - any other member is kept, with its JSON text, to be merged into the entry's attributes
//     under its own name (mergeExtras), where the attribute limits apply to it as to any key.
//
// Inside attributes (and inside such members) a name given twice keeps its last value, as the
// contract has always said of attributes.

// entryField numbers the members of LogEntryInput, for a bit set of those an entry names.
var entryFields = [...]string{"project_id", "message", "level", "time", "subject", "user_id", "attributes", "trace_id", "span_id"}

func entryField(name []byte) int {
	switch string(name) {
	case "project_id":
		return 0
	case "message":
		return 1
	case "level":
		return 2
	case "time":
		return 3
	case "subject":
		return 4
	case "user_id":
		return 5
	case "attributes":
		return 6
	case "trace_id":
		return 7
	case "span_id":
		return 8
	}
	return -1
}

// caseVariant is the contract field name differs from only in case, or "".
func caseVariant(name []byte) string {
	for _, f := range entryFields {
		if len(f) == len(name) && strings.EqualFold(f, string(name)) {
			return f
		}
	}
	return ""
}

// extraMember is a member of an entry that the contract does not name: its name and JSON text.
type extraMember struct {
	name string
	raw  []byte
}

// entryProblem is a problem of entry index, found by the scan.
type entryProblem struct {
	entry int
	field domain.FieldError
}

// entryScan is what scanEntries found: problems in body order (at most max, and how many more),
// and for each entry the members to merge into its attributes (nil when no entry has any).
type entryScan struct {
	problems []entryProblem
	dropped  int
	extras   [][]extraMember
}

func (s *entryScan) add(maxProblems, entry int, path []string, detail string) {
	if len(s.problems) >= maxProblems {
		s.dropped++
		return
	}
	s.problems = append(s.problems, entryProblem{entry: entry, field: domain.FieldError{Path: path, Detail: detail}})
}

// scanEntries reads body, a POST /logs body, with jsontext: a body that is not JSON in valid
// UTF-8 is an error naming the pointer of its first problem; otherwise the scan reports the
// names of entries (see above). A body that is not an array, and elements that are not
// objects, are left to the shape check. n is the number of elements countElements found.
func scanEntries(ctx context.Context, body []byte, n, maxProblems int) (*entryScan, error) {
	dupOK := jsontext.AllowDuplicateNames(true)
	dec := jsontext.NewDecoder(bytes.NewReader(body), dupOK)
	scan := &entryScan{}
	if dec.PeekKind() != '[' {
		return scan, strictJSON(body, dupOK)
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, jsonProblem(body, err, dupOK)
	}
	for i := 0; ; i++ {
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, outOfTime(err)
			}
		}
		switch dec.PeekKind() {
		case ']':
			if _, err := dec.ReadToken(); err != nil {
				return nil, jsonProblem(body, err, dupOK)
			}
			if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
				if err == nil {
					err = errors.New("data after the JSON value")
				}
				return nil, jsonProblem(body, err, dupOK)
			}
			return scan, nil
		case '{':
			extras, err := scan.entry(dec, i, maxProblems)
			if err != nil {
				return nil, jsonProblem(body, err, dupOK)
			}
			if extras != nil {
				if scan.extras == nil {
					scan.extras = make([][]extraMember, max(n, i+1))
				}
				if i >= len(scan.extras) { // n was an estimate (it cannot be for valid JSON)
					scan.extras = append(scan.extras, make([][]extraMember, i+1-len(scan.extras))...)
				}
				scan.extras[i] = extras
			}
		default:
			// Not an object (the shape check names it), or not JSON: SkipValue says where.
			if err := dec.SkipValue(); err != nil {
				return nil, jsonProblem(body, err, dupOK)
			}
		}
	}
}

// entry reads one entry object, index i, and returns the members to merge into its attributes.
func (s *entryScan) entry(dec *jsontext.Decoder, i, maxProblems int) ([]extraMember, error) {
	if _, err := dec.ReadToken(); err != nil { // '{'
		return nil, err
	}
	index := func() string { return strconv.Itoa(i) } // only for a problem: most entries have none
	var (
		seen   uint16
		extras []extraMember
	)
	for dec.PeekKind() != '}' {
		quoted, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		name := quoted[1 : len(quoted)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			if name, err = jsontext.AppendUnquote(nil, quoted); err != nil { // cannot fail: jsontext read it
				return nil, err
			}
		}
		if f := entryField(name); f >= 0 {
			if seen&(1<<f) != 0 {
				s.add(maxProblems, i, []string{index(), entryFields[f]}, "is given more than once in the entry")
			}
			seen |= 1 << f
			if err := dec.SkipValue(); err != nil {
				return nil, err
			}
			continue
		}
		if f := caseVariant(name); f != "" {
			s.add(maxProblems, i, []string{index(), string(name)}, "is not a field: names are case-sensitive (did you mean "+strconv.Quote(f)+"?)")
			if err := dec.SkipValue(); err != nil {
				return nil, err
			}
			continue
		}
		key := string(name)
		raw, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		dup := false
		for _, x := range extras {
			if x.name == key {
				dup = true
				break
			}
		}
		if dup {
			s.add(maxProblems, i, []string{index(), key}, "is given more than once in the entry")
			continue
		}
		extras = append(extras, extraMember{name: key, raw: bytes.Clone(raw)})
	}
	if _, err := dec.ReadToken(); err != nil { // '}'
		return nil, err
	}
	return extras, nil
}

// mergeExtras puts each entry's extra members into its attributes. A member whose name is also a
// key of the entry's attributes is a problem naming both pointers; nothing is merged then.
func mergeExtras(batch rest.CreateLogsJSONRequestBody, extras [][]extraMember, maxProblems int) error {
	bad := fieldErrors{max: maxProblems}
	for i, ex := range extras {
		if len(ex) == 0 || i >= len(batch) {
			continue
		}
		merged, clashes := mergeAttributes(batch[i].Attributes, ex)
		index := strconv.Itoa(i)
		for _, k := range clashes {
			bad.add(domain.FieldError{Path: []string{index, k}, Detail: "is also a key of the entry's attributes (" + jsonPointer([]string{index, "attributes", k}) + ")"})
			bad.add(domain.FieldError{Path: []string{index, "attributes", k}, Detail: "is also a member of the entry (" + jsonPointer([]string{index, k}) + "), which would be kept in attributes"})
		}
		batch[i].Attributes = merged
	}
	if e := bad.err("invalid log entries"); e != nil {
		return e
	}
	return nil
}

// mergeAttributes returns attrs, a JSON object's text (or nil for none), with ex added as
// members, and the names of ex that attrs has already.
func mergeAttributes(attrs []byte, ex []extraMember) ([]byte, []string) {
	keys := 0
	var clashes []string
	if len(attrs) > 0 {
		dec := jsontext.NewDecoder(bytes.NewReader(attrs), jsontext.AllowDuplicateNames(true))
		if _, err := dec.ReadToken(); err != nil {
			return attrs, nil // cannot happen: attrs is a JSON object the scan has read; the domain says what is wrong
		}
		for dec.PeekKind() == '"' {
			name, err := dec.ReadToken()
			if err != nil {
				return attrs, nil
			}
			keys++
			k := name.String()
			for _, x := range ex {
				if x.name == k && !slices.Contains(clashes, x.name) {
					clashes = append(clashes, x.name)
				}
			}
			if err := dec.SkipValue(); err != nil {
				return attrs, nil
			}
		}
	}
	if len(clashes) > 0 {
		return attrs, clashes
	}
	size := len(attrs) + 2
	for _, x := range ex {
		size += len(x.name) + len(x.raw) + 8
	}
	out := make([]byte, 0, size)
	if keys == 0 {
		out = append(out, '{')
	} else {
		out = append(out, attrs[:bytes.LastIndexByte(attrs, '}')]...)
		out = append(out, ',')
	}
	for j, x := range ex {
		if j > 0 {
			out = append(out, ',')
		}
		out, _ = jsontext.AppendQuote(out, x.name) // cannot fail: the name was read as valid UTF-8
		out = append(out, ':')
		out = append(out, x.raw...)
	}
	return append(out, '}'), nil
}
