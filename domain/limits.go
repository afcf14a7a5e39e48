package domain

import "time"

// Limits are the domain's size rules. They are configuration, not constants: the composition root
// may change any of them. DefaultLimits gives the values the API contract documents.
type Limits struct {
	// MaxBatchEntries is the most entries one write may carry (KindTooLarge beyond).
	MaxBatchEntries int
	// MaxMessageBytes is the longest message in bytes of UTF-8.
	MaxMessageBytes int
	// MaxNameChars is the longest project name in characters.
	MaxNameChars int
	// MaxLevelChars is the longest level in characters (a level or log_level filter).
	MaxLevelChars int
	// MaxSubjectBytes and MaxUserIDBytes bound the optional string fields of an entry, and the
	// user_id filter, in bytes of UTF-8: both are keys of indexes, and an index entry has a size
	// limit in bytes (PostgreSQL's B-tree holds at most about 2,700 bytes per entry).
	MaxSubjectBytes int
	MaxUserIDBytes  int
	// MaxAttributes, MaxAttributeKeyChars and MaxAttributesBytes bound an entry's attributes: how
	// many top-level keys, how long each of those keys is in characters (at least one), and how
	// long the stored (canonical, compact) encoding of the whole object is in bytes.
	MaxAttributes        int
	MaxAttributeKeyChars int
	MaxAttributesBytes   int
	// MaxAttributesDepth bounds how deeply attributes nest, the object itself being level 1:
	// PostgreSQL parses JSON recursively, and no input may make a store fail.
	MaxAttributesDepth int
	// DefaultPageSize is the page size of a listing that names none; MaxPageSize the largest allowed.
	DefaultPageSize int
	MaxPageSize     int
	// MaxFieldErrors caps how many offending fields one error lists, so a bad 10,000-entry batch
	// does not answer with a 10,000-member error list.
	MaxFieldErrors int
	// IdempotencyWindow is how long an idempotency key is remembered.
	IdempotencyWindow time.Duration
	// DefaultRetentionDays is the retention of a project created without one; 0 keeps its
	// entries forever.
	DefaultRetentionDays int
	// MaxReadsPerKey is how many store reads (listings, searches, stats, facets, filtered
	// deletes) one key runs at once; past it a read waits up to ReadShareWait for one of them
	// to finish, then is KindRateLimited. Zero or less: no share.
	MaxReadsPerKey int
	ReadShareWait  time.Duration
	// Query bounds the query parameter's text and tree.
	Query QueryLimits
	// MaxSearchesPerProject is how many saved searches one project may hold (KindConflict
	// beyond); zero or less: DefaultMaxSearches.
	MaxSearchesPerProject int
	// MaxAlertsPerProject is how many alert rules one project may hold (KindConflict beyond);
	// zero or less: DefaultMaxAlerts.
	MaxAlertsPerProject int
}

// DefaultLimits returns the limits the API contract documents.
func DefaultLimits() Limits {
	return Limits{
		MaxBatchEntries: 10_000,
		MaxMessageBytes: 64 << 10,
		MaxNameChars:    256,
		MaxLevelChars:   32,
		MaxSubjectBytes: 1024,
		MaxUserIDBytes:  1024,

		MaxAttributes:        128,
		MaxAttributeKeyChars: 256,
		MaxAttributesBytes:   64 << 10,
		MaxAttributesDepth:   32,

		DefaultPageSize: 1000,
		MaxPageSize:     10_000,
		MaxFieldErrors:  100,

		IdempotencyWindow: 24 * time.Hour,

		MaxReadsPerKey: 2,
		ReadShareWait:  5 * time.Second,
		Query:          QueryLimits{MaxChars: 4096, MaxDepth: 32, MaxTerms: 256},

		MaxSearchesPerProject: DefaultMaxSearches,
		MaxAlertsPerProject:   DefaultMaxAlerts,
	}
}
