package edge

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"example.com/obsvc/domain"
)

// Shed caps the requests in flight: past the cap a request is refused at once as
// KindUnavailable (503 with Retry-After) instead of queueing without bound. Health checks are
// never shed. A limit of zero or less turns it off.
func Shed(limit int, refuse Refuse) Middleware {
	return func(next http.Handler) http.Handler {
		if limit <= 0 {
			return next
		}
		slots := make(chan struct{}, limit)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if IsProbe(r) {
				next.ServeHTTP(w, r)
				return
			}
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
				next.ServeHTTP(w, r)
			default:
				refuse(w, r, domain.Errorf(domain.KindUnavailable, "the server is at its limit of requests in flight; retry shortly"))
			}
		})
	}
}

// WriteLimit is a token bucket per API key (per client address when no keys are configured) for
// the requests isWrite selects; past the rate they are refused as KindRateLimited with
// Retry-After. A perSecond of zero turns it off.
func WriteLimit(perSecond float64, burst int, isWrite func(*http.Request) bool, refuse Refuse) Middleware {
	l := &writeLimiter{rate: rate.Limit(perSecond), burst: max(burst, 1), buckets: map[string]*rate.Limiter{}, maxTrack: 10_000}
	return func(next http.Handler) http.Handler {
		if l.rate <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !isWrite(r) {
				next.ServeHTTP(w, r)
				return
			}
			res := l.bucket(ClientID(r)).Reserve()
			if delay := res.Delay(); delay > 0 {
				res.Cancel()
				w.Header().Set("Retry-After", strconv.Itoa(int(delay/time.Second)+1))
				refuse(w, r, domain.Errorf(domain.KindRateLimited, "write rate exceeded for this key; retry after the time in Retry-After"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

type writeLimiter struct {
	rate  rate.Limit
	burst int

	mu       sync.Mutex
	buckets  map[string]*rate.Limiter
	maxTrack int
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

// ClientID names whom a request counts against: its API key (by the id authentication put in the
// context, so no secret is hashed twice or kept) or, without keys, the client's address.
func ClientID(r *http.Request) string {
	if p, ok := domain.PrincipalFrom(r.Context()); ok && p.KeyID != "" {
		return "key:" + p.KeyID
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

// Deadline bounds each request's work: a store that stops answering turns into a 503 within d
// instead of a request that hangs. Requests exempt selects (work with no I/O to bound) keep
// their context.
func Deadline(d time.Duration, exempt func(*http.Request) bool) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if exempt(r) {
				next.ServeHTTP(w, r)
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}
