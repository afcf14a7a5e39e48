package migrations

// Migration 00016 on PostgreSQL (SQLite has none): the two GIN indexes of the query language,
// logs_words and logs_attr_terms, index each entry's words and attribute terms beside its
// project's id (ProjectWordsExpr, ProjectTermsExpr), so that a word or an attribute equality
// asks for "this project and this term" and reads the candidates of the project asked about
// alone. Before, a term was one posting list over the whole table: an equality that 100 entries
// of a project match, with the same value in nine other projects, fetched 1,000 rows to keep
// 100, and the waste grew with every project sharing a value (a route, a service name, an error
// code), whatever the project asked held.
//
// The project is an element of the indexed array, not a column of its own: a GIN index over
// project_id (btree_gin) would also be a way to read a whole project, which the planner then
// weighs against the B-tree indexes made for that, and it needs an extension. A project's id
// is text with hyphens, which no word (letters, digits, "_") and no term hash (decimal digits)
// can equal.
//
// The indexes are rebuilt in the migration's transaction: the table is read once per index,
// with maintenance_work_mem bounding the memory of each build. Nothing is rewritten.

// projectTermsVersion is the number of the migration in goose's sequence.
const projectTermsVersion = 16

// ProjectWordsExpr is what logs_words indexes since 00016: the entry's project id as text,
// then its words (WordsExpr) one element each. A words term asks that it contain the project's
// id and the term's whole words.
const ProjectWordsExpr = `array_prepend(CAST(project_id AS text), string_to_array(` + WordsExpr + `, ' '))`

// ProjectTermsExpr is what logs_attr_terms indexes since 00016: the entry's project id as
// text, then its attr_terms (TermHashes) in decimal. An attribute equality asks that it contain
// the project's id and one of its terms' hashes.
const ProjectTermsExpr = `array_prepend(CAST(project_id AS text), CAST(attr_terms AS text[]))`

const (
	projectTermsUp = `DROP INDEX logs_words;
CREATE INDEX logs_words ON logs USING gin ((` + ProjectWordsExpr + `));
DROP INDEX logs_attr_terms;
CREATE INDEX logs_attr_terms ON logs USING gin ((` + ProjectTermsExpr + `))`
	projectTermsDown = `DROP INDEX logs_attr_terms;
CREATE INDEX logs_attr_terms ON logs USING gin (attr_terms);
DROP INDEX logs_words;
CREATE INDEX logs_words ON logs USING gin (string_to_array(` + WordsExpr + `, ' '))`
)
