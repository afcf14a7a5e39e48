package edge

import (
	"net"
	"net/http"
	"strings"

	"example.com/obsvc/domain"
)

// SecureHeaders sets the headers every answer carries unless its handler sets its own: API
// answers are personal and current, so no cache keeps them (Cache-Control: no-store); no browser
// guesses a content type (X-Content-Type-Options: nosniff); no page frames them
// (X-Frame-Options: DENY, and a Content-Security-Policy that allows nothing to load from them
// and no one to frame them; the /docs pages set a policy of their own).
//
// The values are shared slices of one element, made once: Set would allocate four per request.
// Header.Set and Header.Add replace or grow them (a full slice is copied), never write into them.
func SecureHeaders(next http.Handler) http.Handler {
	noStore, nosniff, deny, csp := []string{"no-store"}, []string{"nosniff"}, []string{"DENY"}, []string{APIContentSecurityPolicy}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Cache-Control"] = noStore[:1:1]
		h["X-Content-Type-Options"] = nosniff[:1:1]
		h["X-Frame-Options"] = deny[:1:1]
		h["Content-Security-Policy"] = csp[:1:1]
		next.ServeHTTP(w, r)
	})
}

// APIContentSecurityPolicy is the policy of every answer that is not a page: nothing it holds
// may load or run anything, and nothing may frame it.
const APIContentSecurityPolicy = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// AdminOnly serves next to admins only; anyone else is refused (KindUnauthenticated or
// KindForbidden, as domain.RequireAdmin decides). With no keys configured every request acts for
// an admin.
func AdminOnly(refuse Refuse, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := domain.RequireAdmin(r.Context()); err != nil {
			refuse(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LoopbackHostsOnly refuses (KindForbidden) a request whose Host is not a loopback name or
// address. An open service (no API keys) listens on loopback, but a web page the user visits can
// still reach it by pointing a name of its own at 127.0.0.1 (DNS rebinding); such requests carry
// that name as their Host, and this turns them away. Off unless on.
func LoopbackHostsOnly(on bool, refuse Refuse) Middleware {
	return func(next http.Handler) http.Handler {
		if !on {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !IsLoopbackHost(r.Host) {
				refuse(w, r, domain.Errorf(domain.KindForbidden, "without API keys this server answers only to loopback host names such as localhost and 127.0.0.1"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// IsLoopbackHost reports whether host (a Host header or a listen address, with or without a
// port) names the loopback interface: localhost or a loopback IP.
func IsLoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
