package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/domain"
)

// validator checks every request against openapi.yaml before the generated code sees it: body
// size, media type, then parameters and body with kin-openapi. Whatever it rejects is answered
// in the contract's problem format naming each offending pointer or parameter.
type validator struct {
	// params finds each request's operation in the whole contract and refuses a query that holds
	// anything the operation does not declare.
	params *ParamCheck
	// generated holds the operations the generated server serves (lower-case operation ids):
	// only those are validated here in full; the hand-written ones (the live tail) check their
	// own parameters' values.
	generated map[string]bool
	maxBody   int64
	logs      logsChecker
	problems  problemWriter
}

func newValidator(maxBody int64, limits domain.Limits, problems problemWriter) (*validator, error) {
	doc, err := rest.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	generated := map[string]bool{}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			generated[strings.ToLower(op.OperationID)] = true
		}
	}
	params, err := NewParamCheck()
	if err != nil {
		return nil, err
	}
	return &validator{params: params, generated: generated, maxBody: maxBody, logs: logsChecker{limits: limits}, problems: problems}, nil
}

func (v *validator) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route, params, ok := v.params.route(r)
		if !ok {
			// Not a route of the spec (or not this method): the router behind answers 404/405.
			next.ServeHTTP(w, r)
			return
		}
		// Name the route as ServeMux will (the spec's paths use its {name} syntax), so that a
		// request rejected here is still counted and logged under its route.
		r.Pattern = route.Method + " " + route.Path
		if err := v.params.check(route, r.URL.RawQuery); err != nil {
			v.problems.write(w, r, err)
			return
		}
		if !v.generated[strings.ToLower(route.Operation.OperationID)] {
			next.ServeHTTP(w, r)
			return
		}
		// (The embedded spec carries operation ids as the generator normalised them: CreateLogs.)
		typed := strings.EqualFold(route.Operation.OperationID, "createLogs")
		if route.Operation.RequestBody != nil {
			var err error
			if r, err = v.checkBody(w, r, route.Operation.RequestBody.Value.Content, typed); err != nil {
				v.problems.write(w, r, err)
				return
			}
		}
		if err := r.Context().Err(); err != nil {
			v.problems.write(w, r, outOfTime(err))
			return
		}
		err := openapi3filter.ValidateRequest(r.Context(), &openapi3filter.RequestValidationInput{
			Request:    r,
			PathParams: params,
			Route:      route,
			Options: &openapi3filter.Options{
				MultiError:         true,
				AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
				// The domain applies defaults; letting the validator write them would re-encode
				// every body and every query.
				SkipSettingDefaults: true,
				// logsChecker has checked the body of createLogs already, at a cost and with
				// an answer bounded by the batch limit and MaxFieldErrors.
				ExcludeRequestBody: typed,
			},
		})
		if err != nil {
			v.problems.write(w, r, validationError(err, v.logs.limits.MaxFieldErrors))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkBody enforces the media type the operation declares (application/json,
// application/merge-patch+json for a merge patch, either JSON or NDJSON for createLogs, whose
// body may be gzip too: checkLogs) and the body limit of operations that take a body, and rejects a body that is not one well-formed JSON value: the decoders behind read only
// the first value and would accept trailing data, replace invalid UTF-8 with U+FFFD, and let a
// name given twice or in another case override the first (see strictJSON). The body is read once here and handed on from
// memory; the batch of createLogs is handed on decoded too (withDecodedLogs), in the request it
// returns.
func (v *validator) checkBody(w http.ResponseWriter, r *http.Request, content openapi3.Content, typed bool) (*http.Request, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || content.Get(mt) == nil || strings.Contains(mt, "*") {
		want := slices.Sorted(maps.Keys(content))
		return r, &httpError{status: http.StatusUnsupportedMediaType, detail: "the body must be " + strings.Join(want, " or ")}
	}
	// Reading the body ends with the request's time too, not only with the server's read timeout.
	if dl, ok := r.Context().Deadline(); ok {
		_ = http.NewResponseController(w).SetReadDeadline(dl) // best effort: ErrNotSupported leaves the server's
	}
	if typed {
		return v.checkLogs(w, r, mt)
	}
	if r.ContentLength > v.maxBody {
		return r, tooLarge(v.maxBody)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, v.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return r, tooLarge(mbe.Limit)
		}
		return r, &domain.Error{Kind: domain.KindInvalid, Msg: "the body could not be read", Err: err}
	}
	if err := strictJSON(body); err != nil {
		return r, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return r, nil
}

// checkLogs reads and checks the body of POST /logs, of media type mt: a JSON array or NDJSON,
// either possibly gzip (readLogsBody). An NDJSON batch is checked, and handed on, as the JSON
// array of its entries (ndjsonArray), with the line of each entry in the request's context for
// the answers that name entries.
func (v *validator) checkLogs(w http.ResponseWriter, r *http.Request, mt string) (*http.Request, error) {
	body, err := readLogsBody(w, r, v.maxBody)
	if err != nil {
		return r, err
	}
	var lines ndjsonLines
	if mt == contentNDJSON {
		if body, lines, err = ndjsonArray(r.Context(), body, v.logs.limits.MaxBatchEntries); err != nil {
			return r, err
		}
		r = r.WithContext(withNDJSONLines(r.Context(), lines))
	}
	batch, err := v.logs.check(r.Context(), body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	// From here on the body is a JSON array in the identity coding, whatever was sent: the
	// generated code decodes a body by its media type.
	r.Header.Set("Content-Type", contentJSON)
	r.Header.Del("Content-Encoding")
	if lines != nil {
		err = lines.annotate(err)
	}
	if err != nil || batch == nil { // nil: a batch over decodeOnceMax, for the generated decoder
		return r, err
	}
	return withDecodedLogs(r, batch), nil
}

// The media types of a POST /logs batch: a JSON array, or one entry per line.
const (
	contentJSON   = "application/json"
	contentNDJSON = "application/x-ndjson"
)

func tooLarge(limit int64) error {
	return &domain.Error{Kind: domain.KindTooLarge, Msg: fmt.Sprintf("the body is larger than %d bytes", limit)}
}

// validationError turns kin-openapi's errors into one KindInvalid error listing the offending
// parameters and body pointers, at most maxFields of them (the message says how many more), or
// KindTooLarge when the body ran over the limit while being read.
func validationError(err error, maxFields int) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(mbe.Limit)
	}
	fields := fieldErrors{max: maxFields}
	collectFields(err, nil, &fields)
	out := fields.err("the request is invalid")
	if out == nil {
		out = &domain.Error{Kind: domain.KindInvalid, Msg: "the request is invalid",
			Fields: []domain.FieldError{{Path: []string{}, Detail: "the request does not match the API"}}}
	}
	out.Err = err
	return out
}

// collectFields walks kin-openapi's error tree. param is the parameter the errors below belong
// to, if any; body errors become pointers. It switches on each node's own type: errors.As would
// look through a RequestError into its MultiError and lose the parameter.
func collectFields(err error, param *openapi3.Parameter, out *fieldErrors) {
	add := func(path []string, detail string) {
		if param != nil {
			out.add(domain.FieldError{Param: param.Name, Detail: detail})
			return
		}
		out.add(domain.FieldError{Path: path, Detail: detail})
	}
	switch e := err.(type) {
	case openapi3.MultiError:
		for _, x := range e {
			collectFields(x, param, out)
		}
	case *openapi3filter.RequestError:
		if e.Parameter != nil {
			param = e.Parameter
		}
		if e.Err == nil {
			add([]string{}, e.Reason)
			return
		}
		collectFields(e.Err, param, out)
	case *openapi3.SchemaError:
		if name, ok := unsupportedProperty(e); ok {
			add(append(e.JSONPointer(), name), unknownMemberDetail(name, e.Schema))
			return
		}
		add(e.JSONPointer(), e.Reason)
	case *openapi3filter.ParseError:
		if param != nil {
			add(nil, parseDetail(e))
			return
		}
		add([]string{}, "the body is not valid JSON: "+parseDetail(e))
	default:
		if next := errors.Unwrap(err); next != nil {
			collectFields(next, param, out)
			return
		}
		add([]string{}, err.Error())
	}
}

func parseDetail(pe *openapi3filter.ParseError) string {
	if pe.Reason != "" {
		return pe.Reason
	}
	if c := pe.RootCause(); c != nil {
		return c.Error()
	}
	return "cannot be parsed"
}

// unsupportedProperty is the name of the member an additionalProperties: false schema refused:
// kin-openapi points at the object and names the member only in its reason.
func unsupportedProperty(e *openapi3.SchemaError) (string, bool) {
	const prefix, suffix = "property ", " is unsupported"
	if e.SchemaField != "properties" || !strings.HasPrefix(e.Reason, prefix) || !strings.HasSuffix(e.Reason, suffix) {
		return "", false
	}
	name, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(e.Reason, prefix), suffix))
	return name, err == nil
}

// unknownMemberDetail says that name is not a member of the schema, and which member it may have
// meant when one differs from it only in case.
func unknownMemberDetail(name string, schema *openapi3.Schema) string {
	if schema != nil {
		for _, known := range componentNames(schema.Properties) {
			if strings.EqualFold(known, name) {
				return "is not a member of this body: names are case-sensitive (did you mean " + strconv.Quote(known) + "?)"
			}
		}
	}
	return "is not a member of this body"
}

// componentNames is the sorted names of m, so that a detail never depends on map order.
func componentNames(m openapi3.Schemas) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
