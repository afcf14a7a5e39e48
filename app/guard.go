package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"example.com/obsvc/adapters/httpapi"
	"example.com/obsvc/adapters/twirpapi"
	"example.com/obsvc/domain"
)

// probe reports the health checks, which stay outside authentication and load shedding.
func probe(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == "/healthz" || r.URL.Path == "/readyz")
}

// refuser answers a request refused before any handler, in the protocol of the route it asked
// for, through that transport's one error mapping.
type refuser struct{ log *slog.Logger }

func (f refuser) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if strings.HasPrefix(r.URL.Path, "/twirp/") {
		twirpapi.WriteError(w, err)
		return
	}
	httpapi.WriteError(w, r, err, f.log)
}

// authenticate puts the request's principal in its context. With keys configured, every route
// but the health checks needs a valid "Authorization: Bearer KEY" (401 otherwise); what each key
// may do is the domain's decision (403). With none, every request acts for an admin.
func authenticate(keys *domain.Keys, f refuser, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !keys.Enabled() {
			next.ServeHTTP(w, r.WithContext(domain.WithPrincipal(r.Context(), domain.Principal{Admin: true})))
			return
		}
		if probe(r) {
			next.ServeHTTP(w, r)
			return
		}
		scheme, secret, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		p, ok := domain.Principal{}, false
		if strings.EqualFold(scheme, "Bearer") && secret != "" {
			p, ok = keys.Authenticate(strings.TrimSpace(secret))
		}
		if !ok {
			f.refuse(w, r, domain.Errorf(domain.KindUnauthenticated, "a valid API key is required: Authorization: Bearer KEY"))
			return
		}
		next.ServeHTTP(w, r.WithContext(domain.WithPrincipal(r.Context(), p)))
	})
}

// shed caps the requests in flight: past the cap a request is refused at once with 503 and
// Retry-After instead of queueing without bound. Health checks are never shed.
func shed(limit int, f refuser, next http.Handler) http.Handler {
	if limit <= 0 {
		return next
	}
	slots := make(chan struct{}, limit)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if probe(r) {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			next.ServeHTTP(w, r)
		default:
			f.refuse(w, r, domain.Errorf(domain.KindUnavailable, "the server is at its limit of requests in flight; retry shortly"))
		}
	})
}

// writeLimiter is a token bucket per API key (per client address when no keys are configured)
// for writes: POST, PUT and DELETE. Off when rate is zero.
type writeLimiter struct {
	rate    rate.Limit
	burst   int
	refuser refuser

	mu       sync.Mutex
	buckets  map[string]*rate.Limiter
	maxTrack int
}

func newWriteLimiter(perSecond float64, burst int, f refuser) *writeLimiter {
	return &writeLimiter{rate: rate.Limit(perSecond), burst: max(burst, 1), refuser: f, buckets: map[string]*rate.Limiter{}, maxTrack: 10_000}
}

func (l *writeLimiter) bucket(id string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[id]
	if !ok {
		if len(l.buckets) >= l.maxTrack {
			clear(l.buckets) // bounded memory: a reset only ever grants a fresh burst
		}
		b = rate.NewLimiter(l.rate, l.burst)
		l.buckets[id] = b
	}
	return b
}

func (l *writeLimiter) middleware(next http.Handler) http.Handler {
	if l.rate <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method != http.MethodPost && r.Method != http.MethodPut && r.Method != http.MethodDelete,
			strings.HasPrefix(r.URL.Path, "/twirp/"): // MakeHat stores nothing: not a write
			next.ServeHTTP(w, r)
			return
		}
		id := clientID(r)
		res := l.bucket(id).Reserve()
		if delay := res.Delay(); delay > 0 {
			res.Cancel()
			w.Header().Set("Retry-After", strconv.Itoa(int(delay/time.Second)+1))
			l.refuser.refuse(w, r, domain.Errorf(domain.KindRateLimited, "write rate exceeded for this key; retry after the time in Retry-After"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// clientID names the bucket a request draws from: its API key (by the id authentication put in
// the context, so no secret is hashed twice or kept) or, without keys, the client's address.
func clientID(r *http.Request) string {
	if p, ok := domain.PrincipalFrom(r.Context()); ok && p.KeyID != "" {
		return "key:" + p.KeyID
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

// deadline bounds each request's work: a store that stops answering turns into a 503 within d
// instead of a request that hangs.
func deadline(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/twirp/") { // MakeHat does no I/O to bound
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
