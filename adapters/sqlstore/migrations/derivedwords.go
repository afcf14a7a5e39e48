package migrations

import "example.com/obsvc/domain"

// Migration 00012 on PostgreSQL (SQLite's 00012 is attrterms.go): a message of ASCII alone no
// longer stores its words, which PostgreSQL derives from the message itself (WordsExpr). Such
// a message's words are its runs of ASCII letters, digits and "_", lowered, which is exactly
// domain.WordText of it; the column held them again, about 100 bytes an entry of the typical
// message. words becomes nullable (StoredWords is what the store writes), and logs_words is
// rebuilt over WordsExpr. Rows written before keep their words, which give the same answer, so
// nothing is rewritten; the index build reads the table once.

// WordsExpr is a message's WordText on PostgreSQL since 00012: the words column, or, where it
// is NULL, the message lowered (ASCII only, whatever the database's locale), each run of
// characters other than a to z, 0 to 9 and "_" made one space, and trimmed. The query
// language's word terms and the index logs_words use this exact text.
const WordsExpr = `COALESCE(words, btrim(regexp_replace(lower(message COLLATE "C"), '[^a-z0-9_]+', ' ', 'g'), ' '))`

// StoredWords is what logs.words holds for a message on PostgreSQL: NULL (nil) when the
// message is ASCII, whose words WordsExpr derives; its WordText otherwise.
func StoredWords(message string) any {
	for i := 0; i < len(message); i++ {
		if message[i] >= 0x80 {
			return domain.WordText(message)
		}
	}
	return nil
}

const (
	derivedWordsUp = `ALTER TABLE logs ALTER COLUMN words DROP NOT NULL;
ALTER TABLE logs ALTER COLUMN words DROP DEFAULT;
DROP INDEX logs_words;
CREATE INDEX logs_words ON logs USING gin (string_to_array(` + WordsExpr + `, ' '))`
	derivedWordsDown = `DROP INDEX logs_words;
UPDATE logs SET words = ` + WordsExpr + ` WHERE words IS NULL;
ALTER TABLE logs ALTER COLUMN words SET DEFAULT '';
ALTER TABLE logs ALTER COLUMN words SET NOT NULL;
CREATE INDEX logs_words ON logs USING gin (string_to_array(words, ' '))`
)
