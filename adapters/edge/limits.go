package edge

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"example.com/obsvc/domain"
)

// Shed caps the requests in flight: past the cap a request is refused at once as
// KindUnavailable (503 with Retry-After) instead of queueing without bound. Health checks are
// never shed. A limit of zero or less turns it off. A long-lived request gives its slot back
// early through EndAdmission (a live tail, once its start is done).
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
				release := sync.OnceFunc(func() { <-slots })
				defer release()
				next.ServeHTTP(w, r.WithContext(withAdmission(r.Context(), release)))
			default:
				refuse(w, r, domain.Errorf(domain.KindUnavailable, "the server is at its limit of requests in flight; retry shortly"))
			}
		})
	}
}

// ShedPerClient caps the requests one client (API key, or address without keys; see ClientID)
// has in flight, slow uploads and slow readers included, so that no single client can hold
// every slot of Shed: past the cap its requests are refused as KindRateLimited (429 with
// Retry-After) while other clients are served. It must run after Authenticate. A limit of zero
// or less turns it off. A long-lived request gives its share back early, as with Shed.
func ShedPerClient(limit int, refuse Refuse) Middleware {
	return func(next http.Handler) http.Handler {
		if limit <= 0 {
			return next
		}
		var mu sync.Mutex
		inFlight := map[string]int{} // only clients with requests in flight: bounded by them
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if IsProbe(r) {
				next.ServeHTTP(w, r)
				return
			}
			id := ClientID(r)
			mu.Lock()
			if inFlight[id] >= limit {
				mu.Unlock()
				refuse(w, r, domain.Errorf(domain.KindRateLimited, "this client has %d requests in flight, its limit; retry when one has finished", limit))
				return
			}
			inFlight[id]++
			mu.Unlock()
			release := sync.OnceFunc(func() {
				mu.Lock()
				if inFlight[id]--; inFlight[id] == 0 {
					delete(inFlight, id)
				}
				mu.Unlock()
			})
			defer release()
			next.ServeHTTP(w, r.WithContext(withAdmission(r.Context(), release)))
		})
	}
}

// maxWriteBuckets bounds the write limiter's memory: the buckets of at most this many clients are
// kept.
const maxWriteBuckets = 10_000

// WriteLimit is a token bucket per client (see ClientID) for the requests isWrite selects; past
// the rate they are refused as KindRateLimited with Retry-After. A perSecond of zero turns it off.
//
// The buckets live in a 2Q cache of maxWriteBuckets clients: when it is full, the buckets of
// clients seen once and least recently go first, so a flood of new clients (rotating source
// addresses) evicts itself instead of resetting the limits of the clients that keep writing.
func WriteLimit(perSecond float64, burst int, isWrite func(*http.Request) bool, refuse Refuse) Middleware {
	return func(next http.Handler) http.Handler {
		if perSecond <= 0 {
			return next
		}
		buckets, err := lru.New2Q[string, *rate.Limiter](maxWriteBuckets)
		if err != nil {
			panic(err) // only for a size below one, which maxWriteBuckets is not
		}
		var mu sync.Mutex // makes look-up and insert of a new bucket one step
		bucket := func(id string) *rate.Limiter {
			mu.Lock()
			defer mu.Unlock()
			b, ok := buckets.Get(id)
			if !ok {
				b = rate.NewLimiter(rate.Limit(perSecond), max(burst, 1))
				buckets.Add(id, b)
			}
			return b
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !isWrite(r) {
				next.ServeHTTP(w, r)
				return
			}
			res := bucket(ClientID(r)).Reserve()
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
