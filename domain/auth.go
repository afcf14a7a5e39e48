package domain

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
)

// Principal is who a request acts for: an admin, who may do everything, or a project key, which
// may read its one project and write, list and delete that project's logs, and nothing else.
type Principal struct {
	Admin     bool
	ProjectID string
	// KeyID names the API key (a prefix of its digest; empty when the service is open). It
	// scopes idempotency keys, so two API keys never share one.
	KeyID string
}

type principalKey struct{}

// WithPrincipal returns ctx acting for p. Transports set it after authenticating a request;
// with no keys configured they act for an admin.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal ctx acts for, if any.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Key is one configured API key: the SHA-256 digest of the secret, never the secret itself.
type Key struct {
	Digest    [sha256.Size]byte
	Principal Principal
}

// Keys holds the configured API keys. The zero value holds none: the service is open.
type Keys struct {
	keys []Key
}

// NewKeys returns the given keys.
func NewKeys(keys ...Key) *Keys { return &Keys{keys: keys} }

// Enabled reports whether any key is configured, that is, whether requests must authenticate.
func (k *Keys) Enabled() bool { return k != nil && len(k.keys) > 0 }

// Authenticate returns the principal of secret. It compares digests in constant time against
// every key, so the time taken does not tell which key, or how much of one, matched.
func (k *Keys) Authenticate(secret string) (Principal, bool) {
	d := sha256.Sum256([]byte(secret))
	var found Principal
	ok := 0
	for _, key := range k.keys {
		if subtle.ConstantTimeCompare(d[:], key.Digest[:]) == 1 {
			found, ok = key.Principal, 1
		}
	}
	return found, ok == 1
}

// RequireAdmin answers KindUnauthenticated or KindForbidden unless ctx acts for an admin: for
// what only an operator may see, such as the service's metrics across all projects.
func RequireAdmin(ctx context.Context) error {
	p, ok := PrincipalFrom(ctx)
	switch {
	case !ok:
		return Errorf(KindUnauthenticated, "authentication required")
	case !p.Admin:
		return Errorf(KindForbidden, "only an admin key may do this")
	}
	return nil
}

// authorize checks that ctx's principal may act on project (empty: on projects in general).
func authorize(ctx context.Context, projectID string) error {
	p, ok := PrincipalFrom(ctx)
	switch {
	case !ok:
		return Errorf(KindUnauthenticated, "authentication required")
	case p.Admin:
		return nil
	case projectID != "" && p.ProjectID == projectID:
		return nil
	}
	return Errorf(KindForbidden, "this key does not cover this operation")
}
