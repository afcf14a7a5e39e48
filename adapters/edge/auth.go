package edge

import (
	"encoding/base64"
	"net/http"
	"strings"

	"example.com/obsvc/domain"
)

// Authenticate puts the request's principal in its context. With keys configured, every route
// but the health checks needs a valid "Authorization: Bearer KEY" (refused as
// KindUnauthenticated otherwise); what each key may do is the domain's decision. With none,
// every request acts for an admin.
func Authenticate(keys *domain.Keys, refuse Refuse) Middleware {
	return AuthenticateShippers(keys, refuse, nil)
}

// AuthenticateShippers is Authenticate that, on the requests shippers selects (the
// Elasticsearch-compatible routes), also takes the credentials log shippers send, mapped to
// the same API keys: "Authorization: Basic base64(ANYTHING:KEY)" (the key as the password,
// the user name ignored) and "Authorization: ApiKey KEY", where KEY may also be Elasticsearch's
// form base64(ID:KEY) (the id ignored). The other routes take Bearer only: a browser keeps
// Basic credentials once typed and sends them on its own to every route of the origin, which a
// page of another site could then make it use.
func AuthenticateShippers(keys *domain.Keys, refuse Refuse, shippers func(*http.Request) bool) Middleware {
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
			} else if shippers != nil && shippers(r) {
				for _, secret := range shipperSecrets(r.Header) {
					if p, ok = keys.Authenticate(secret); ok {
						break
					}
				}
			}
			if !ok {
				msg := "a valid API key is required: Authorization: Bearer KEY"
				if shippers != nil && shippers(r) {
					msg = "a valid API key is required: Authorization: Bearer KEY, ApiKey KEY or Basic with the key as the password"
				}
				refuse(w, r, domain.Errorf(domain.KindUnauthenticated, "%s", msg))
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
	return schemeToken(h, "Bearer")
}

func schemeToken(h http.Header, scheme string) (string, bool) {
	values := h.Values("Authorization")
	if len(values) != 1 {
		return "", false
	}
	s, rest, found := strings.Cut(values[0], " ")
	if !found || !strings.EqualFold(s, scheme) {
		return "", false
	}
	token := strings.TrimLeft(rest, " ")
	return token, token != ""
}

// shipperSecrets are the secrets a Basic or ApiKey header may carry, in the order tried: the
// password of Basic; the ApiKey token as sent, then the key of base64(ID:KEY).
func shipperSecrets(h http.Header) []string {
	if token, ok := schemeToken(h, "Basic"); ok {
		raw, err := base64.StdEncoding.DecodeString(token)
		if err != nil {
			return nil
		}
		_, password, found := strings.Cut(string(raw), ":")
		if !found || password == "" {
			return nil
		}
		return []string{password}
	}
	if token, ok := schemeToken(h, "ApiKey"); ok {
		out := []string{token}
		if raw, err := base64.StdEncoding.DecodeString(token); err == nil {
			if _, key, found := strings.Cut(string(raw), ":"); found && key != "" {
				out = append(out, key)
			}
		}
		return out
	}
	return nil
}
