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

	"example.com/obsvc/domain"
)

// POST /logs takes its batch as NDJSON too (application/x-ndjson): one entry per line, lines
// that hold only JSON whitespace ignored. An NDJSON batch is checked and stored as the JSON array
// of its entries (ndjsonArray), so that it meets the same rules, limits and answers as the array
// form, the same pointers included: a pointer's index counts entries, not lines (blank lines are
// not entries), and the detail of each problem of an entry names the line it is on
// (ndjsonLines.annotate).

// ndjsonLines holds the line number (from 1, counting every line of the body) of each entry of
// an NDJSON batch, in order.
type ndjsonLines []int

type ndjsonLinesKey struct{}

// withNDJSONLines returns ctx carrying the lines of the NDJSON batch its request sent.
func withNDJSONLines(ctx context.Context, lines ndjsonLines) context.Context {
	return context.WithValue(ctx, ndjsonLinesKey{}, lines)
}

// annotateNDJSON is err with the line of each entry it names, when ctx's request sent its batch
// as NDJSON; err as it is otherwise.
func annotateNDJSON(ctx context.Context, err error) error {
	lines, ok := ctx.Value(ndjsonLinesKey{}).(ndjsonLines)
	if !ok {
		return err
	}
	return lines.annotate(err)
}

// annotate prefixes the detail of each field of err whose pointer starts at an entry with
// "line N: ", the entry's line. err itself is left as it is: the answer is a copy.
func (l ndjsonLines) annotate(err error) error {
	var de *domain.Error
	if !errors.As(err, &de) || len(de.Fields) == 0 {
		return err
	}
	out := *de
	out.Fields = slices.Clone(de.Fields)
	for i, f := range out.Fields {
		if len(f.Path) == 0 {
			continue
		}
		k, perr := strconv.Atoi(f.Path[0])
		if perr != nil || k < 0 || k >= len(l) {
			continue
		}
		out.Fields[i].Detail = "line " + strconv.Itoa(l[k]) + ": " + f.Detail
	}
	return &out
}

// ndjsonArray reads body, an NDJSON batch, and returns the JSON array of its entries, whose
// byte offsets are body's plus one ('[' and then body, with the newline that ends each entry's
// line but the last made a ','), and the line of each entry. Each line that is not blank must
// be exactly one JSON value in valid UTF-8: a value spread over lines, two values on one line,
// or a line that is not JSON is a 400 naming the entry and its line. Whether a value is an
// entry (an object of the right fields) is the array's check, as for the JSON array. A batch of
// more entries than maxEntries is refused before any line is read as JSON.
func ndjsonArray(ctx context.Context, body []byte, maxEntries int) ([]byte, ndjsonLines, error) {
	n := 0
	for rest := body; len(rest) > 0; {
		line, after, _ := bytes.Cut(rest, []byte{'\n'})
		if !blank(line) {
			n++
		}
		rest = after
	}
	if n > maxEntries {
		return nil, nil, domain.Errorf(domain.KindTooLarge, "a batch holds at most %d entries, this one has %d", maxEntries, n)
	}
	dupOK := jsontext.AllowDuplicateNames(true)
	var (
		src   bytes.Reader
		dec   = jsontext.NewDecoder(&src, dupOK)
		lines = make(ndjsonLines, 0, n)
		array = make([]byte, 1, len(body)+2)
		// last is the offset in array of the newline after the last entry seen so far.
		last = -1
	)
	array[0] = '['
	array = append(array, body...)
	lineNo := 0
	for off := 0; off < len(body); {
		lineNo++
		end := bytes.IndexByte(body[off:], '\n')
		if end < 0 {
			end = len(body)
		} else {
			end += off
		}
		line := body[off:end]
		off = end + 1
		if blank(line) {
			continue
		}
		k := len(lines)
		if k%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, outOfTime(err)
			}
		}
		src.Reset(line)
		dec.Reset(&src, dupOK)
		if err := oneValue(dec); err != nil {
			return nil, nil, lineProblem(line, err, k, lineNo)
		}
		if last >= 0 {
			array[last] = ','
		}
		if end < len(body) {
			last = 1 + end
		} else {
			last = -1
		}
		lines = append(lines, lineNo)
	}
	return append(array, ']'), lines, nil
}

// oneValue reads one JSON value with dec and nothing after it.
func oneValue(dec *jsontext.Decoder) error {
	if err := dec.SkipValue(); err != nil {
		return err
	}
	if _, err := dec.ReadToken(); err == nil {
		return errors.New("data after the JSON value: a line holds one value")
	} else if !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// lineProblem answers err, what reading line (the line of entry k, line lineNo of the body)
// reported: the problem as jsonProblem names it in a body of that one line, its pointer under
// the entry's and its detail naming the line.
func lineProblem(line []byte, err error, k, lineNo int) error {
	dupOK := jsontext.AllowDuplicateNames(true)
	var de *domain.Error
	if !errors.As(jsonProblem(line, err, dupOK), &de) {
		return err // cannot happen: jsonProblem answers a *domain.Error
	}
	out := *de
	out.Fields = slices.Clone(de.Fields)
	for i, f := range out.Fields {
		out.Fields[i].Path = append([]string{strconv.Itoa(k)}, f.Path...)
		out.Fields[i].Detail = "line " + strconv.Itoa(lineNo) + ": " + strings.Replace(f.Detail, "the body is", "the line is", 1)
	}
	return &out
}

// blank reports a line of nothing but JSON whitespace ('\r' of a "\r\n" line end included).
func blank(line []byte) bool {
	for _, b := range line {
		if !isSpace(b) {
			return false
		}
	}
	return true
}
