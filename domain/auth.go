package domain

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
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

// emptyDigest is the SHA-256 of the empty string: the digest a key recipe yields when its secret
// variable is unset. A key with it would let an empty secret in, so ParseKeys refuses it.
const emptyDigest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// ParseKeys reads key lines: "admin sha256:HEX" or "project PROJECT_ID sha256:HEX", separated by
// newlines or commas; blank lines and lines starting with # are skipped. HEX is the SHA-256 of
// the secret a client sends as "Authorization: Bearer SECRET". It refuses the digest of the empty
// secret and a digest listed twice (which line would win is not something to leave to order).
func ParseKeys(text string) (*Keys, error) {
	var keys []Key
	seen := map[string]int{}
	for i, line := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == ',' }) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		var p Principal
		var digest string
		switch {
		case len(f) == 2 && f[0] == "admin":
			p, digest = Principal{Admin: true}, f[1]
		case len(f) == 3 && f[0] == "project":
			if !validID(f[1]) {
				return nil, fmt.Errorf("key %d: %q is not a project id", i+1, f[1])
			}
			p, digest = Principal{ProjectID: f[1]}, f[2]
		default:
			return nil, fmt.Errorf("key %d: want \"admin sha256:HEX\" or \"project ID sha256:HEX\"", i+1)
		}
		hexDigest, ok := strings.CutPrefix(digest, "sha256:")
		b, err := hex.DecodeString(hexDigest)
		if !ok || err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("key %d: the digest must be sha256: and 64 hex digits", i+1)
		}
		hexDigest = strings.ToLower(hexDigest)
		if hexDigest == emptyDigest {
			return nil, fmt.Errorf("key %d: the digest is that of an empty secret (was the secret's variable unset?)", i+1)
		}
		if first, dup := seen[hexDigest]; dup {
			return nil, fmt.Errorf("key %d: the same digest as key %d; every key needs a secret of its own", i+1, first)
		}
		seen[hexDigest] = i + 1
		p.KeyID = hexDigest[:16]
		k := Key{Principal: p}
		copy(k.Digest[:], b)
		keys = append(keys, k)
	}
	return NewKeys(keys...), nil
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
