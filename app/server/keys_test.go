package server

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"example.com/obsvc/domain"
	"github.com/google/uuid"
)

func digest(secret string) string {
	d := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(d[:])
}

func TestParseKeysAndAuthenticate(t *testing.T) {
	pid := uuid.Must(uuid.NewV7()).String()
	keys, err := parseKeys("# comment\nadmin " + digest("root-secret") + "\n\n project " + pid + " " + digest("p-secret") + " ,admin " + digest("second"))
	if err != nil {
		t.Fatal(err)
	}
	if !keys.Enabled() {
		t.Fatal("keys not enabled")
	}
	cases := []struct {
		secret string
		want   domain.Principal
		ok     bool
	}{
		{"root-secret", domain.Principal{Admin: true, KeyID: digest("root-secret")[7:23]}, true},
		{"second", domain.Principal{Admin: true, KeyID: digest("second")[7:23]}, true},
		{"p-secret", domain.Principal{ProjectID: pid, KeyID: digest("p-secret")[7:23]}, true},
		{"", domain.Principal{}, false},
		{"root-secre", domain.Principal{}, false},
		{digest("root-secret"), domain.Principal{}, false}, // the digest itself is not a key
	}
	for _, c := range cases {
		got, ok := keys.Authenticate(c.secret)
		if ok != c.ok || got != c.want {
			t.Errorf("Authenticate(%q) = %+v %v, want %+v %v", c.secret, got, ok, c.want, c.ok)
		}
	}
	for _, bad := range []string{"root " + digest("x"), "admin md5:abc", "admin sha256:zz", "project nope " + digest("x"), "admin " + digest("x") + " extra"} {
		if _, err := parseKeys(bad); err == nil {
			t.Errorf("parseKeys(%q) accepted", bad)
		}
	}
	// The digest of the empty secret (what a recipe yields when its variable is unset), in either
	// case, and one digest listed twice (a project key must not become an admin by order).
	empty := digest("")
	for _, bad := range []string{"admin " + empty, "admin sha256:" + strings.ToUpper(empty[7:]),
		"project " + pid + " " + digest("dup") + "\nadmin " + digest("dup"),
		"admin " + digest("dup") + ",admin sha256:" + strings.ToUpper(digest("dup")[7:])} {
		if _, err := parseKeys(bad); err == nil {
			t.Errorf("parseKeys(%q) accepted", bad)
		}
	}
	var none *domain.Keys
	if none.Enabled() || (&domain.Keys{}).Enabled() {
		t.Error("no keys but enabled")
	}
}
