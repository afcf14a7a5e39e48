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
			scheme, secret, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			p, ok := domain.Principal{}, false
			if strings.EqualFold(scheme, "Bearer") && secret != "" {
				p, ok = keys.Authenticate(strings.TrimSpace(secret))
			}
			if !ok {
				refuse(w, r, domain.Errorf(domain.KindUnauthenticated, "a valid API key is required: Authorization: Bearer KEY"))
				return
			}
			next.ServeHTTP(w, r.WithContext(domain.WithPrincipal(r.Context(), p)))
		})
	}
}
