package server

import (
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"time"

	"example.com/obsvc/adapters/httpapi"
	"example.com/obsvc/adapters/otlpapi"
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
	MaxStatsSeries  int
	TwirpMaxBody    int64
	OTLPMaxBody     int64
	OTLPMaxDecodes  int
	OTLPMaxDecPer   int
	AllowOpen       bool
	WriteRate       float64
	WriteBurst      int
	ReadHeaderTO    time.Duration
	ReadTO          time.Duration
	WriteTO         time.Duration
	StallTO         time.Duration
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
		MaxStatsSeries:  domain.DefaultLimits().MaxStatsSeries,
		TwirpMaxBody:    twirpapi.DefaultMaxBodyBytes,
		OTLPMaxBody:     otlpapi.DefaultMaxBodyBytes,
		OTLPMaxDecodes:  otlpapi.DefaultMaxDecodes,
		OTLPMaxDecPer:   otlpapi.DefaultMaxDecodesPerClient,
		WriteBurst:      20,
		ReadHeaderTO:    10 * time.Second,
		ReadTO:          time.Minute,
		WriteTO:         5 * time.Minute,
		StallTO:         httpapi.DefaultStallTimeout,
		IdleTO:          2 * time.Minute,
		RetentionEvery:  time.Minute,
		RetentionBatch:  5000,
		RetentionDuty:   0.05,
		MaxTails:        domain.DefaultTailOptions().MaxPerKey,
		MaxTailsTotal:   domain.DefaultTailOptions().MaxTotal,
		TailPoll:        domain.DefaultTailOptions().Poll,
		TailHeartbeat:   httpapi.DefaultTailHeartbeat,
		TailCoalesce:    domain.DefaultTailOptions().Coalesce,
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
	keys, err := domain.ParseKeys(text)
	if err != nil {
		return nil, fmt.Errorf("invalid API_KEYS / API_KEYS_FILE: %w", err)
	}
	return keys, nil
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
	l.MaxStatsSeries = c.MaxStatsSeries
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
func (c Config) tailOptions() domain.TailOptions {
	o := domain.DefaultTailOptions()
	o.MaxPerKey, o.MaxTotal, o.Poll, o.Coalesce = c.MaxTails, c.MaxTailsTotal, c.TailPoll, c.TailCoalesce
	o.ReadTimeout = c.RequestTimeout
	return o
}
