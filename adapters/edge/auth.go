package edge

import (
	"net/http"
	"strings"

	"example.com/obsvc/domain"
)

// Authenticate puts the request's principal in its context. With keys configured, every route
// but the health checks needs a valid "Authorization: Bearer KEY" (refused as
// KindUnauthenticated otherwise); what each key may do is the domain's decision. With none,
// every request acts for an admin.
func Authenticate(keys *domain.Keys, refuse Refuse) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !keys.Enabled() {
				next.ServeHTTP(w, r.WithContext(domain.WithPrincipal(r.Context(), domain.Principal{Admin: true})))
				return
			}
			if IsProbe(r) {
				next.ServeHTTP(w, r)
				return
			}
			p, ok := domain.Principal{}, false
			if secret, found := bearerToken(r.Header); found {
				p, ok = keys.Authenticate(secret)
			}
			if !ok {
				refuse(w, r, domain.Errorf(domain.KindUnauthenticated, "a valid API key is required: Authorization: Bearer KEY"))
				return
			}
			next.ServeHTTP(w, r.WithContext(domain.WithPrincipal(r.Context(), p)))
		})
	}
}

// bearerToken returns the token of the request's one Authorization header in the Bearer scheme
// (RFC 6750: the scheme, case-insensitive, one or more ASCII spaces, the token). Nothing else is
// trimmed: a secret is compared exactly as sent. Several Authorization headers are refused rather
// than one of them picked.
func bearerToken(h http.Header) (string, bool) {
	values := h.Values("Authorization")
	if len(values) != 1 {
		return "", false
	}
	scheme, rest, found := strings.Cut(values[0], " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token := strings.TrimLeft(rest, " ")
	return token, token != ""
}
