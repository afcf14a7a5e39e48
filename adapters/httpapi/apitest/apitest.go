// Package apitest checks HTTP traffic against openapi.yaml in tests: every response a test
// receives through Transport must be one the contract allows, status, headers and body, error
// responses included; ReadEvents reads the live tail's event stream as a browser does. It is a
// normal package so that tests of several packages share it.
package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"example.com/obsvc/api/rest"
)

// Checker validates responses against the embedded spec.
type Checker struct {
	router routers.Router
	// full and fullRouter are the whole document: the generated spec leaves out the operations
	// served by hand (the event stream among them), which CheckStream and CheckEvent check.
	full       *openapi3.T
	fullRouter routers.Router
}

// NewChecker loads the spec the server was generated from, and the whole document.
func NewChecker() (*Checker, error) {
	doc, err := rest.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("load spec: %w", err)
	}
	full, err := openapi3.NewLoader().LoadFromData(rest.SpecYAML())
	if err != nil {
		return nil, fmt.Errorf("load the whole spec: %w", err)
	}
	c := &Checker{full: full}
	for _, r := range []struct {
		doc *openapi3.T
		to  *routers.Router
	}{{doc, &c.router}, {full, &c.fullRouter}} {
		r.doc.Servers = openapi3.Servers{{URL: "/"}}
		if *r.to, err = gorillamux.NewRouter(r.doc); err != nil {
			return nil, fmt.Errorf("build router: %w", err)
		}
	}
	return c, nil
}

// Check validates one exchange. body is the response body, already read. Requests to paths
// outside the spec (Twirp, unknown routes) must be answered, if at all with an error, as
// application/problem+json; Twirp paths are not checked here.
func (c *Checker) Check(req *http.Request, resp *http.Response, body []byte) error {
	if strings.HasPrefix(req.URL.Path, "/twirp/") {
		return nil
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		if resp.StatusCode < 400 {
			return fmt.Errorf("%s %s is not in the spec but answered %d", req.Method, req.URL.Path, resp.StatusCode)
		}
		return checkProblem(resp, body)
	}
	in := &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: params,
		Route:      route,
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
			AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		},
	}
	err = openapi3filter.ValidateResponse(req.Context(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                in.Options,
	})
	if err != nil {
		return fmt.Errorf("%s %s answered %d against the spec: %w\nbody: %.500s", req.Method, req.URL, resp.StatusCode, err, body)
	}
	if resp.StatusCode >= 400 {
		return checkProblem(resp, body)
	}
	return nil
}

// CheckStream validates the head of a response whose body is an event stream the test reads
// as it arrives: status and headers against the spec, the body left alone (see CheckEvent).
func (c *Checker) CheckStream(req *http.Request, resp *http.Response) error {
	route, params, err := c.fullRouter.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%s %s is not in the spec but answered %d with a stream: %w", req.Method, req.URL.Path, resp.StatusCode, err)
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: true,
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	err = openapi3filter.ValidateResponse(req.Context(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(nil)),
		Options:                opts,
	})
	if err != nil {
		return fmt.Errorf("%s %s answered %d against the spec: %w", req.Method, req.URL, resp.StatusCode, err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode == http.StatusOK && ct != "text/event-stream" {
		return fmt.Errorf("%s %s streams as %q, want text/event-stream", req.Method, req.URL, ct)
	}
	return nil
}

// CheckEvent validates the data of one event of a stream against the named schema of the
// spec's components (a log event's data is a LogEntry).
func (c *Checker) CheckEvent(schema string, data []byte) error {
	ref, ok := c.full.Components.Schemas[schema]
	if !ok || ref.Value == nil {
		return fmt.Errorf("the spec has no schema %q", schema)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("event data is not JSON: %w: %.300s", err, data)
	}
	if err := ref.Value.VisitJSON(v, openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("event data breaks schema %s: %w: %.300s", schema, err, data)
	}
	return nil
}

// checkProblem asserts an RFC 9457 body whose status member equals the HTTP status.
func checkProblem(resp *http.Response, body []byte) error {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/problem+json" {
		return fmt.Errorf("error %d has Content-Type %q, want application/problem+json; body %.300s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var p rest.Problem
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("error %d body is not a problem document: %w", resp.StatusCode, err)
	}
	if int(p.Status) != resp.StatusCode || p.Type == "" || p.Title == "" || p.Detail == "" {
		return fmt.Errorf("problem document %+v does not match status %d or misses members", p, resp.StatusCode)
	}
	return nil
}

// Transport is an http.RoundTripper that validates every response with a Checker and reports a
// mismatch as a test failure. It buffers each response body to check it, then hands it on.
type Transport struct {
	T       testing.TB
	Base    http.RoundTripper
	Checker *Checker

	mu      sync.Mutex
	checked int
}

// NewTransport returns a validating transport over base (http.DefaultTransport if nil).
func NewTransport(t testing.TB, base http.RoundTripper) *Transport {
	t.Helper()
	c, err := NewChecker()
	if err != nil {
		t.Fatalf("apitest: %v", err)
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &Transport{T: t, Base: base, Checker: c}
}

// RoundTrip implements http.RoundTripper.
func (tr *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	// The request body is consumed by the base transport; keep the request for routing only.
	resp, err := tr.Base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		// A stream is read as it arrives, for as long as the test wants: check its head only,
		// and leave its events to CheckEvent.
		if err := tr.Checker.CheckStream(req, resp); err != nil {
			tr.T.Errorf("apitest: response breaks the contract: %v", err)
		}
		tr.mu.Lock()
		tr.checked++
		tr.mu.Unlock()
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("apitest: read body: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err := tr.Checker.Check(req, resp, body); err != nil {
		tr.T.Errorf("apitest: response breaks the contract: %v", err)
	}
	tr.mu.Lock()
	tr.checked++
	tr.mu.Unlock()
	return resp, nil
}

// Checked reports how many responses the transport validated.
func (tr *Transport) Checked() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.checked
}
