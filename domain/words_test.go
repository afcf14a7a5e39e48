package domain

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestWordTextMatchesItsDefinition holds WordText, whose ASCII messages take a one-pass path,
// to its definition (Words joined by single spaces) on edge cases and on 200,000 random
// strings of ASCII letters, digits, separators and a few runes that fold (É, ß, K, ſ, İ).
func TestWordTextMatchesItsDefinition(t *testing.T) {
	def := func(s string) string { return strings.Join(strings.FieldsFunc(FoldCase(s), notWordRune), " ") }
	cases := []string{"", " ", "a", "A", "a b", "a  b", " a", "a ", "_", "GET /api/v1/orders/7 completed", "payment, declined!",
		"x\ty", "snake_case ID9", "already words", "ünïcode MIXED"}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("aZz09_ ,./-!\t\nAMqÉßKſİ")
	for range 200_000 {
		n := r.IntN(12)
		b := make([]rune, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
			if r.IntN(3) > 0 && i > 0 { // mostly ASCII
				b[i] = alphabet[r.IntN(16)]
			}
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		if got, want := WordText(c), def(c); got != want {
			t.Fatalf("WordText(%q) = %q, want %q", c, got, want)
		}
	}
}

// BenchmarkWordText is an access-log line's word text.
func BenchmarkWordText(b *testing.B) {
	msg := "GET /api/v1/orders/123456 completed in 456 ms with status 201 for tenant 17"
	b.ReportAllocs()
	for b.Loop() {
		_ = WordText(msg)
	}
}

// BenchmarkWordTextDefinition is the same line through the definition, the baseline.
func BenchmarkWordTextDefinition(b *testing.B) {
	msg := "GET /api/v1/orders/123456 completed in 456 ms with status 201 for tenant 17"
	b.ReportAllocs()
	for b.Loop() {
		_ = strings.Join(strings.FieldsFunc(FoldCase(msg), notWordRune), " ")
	}
}
