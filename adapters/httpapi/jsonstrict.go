package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"example.com/obsvc/domain"
)

// strictJSON checks that body is exactly one JSON value as RFC 8259 defines it and as the
// handlers behind will read it, naming the pointer of the first problem. encoding/json, which
// the generated code and kin-openapi decode with, accepts more than that without a word: it
// replaces invalid UTF-8 and escaped lone surrogates with U+FFFD (the stored text would differ
// from the text sent), keeps the last of a name given twice, and matches names regardless of
// case (so `"Name"` could override `"name"`). jsontext, the tokenizer of the JSON v2 work of
// the Go project, refuses all but the last by default and reports where; names in another case
// are the schema's business (additionalProperties: false). opts relax the defaults (POST /logs
// allows a name given twice inside attributes, as its contract says).
func strictJSON(body []byte, opts ...jsontext.Options) error {
	if err := validJSON(body, opts...); err != nil {
		return jsonProblem(body, err, opts...)
	}
	return nil
}

// validJSON reads body as one JSON value under opts, and nothing after it.
func validJSON(body []byte, opts ...jsontext.Options) error {
	dec := jsontext.NewDecoder(bytes.NewReader(body), opts...)
	if err := dec.SkipValue(); err != nil {
		return err
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("data after the JSON value")
		}
		return err
	}
	return nil
}

// jsonProblem answers err, what jsontext reported reading body under opts, naming what is wrong:
// a name given twice by its pointer, a string that is not valid UTF-8 (or an escaped lone
// surrogate) by the pointer of its value (of its object, for a name), and a body that is not
// JSON at all, where a pointer means little, as the whole body with the offset of the problem.
func jsonProblem(body []byte, err error, opts ...jsontext.Options) error {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) && errors.Is(err, jsontext.ErrDuplicateName) {
		return &domain.Error{Kind: domain.KindInvalid, Msg: "the body gives a name twice",
			Fields: []domain.FieldError{{Path: pointerPath(string(se.JSONPointer)), Detail: "is given more than once in its object"}}, Err: err}
	}
	// The same body read again with invalid UTF-8 allowed: if that reads, the encoding of a
	// string is what is wrong, not the syntax.
	syntax := validJSON(body, append(opts, jsontext.AllowInvalidUTF8(true))...)
	if syntax == nil && se != nil {
		return &domain.Error{Kind: domain.KindInvalid, Msg: "the body is not valid UTF-8",
			Fields: []domain.FieldError{{Path: pointerPath(string(se.JSONPointer)),
				Detail: fmt.Sprintf("must be valid UTF-8: %v (at byte %d)", se.Err, se.ByteOffset)}}, Err: err}
	}
	if syntax == nil {
		syntax = err
	}
	detail := "the body is not valid JSON: " + syntax.Error()
	if errors.As(syntax, &se) {
		detail = fmt.Sprintf("the body is not valid JSON: %v (at byte %d)", se.Err, se.ByteOffset)
	} else if errors.Is(syntax, io.ErrUnexpectedEOF) || errors.Is(syntax, io.EOF) {
		detail = "the body is not valid JSON: it ends too early"
	}
	return &domain.Error{Kind: domain.KindInvalid, Msg: "the body is not valid JSON",
		Fields: []domain.FieldError{{Path: []string{}, Detail: detail}}, Err: err}
}

// pointerPath splits an RFC 6901 pointer into its unescaped segments; "" is the whole body.
func pointerPath(p string) []string {
	if p == "" {
		return []string{}
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		segs[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
	}
	return segs
}
