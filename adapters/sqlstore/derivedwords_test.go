package sqlstore_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"example.com/obsvc/adapters/sqlstore/migrations"
	"example.com/obsvc/domain"
)

// TestPostgresDerivesTheWordsOfASCIIMessages checks the promise migration 00012 rests on: for
// every message StoredWords leaves NULL (ASCII), PostgreSQL's WordsExpr is domain.WordText of
// it, over every ASCII character but NUL (which text cannot hold) in random messages and at the
// edges; and StoredWords keeps the words of every other message.
func TestPostgresDerivesTheWordsOfASCIIMessages(t *testing.T) {
	db, err := sqlx.Open("postgres", pg.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := rand.New(rand.NewPCG(12, 34))
	messages := []string{"", " ", "___", "a", "Z9_", "GET /api/v1/Orders/12 completed in 5 ms request_id=AB_c", "\t\r\n\x01\x7f", "--a--B--"}
	var all strings.Builder
	for c := 1; c < 0x80; c++ {
		all.WriteByte(byte(c))
	}
	messages = append(messages, all.String())
	for range 500 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(1 + r.IntN(0x7f))
		}
		messages = append(messages, string(b))
	}
	for _, m := range messages {
		if w := migrations.StoredWords(m); w != nil {
			t.Fatalf("StoredWords(%q) = %v, want NULL for an ASCII message", m, w)
		}
		var got string
		if err := db.GetContext(t.Context(), &got, "SELECT "+strings.Replace(migrations.WordsExpr, "COALESCE(words, ", "COALESCE(CAST(NULL AS text), ", 1)+" FROM (SELECT CAST($1 AS text) AS message) m", m); err != nil {
			t.Fatalf("derive %q: %v", m, err)
		}
		if want := domain.WordText(m); got != want {
			t.Errorf("PostgreSQL derives %q from %q, WordText is %q", got, m, want)
		}
	}
	for _, m := range []string{"Café au LAIT", "naïve_x", "ΣΊΣΥΦΟΣ", "a\u00a0b"} {
		if w := migrations.StoredWords(m); w != domain.WordText(m) {
			t.Errorf("StoredWords(%q) = %v, want its WordText %q", m, w, domain.WordText(m))
		}
	}
}
