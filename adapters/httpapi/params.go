package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/domain"
)

// ParamCheck refuses a request whose query string holds anything its operation in openapi.yaml
// does not declare: a parameter of another name (`level` for `log_level` would otherwise be
// dropped, and a DELETE widened to the whole project), a single-valued parameter given more than
// once (the handlers would keep one value and drop the others), or a pair that cannot be decoded
// (net/url drops it). It reads the declared parameters of every operation from the whole
// contract, the routes the generated server leaves out (the live tail, OTLP) included, so a route
// added to openapi.yaml is covered without more code. Requests of no operation of the contract
// (health, metrics, docs, Twirp, the explorer page) are left alone.
type ParamCheck struct {
	router routers.Router
	// query holds the query parameters each operation declares, by name: true for an array
	// (repeatable) parameter.
	query map[*openapi3.Operation]map[string]bool
}

// NewParamCheck builds the check from the embedded openapi.yaml.
func NewParamCheck() (*ParamCheck, error) {
	doc, err := openapi3.NewLoader().LoadFromData(rest.SpecYAML())
	if err != nil {
		return nil, fmt.Errorf("load openapi.yaml: %w", err)
	}
	// Match paths only: the server may be reached under any host name.
	doc.Servers = openapi3.Servers{{URL: "/"}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("build spec router: %w", err)
	}
	c := &ParamCheck{router: router, query: map[*openapi3.Operation]map[string]bool{}}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			declared := map[string]bool{}
			for _, ps := range []openapi3.Parameters{item.Parameters, op.Parameters} {
				for _, p := range ps {
					if p.Value == nil || p.Value.In != openapi3.ParameterInQuery {
						continue
					}
					s := p.Value.Schema
					declared[p.Value.Name] = s != nil && s.Value != nil && s.Value.Type.Is(openapi3.TypeArray)
				}
			}
			c.query[op] = declared
		}
	}
	return c, nil
}

// route finds the operation of r in the contract; ok is false for a request of none.
func (c *ParamCheck) route(r *http.Request) (*routers.Route, map[string]string, bool) {
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		return nil, nil, false
	}
	return route, params, true
}

// Check returns a KindInvalid error naming each offending query parameter of r, or nil when
// its query holds only what its operation declares (or r is of no operation of the contract).
func (c *ParamCheck) Check(r *http.Request) error {
	route, _, ok := c.route(r)
	if !ok {
		return nil
	}
	return c.check(route, r.URL.RawQuery)
}

// Middleware answers a request that fails Check through refuse (each route's own error format),
// before next sees it.
func (c *ParamCheck) Middleware(refuse func(http.ResponseWriter, *http.Request, error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := c.Check(r); err != nil {
				refuse(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// maxParamProblems bounds the answer to a query of many bad pairs.
const maxParamProblems = 100

// check reads rawQuery pair by pair, as net/url does, and names what it would drop or what the
// operation does not declare.
func (c *ParamCheck) check(route *routers.Route, rawQuery string) error {
	if rawQuery == "" {
		return nil
	}
	declared := c.query[route.Operation]
	bad := fieldErrors{max: maxParamProblems}
	var counts map[string]int
	for pair := range strings.SplitSeq(rawQuery, "&") {
		if pair == "" {
			continue // "a=1&&b=2", a trailing "&": no parameter at all
		}
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			bad.add(domain.FieldError{Param: clip(rawKey), Detail: "is not a valid query escape"})
			continue
		}
		if strings.Contains(pair, ";") {
			bad.add(domain.FieldError{Param: clip(key), Detail: "holds a ';', which does not separate parameters (use '&')"})
			continue
		}
		if key == "" {
			bad.add(domain.FieldError{Param: clip(pair), Detail: "is a value without a parameter name"})
			continue
		}
		if _, err := url.QueryUnescape(rawValue); err != nil {
			bad.add(domain.FieldError{Param: clip(key), Detail: "has a value that is not a valid query escape"})
			continue
		}
		repeatable, ok := declared[key]
		if !ok {
			bad.add(domain.FieldError{Param: clip(key), Detail: unknownParamDetail(key, declared)})
			continue
		}
		if !repeatable {
			if counts == nil {
				counts = map[string]int{}
			}
			counts[key]++
			if counts[key] == 2 {
				bad.add(domain.FieldError{Param: key, Detail: "takes one value and is given more than once"})
			}
		}
	}
	if e := bad.err("the request names a parameter this operation does not take"); e != nil {
		return e
	}
	return nil
}

// unknownParamDetail says that key is not a parameter of the operation, and which one it may
// have meant when one differs from it only in case or as a known misspelling of a filter.
func unknownParamDetail(key string, declared map[string]bool) string {
	for name := range declared {
		if strings.EqualFold(name, key) || name == "log_"+key {
			return "is not a parameter of this operation (did you mean " + strconv.Quote(name) + "?)"
		}
	}
	return "is not a parameter of this operation"
}
