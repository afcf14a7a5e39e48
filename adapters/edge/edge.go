// Package edge is the middleware every transport shares: authentication, load shedding, the write
// rate limit, request deadlines, request ids, the access log, metrics and health checks. It knows
// neither the REST nor the Twirp adapter: a request it refuses is answered through a Refuse
// function the composition root gives it, which speaks the protocol of the route asked for.
package edge

import "net/http"

// Refuse answers a request refused before any handler ran, with err (a *domain.Error whose kind
// says why) in the protocol of the route it asked for.
type Refuse func(w http.ResponseWriter, r *http.Request, err error)

// Middleware wraps a handler.
type Middleware func(http.Handler) http.Handler

// Chain applies layers so that the first is outermost: Chain(h, a, b) serves a(b(h)).
func Chain(h http.Handler, layers ...Middleware) http.Handler {
	for i := len(layers) - 1; i >= 0; i-- {
		h = layers[i](h)
	}
	return h
}

// IsProbe reports the health checks, which stay outside authentication and load shedding.
func IsProbe(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == "/healthz" || r.URL.Path == "/readyz")
}
