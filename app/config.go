package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"example.com/obsvc/adapters/httpapi"
	"example.com/obsvc/domain"
)

// config is every setting of the service. Each has a flag and an environment variable; a flag
// given on the command line wins over the variable, which wins over the default.
type config struct {
	Addr            string
	MetricsAddr     string
	DatabaseURL     string
	LogLevel        slog.Level
	ShutdownTimeout time.Duration
	RequestTimeout  time.Duration
	MaxBodyBytes    int64
	MemoryLimit     int64
	MaxBatchEntries int
	IdemWindow      time.Duration
	APIKeys         string
	APIKeysFile     string
	MaxInFlight     int
	WriteRate       float64
	WriteBurst      int
	ReadHeaderTO    time.Duration
	ReadTO          time.Duration
	WriteTO         time.Duration
	IdleTO          time.Duration
}

// defaultSQLitePath is where the embedded store lives when DATABASE_URL is empty.
const defaultSQLitePath = "data/obsvc.db"

// setting describes one configuration entry for flags, environment and -h.
type setting struct {
	flag, env, usage string
	value            flag.Value
}

func settings(c *config) []setting {
	return []setting{
		{"addr", "ADDR", "`host:port` to listen on", stringVar(&c.Addr)},
		{"metrics-addr", "METRICS_ADDR", "serve /metrics on this `host:port` instead of the main address", stringVar(&c.MetricsAddr)},
		{"database-url", "DATABASE_URL", "`store`: empty = SQLite at " + defaultSQLitePath + ", sqlite:PATH, or postgres://...", stringVar(&c.DatabaseURL)},
		{"log-level", "LOG_LEVEL", "log `level`: debug, info, warn or error", levelVar{&c.LogLevel}},
		{"shutdown-timeout", "SHUTDOWN_TIMEOUT", "how long in-flight requests may take to finish after SIGINT/SIGTERM (a `duration`)", durationVar(&c.ShutdownTimeout)},
		{"request-timeout", "REQUEST_TIMEOUT", "deadline of each request's work, store calls included (503 when the store does not answer in time; a `duration`)", durationVar(&c.RequestTimeout)},
		{"max-body-bytes", "MAX_BODY_BYTES", "largest request body in `bytes` (413 beyond)", int64Var(&c.MaxBodyBytes)},
		{"max-batch-entries", "MAX_BATCH_ENTRIES", "most `entries` in one POST /logs (413 beyond)", intVar(&c.MaxBatchEntries)},
		{"api-keys", "API_KEYS", "API `keys`, comma- or newline-separated: \"admin sha256:HEX\" or \"project ID sha256:HEX\" (HEX = SHA-256 of the secret); none = open", stringVar(&c.APIKeys)},
		{"api-keys-file", "API_KEYS_FILE", "read API keys, one per line, from this `file` too", stringVar(&c.APIKeysFile)},
		{"idempotency-window", "IDEMPOTENCY_WINDOW", "how long an Idempotency-Key of POST /logs is remembered (a `duration`)", durationVar(&c.IdemWindow)},
		{"memory-limit", "MEMORY_LIMIT", "soft limit of the Go heap in `bytes` (the garbage collector works harder near it; 0 = none; GOMEMLIMIT, when set, wins)", int64Var(&c.MemoryLimit)},
		{"max-in-flight", "MAX_IN_FLIGHT", "requests served at once; more are refused with 503 (0 = no cap)", intVar(&c.MaxInFlight)},
		{"write-rate", "WRITE_RATE", "writes per second per API key (per client address without keys), 429 beyond; 0 = off", floatVar(&c.WriteRate)},
		{"write-burst", "WRITE_BURST", "writes a key may make at once before WRITE_RATE applies", intVar(&c.WriteBurst)},
		{"read-header-timeout", "READ_HEADER_TIMEOUT", "time allowed to read request headers (a `duration`)", durationVar(&c.ReadHeaderTO)},
		{"read-timeout", "READ_TIMEOUT", "time allowed to read a whole request (a `duration`)", durationVar(&c.ReadTO)},
		{"write-timeout", "WRITE_TIMEOUT", "time allowed to write a response (a `duration`)", durationVar(&c.WriteTO)},
		{"idle-timeout", "IDLE_TIMEOUT", "how long an idle keep-alive connection stays open (a `duration`)", durationVar(&c.IdleTO)},
	}
}

func defaultConfig() config {
	return config{
		Addr:            ":8080",
		LogLevel:        slog.LevelInfo,
		ShutdownTimeout: 15 * time.Second,
		RequestTimeout:  time.Minute,
		MaxBodyBytes:    httpapi.DefaultMaxBodyBytes,
		MaxBatchEntries: domain.DefaultLimits().MaxBatchEntries,
		IdemWindow:      domain.DefaultLimits().IdempotencyWindow,
		MemoryLimit:     100 << 20,
		MaxInFlight:     64,
		WriteBurst:      20,
		ReadHeaderTO:    10 * time.Second,
		ReadTO:          time.Minute,
		WriteTO:         5 * time.Minute,
		IdleTO:          2 * time.Minute,
	}
}

// parseConfig reads the environment, then the flags. It returns flag.ErrHelp after printing the
// usage for -h.
func parseConfig(args []string, getenv func(string) string, out io.Writer) (config, error) {
	c := defaultConfig()
	fs := flag.NewFlagSet("obsvc", flag.ContinueOnError)
	fs.SetOutput(out)
	all := settings(&c)
	for _, s := range all {
		// Registered before the environment is applied, so -h shows the built-in defaults.
		fs.Var(s.value, s.flag, fmt.Sprintf("%s (env %s)", s.usage, s.env))
	}
	for _, s := range all {
		if v := getenv(s.env); v != "" {
			if err := s.value.Set(v); err != nil {
				return c, fmt.Errorf("invalid %s=%q: %w", s.env, v, err)
			}
		}
	}
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: obsvc [flags]\n\nServes the REST API and the Twirp Haberdasher on one port.\nEvery flag can also be set by its environment variable; flags win.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	return c, c.validate()
}

func (c config) validate() error {
	switch {
	case c.Addr == "":
		return fmt.Errorf("invalid ADDR: must not be empty")
	case c.MaxBodyBytes <= 0:
		return fmt.Errorf("invalid MAX_BODY_BYTES: must be positive")
	case c.MaxBatchEntries <= 0:
		return fmt.Errorf("invalid MAX_BATCH_ENTRIES: must be positive")
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("invalid SHUTDOWN_TIMEOUT: must be positive")
	case c.RequestTimeout <= 0:
		return fmt.Errorf("invalid REQUEST_TIMEOUT: must be positive")
	case c.IdemWindow <= 0:
		return fmt.Errorf("invalid IDEMPOTENCY_WINDOW: must be positive")
	case c.MemoryLimit < 0:
		return fmt.Errorf("invalid MEMORY_LIMIT: must not be negative")
	case c.MaxInFlight < 0:
		return fmt.Errorf("invalid MAX_IN_FLIGHT: must not be negative")
	case c.WriteRate < 0:
		return fmt.Errorf("invalid WRITE_RATE: must not be negative")
	case c.WriteBurst < 1:
		return fmt.Errorf("invalid WRITE_BURST: must be at least 1")
	}
	for name, d := range map[string]time.Duration{"READ_HEADER_TIMEOUT": c.ReadHeaderTO, "READ_TIMEOUT": c.ReadTO, "WRITE_TIMEOUT": c.WriteTO, "IDLE_TIMEOUT": c.IdleTO} {
		if d < 0 {
			return fmt.Errorf("invalid %s: must not be negative", name)
		}
	}
	return nil
}

type stringValue struct{ p *string }

func stringVar(p *string) flag.Value { return stringValue{p} }
func (v stringValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}
func (v stringValue) Set(s string) error      { *v.p = s; return nil }
func durationVar(p *time.Duration) flag.Value { return durationValue{p} }

type durationValue struct{ p *time.Duration }

func (v durationValue) String() string {
	if v.p == nil {
		return ""
	}
	return v.p.String()
}
func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration such as 30s or 2m")
	}
	*v.p = d
	return nil
}

type floatValue struct{ p *float64 }

func floatVar(p *float64) flag.Value { return floatValue{p} }
func (v floatValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.FormatFloat(*v.p, 'g', -1, 64)
}
func (v floatValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("not a number")
	}
	*v.p = f
	return nil
}

type int64Value struct{ p *int64 }

func int64Var(p *int64) flag.Value { return int64Value{p} }
func (v int64Value) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.FormatInt(*v.p, 10)
}
func (v int64Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not a whole number")
	}
	*v.p = n
	return nil
}

type intValue struct{ p *int }

func intVar(p *int) flag.Value { return intValue{p} }
func (v intValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.Itoa(*v.p)
}
func (v intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("not a whole number")
	}
	*v.p = n
	return nil
}

type levelVar struct{ p *slog.Level }

func (v levelVar) String() string {
	if v.p == nil {
		return ""
	}
	return strings.ToLower(v.p.String())
}
func (v levelVar) Set(s string) error { return v.p.UnmarshalText([]byte(s)) }

// logEffective logs the configuration in force, with the database password redacted.
func (c config) logEffective(log *slog.Logger) {
	attrs := make([]any, 0, 2*12)
	for _, s := range settings(&c) {
		v := s.value.String()
		switch s.env {
		case "DATABASE_URL":
			v = redactURL(v)
		case "API_KEYS":
			if v != "" {
				v = "(set, not shown)"
			}
		}
		attrs = append(attrs, s.env, v)
	}
	log.Info("configuration", attrs...)
}

// redactURL hides the password of a URL; text that is not a URL with user info is kept as is.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if err != nil && strings.Contains(raw, "@") {
			return "(unparseable, redacted)"
		}
		return raw
	}
	return u.Redacted()
}

// loadKeys reads the API keys of API_KEYS and API_KEYS_FILE.
func (c config) loadKeys() (*domain.Keys, error) {
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

// limits are the domain limits this configuration sets.
func (c config) limits() domain.Limits {
	l := domain.DefaultLimits()
	l.MaxBatchEntries = c.MaxBatchEntries
	l.IdempotencyWindow = c.IdemWindow
	return l
}
