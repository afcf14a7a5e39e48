package server

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"example.com/obsvc/adapters/esbulk"
	"example.com/obsvc/adapters/httpapi"
	"example.com/obsvc/adapters/otlpapi"
	"example.com/obsvc/adapters/tailhub"
	"example.com/obsvc/adapters/twirpapi"
	"example.com/obsvc/domain"
)

// Config is every setting of the service. The command gives each a flag and an environment
// variable (app/config.go).
type Config struct {
	Addr            string
	MetricsAddr     string
	PprofAddr       string
	DatabaseURL     string
	LogLevel        string
	ShutdownTimeout time.Duration
	RequestTimeout  time.Duration
	MaxBodyBytes    int64
	MemoryLimit     int64
	MaxBatchEntries int
	MaxAttributes   int
	MaxAttrKeyChars int
	MaxAttrBytes    int
	IdemWindow      time.Duration
	APIKeys         string
	APIKeysFile     string
	MaxInFlight     int
	MaxInFlightPer  int
	MaxReadsPerKey  int
	ReadShareWait   time.Duration
	MaxQueryChars   int
	MaxQueryDepth   int
	MaxQueryTerms   int
	MaxSearches     int
	TwirpMaxBody    int64
	OTLPMaxBody     int64
	OTLPMaxDecodes  int
	OTLPMaxDecPer   int
	ESMaxBody       int64
	ESMaxDecodes    int
	AllowOpen       bool
	WriteRate       float64
	WriteBurst      int
	ReadHeaderTO    time.Duration
	ReadTO          time.Duration
	WriteTO         time.Duration
	StallTO         time.Duration
	ExportPageSize  int
	IdleTO          time.Duration
	RetentionDays   int
	RetentionEvery  time.Duration
	RetentionBatch  int
	RetentionDuty   float64
	MaxTails        int
	MaxTailsTotal   int
	TailPoll        time.Duration
	TailHeartbeat   time.Duration
	TailCoalesce    time.Duration
}

// DefaultConfig is the configuration of a service started without flags or environment.
func DefaultConfig() Config {
	return Config{
		Addr:            ":8080",
		LogLevel:        "info",
		ShutdownTimeout: 15 * time.Second,
		RequestTimeout:  time.Minute,
		MaxBodyBytes:    httpapi.DefaultMaxBodyBytes,
		MaxBatchEntries: domain.DefaultLimits().MaxBatchEntries,
		MaxAttributes:   domain.DefaultLimits().MaxAttributes,
		MaxAttrKeyChars: domain.DefaultLimits().MaxAttributeKeyChars,
		MaxAttrBytes:    domain.DefaultLimits().MaxAttributesBytes,
		IdemWindow:      domain.DefaultLimits().IdempotencyWindow,
		MemoryLimit:     100 << 20,
		MaxInFlight:     64,
		MaxInFlightPer:  16,
		ReadShareWait:   domain.DefaultLimits().ReadShareWait,
		MaxQueryChars:   domain.DefaultLimits().Query.MaxChars,
		MaxQueryDepth:   domain.DefaultLimits().Query.MaxDepth,
		MaxQueryTerms:   domain.DefaultLimits().Query.MaxTerms,
		MaxSearches:     domain.DefaultLimits().MaxSearchesPerProject,
		TwirpMaxBody:    twirpapi.DefaultMaxBodyBytes,
		OTLPMaxBody:     otlpapi.DefaultMaxBodyBytes,
		OTLPMaxDecodes:  otlpapi.DefaultMaxDecodes,
		OTLPMaxDecPer:   otlpapi.DefaultMaxDecodesPerClient,
		ESMaxBody:       esbulk.DefaultMaxBodyBytes,
		ESMaxDecodes:    esbulk.DefaultMaxDecodes,
		WriteBurst:      20,
		ReadHeaderTO:    10 * time.Second,
		ReadTO:          time.Minute,
		WriteTO:         5 * time.Minute,
		StallTO:         httpapi.DefaultStallTimeout,
		ExportPageSize:  domain.DefaultLimits().DefaultPageSize,
		IdleTO:          2 * time.Minute,
		RetentionEvery:  time.Minute,
		RetentionBatch:  5000,
		RetentionDuty:   0.05,
		MaxTails:        tailhub.DefaultOptions().MaxPerKey,
		MaxTailsTotal:   tailhub.DefaultOptions().MaxTotal,
		TailPoll:        tailhub.DefaultOptions().Poll,
		TailHeartbeat:   httpapi.DefaultTailHeartbeat,
		TailCoalesce:    tailhub.DefaultOptions().Coalesce,
	}
}

// Level is LOG_LEVEL as slog's level; the command has validated it.
func (c Config) Level() slog.Level {
	var l slog.Level
	_ = l.UnmarshalText([]byte(c.LogLevel))
	return l
}

// loadKeys reads the API keys of API_KEYS and API_KEYS_FILE.
func (c Config) loadKeys() (*domain.Keys, error) {
	text := c.APIKeys
	if c.APIKeysFile != "" {
		b, err := os.ReadFile(c.APIKeysFile)
		if err != nil {
			return nil, fmt.Errorf("invalid API_KEYS_FILE: %w", err)
		}
		text += "\n" + string(b)
	}
	keys, err := parseKeys(text)
	if err != nil {
		return nil, fmt.Errorf("invalid API_KEYS / API_KEYS_FILE: %w", err)
	}
	return keys, nil
}

// emptyDigest is the SHA-256 of the empty string: the digest a key recipe yields when its secret
// variable is unset. A key with it would let an empty secret in, so parseKeys refuses it.
const emptyDigest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// parseKeys reads key lines: "admin sha256:HEX" or "project PROJECT_ID sha256:HEX", separated by
// newlines or commas; blank lines and lines starting with # are skipped. HEX is the SHA-256 of
// the secret a client sends as "Authorization: Bearer SECRET". It refuses the digest of the empty
// secret and a digest listed twice (which line would win is not something to leave to order).
func parseKeys(text string) (*domain.Keys, error) {
	var keys []domain.Key
	seen := map[string]int{}
	for i, line := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == ',' }) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		var p domain.Principal
		var digest string
		switch {
		case len(f) == 2 && f[0] == "admin":
			p, digest = domain.Principal{Admin: true}, f[1]
		case len(f) == 3 && f[0] == "project":
			if !domain.ValidID(f[1]) {
				return nil, fmt.Errorf("key %d: %q is not a project id", i+1, f[1])
			}
			p, digest = domain.Principal{ProjectID: f[1]}, f[2]
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
		k := domain.Key{Principal: p}
		copy(k.Digest[:], b)
		keys = append(keys, k)
	}
	return domain.NewKeys(keys...), nil
}

// Limits are the domain limits this configuration sets.
func (c Config) Limits() domain.Limits {
	l := domain.DefaultLimits()
	l.MaxBatchEntries = c.MaxBatchEntries
	l.MaxAttributes = c.MaxAttributes
	l.MaxAttributeKeyChars = c.MaxAttrKeyChars
	l.MaxAttributesBytes = c.MaxAttrBytes
	l.IdempotencyWindow = c.IdemWindow
	l.DefaultRetentionDays = c.RetentionDays
	l.MaxReadsPerKey = c.MaxReadsPerKey
	l.ReadShareWait = c.ReadShareWait
	l.Query = domain.QueryLimits{MaxChars: c.MaxQueryChars, MaxDepth: c.MaxQueryDepth, MaxTerms: c.MaxQueryTerms}
	l.MaxSearchesPerProject = c.MaxSearches
	return l
}

// ReadShare is MAX_READS_PER_KEY, or when it is 0 half the read connections of the store's
// pools (the reader pool, or the one pool where reads and writes share it) and at most half
// the CPUs the process may use (cpus, GOMAXPROCS), at least one; no share (0) when that pool
// has no bound. The CPUs bound it because an expensive read is CPU work in the database: on a
// machine with two CPUs, eight such reads of one key leave another key's page a ninth of them,
// one leaves it the other CPU. A database on its own, larger machine can take more: set
// MAX_READS_PER_KEY.
func (c Config) ReadShare(pools map[string]*sql.DB, cpus int) int {
	if c.MaxReadsPerKey > 0 {
		return c.MaxReadsPerKey
	}
	readers := pools["reader"]
	if readers == nil {
		readers = pools["main"]
	}
	if readers == nil || readers.Stats().MaxOpenConnections <= 0 {
		return 0
	}
	return max(min(readers.Stats().MaxOpenConnections/2, cpus/2), 1)
}

// tailOptions are the bounds of the live tail.
func (c Config) tailOptions() tailhub.Options {
	o := tailhub.DefaultOptions()
	o.MaxPerKey, o.MaxTotal, o.Poll, o.Coalesce = c.MaxTails, c.MaxTailsTotal, c.TailPoll, c.TailCoalesce
	o.ReadTimeout = c.RequestTimeout
	return o
}
