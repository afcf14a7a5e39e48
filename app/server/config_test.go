package server

import (
	"testing"

	"example.com/obsvc/domain"
)

func TestConfigCarriesTheQueryLimits(t *testing.T) {
	if got, want := DefaultConfig().Limits().Query, domain.DefaultLimits().Query; got != want {
		t.Errorf("default query limits %+v, want the contract's %+v", got, want)
	}
	c := DefaultConfig()
	c.MaxQueryChars, c.MaxQueryDepth, c.MaxQueryTerms = 100, 4, 8
	if got, want := c.Limits().Query, (domain.QueryLimits{MaxChars: 100, MaxDepth: 4, MaxTerms: 8}); got != want {
		t.Errorf("query limits %+v, want %+v", got, want)
	}
}
