package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"example.com/obsvc/adapters/edge"
	"example.com/obsvc/app/server"
	"example.com/obsvc/domain"
)

// config is every setting of the service (server.Config) with its flags and environment
// variables: each setting has both (the flag's name in upper case with - as _); a flag given on
// the command line wins over the variable, which wins over the default.
type config struct {
	server.Config
}

// defaultSQLitePath is where the embedded store lives when DATABASE_URL is empty.
const defaultSQLitePath = "data/obsvc.db"

func defaultConfig() config { return config{server.DefaultConfig()} }

// flags registers every setting of c on a new flag set, with c's values as the defaults -h shows.
func (c *config) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("obsvc", flag.ContinueOnError)
	str := func(p *string, name, usage string) { fs.StringVar(p, name, *p, withEnv(name, usage)) }
	dur := func(p *time.Duration, name, usage string) { fs.DurationVar(p, name, *p, withEnv(name, usage)) }
	num := func(p *int, name, usage string) { fs.IntVar(p, name, *p, withEnv(name, usage)) }
	num64 := func(p *int64, name, usage string) { fs.Int64Var(p, name, *p, withEnv(name, usage)) }

	str(&c.Addr, "addr", "`host:port` to listen on")
	str(&c.MetricsAddr, "metrics-addr", "serve /metrics on this `host:port` instead of the main address")
	str(&c.PprofAddr, "pprof-addr", "serve Go's profiles (/debug/pprof/) on this loopback `host:port`; empty = off")
	str(&c.DatabaseURL, "database-url", "`store`: empty = SQLite at "+defaultSQLitePath+", sqlite:PATH, or postgres://...")
	str(&c.LogLevel, "log-level", "log `level`: debug, info, warn or error")
	dur(&c.ShutdownTimeout, "shutdown-timeout", "how long in-flight requests may take to finish after SIGINT/SIGTERM (a `duration`)")
	dur(&c.RequestTimeout, "request-timeout", "deadline of each request's work, store calls included (503 when the store does not answer in time; a `duration`)")
	num64(&c.MaxBodyBytes, "max-body-bytes", "largest request body in `bytes` (413 beyond)")
	num(&c.MaxBatchEntries, "max-batch-entries", "most `entries` in one POST /logs (413 beyond)")
	num(&c.MaxAttributes, "max-attributes", "most top-level `keys` in an entry's attributes (400 beyond; an OTLP record beyond is rejected)")
	num(&c.MaxAttrKeyChars, "max-attribute-key-chars", "longest top-level attribute key in `characters`")
	num(&c.MaxAttrBytes, "max-attributes-bytes", "longest encoding of an entry's attributes in `bytes` (compact JSON)")
	str(&c.APIKeys, "api-keys", "API `keys`, comma- or newline-separated: \"admin sha256:HEX\" or \"project ID sha256:HEX\" (HEX = SHA-256 of the secret); none = open")
	str(&c.APIKeysFile, "api-keys-file", "read API keys, one per line, from this `file` too")
	dur(&c.IdemWindow, "idempotency-window", "how long an Idempotency-Key of POST /logs is remembered (a `duration`)")
	num64(&c.MemoryLimit, "memory-limit", "soft limit of the Go heap in `bytes` (the garbage collector works harder near it; 0 = none; GOMEMLIMIT, when set, wins)")
	num(&c.MaxInFlight, "max-in-flight", "requests served at once; more are refused with 503 (0 = no cap)")
	num(&c.MaxInFlightPer, "max-in-flight-per-client", "requests one API key (one address without keys) may have in flight; more are refused with 429 (0 = no cap)")
	num(&c.MaxReadsPerKey, "max-reads-per-key", "store reads (listings, searches, stats, facets, filtered deletes, a tail's replay and catch-up) one API key (one project without keys) runs at once; more wait READ_SHARE_WAIT for one to finish, then are refused with 429 (0 = half the store's read connections and at most half of GOMAXPROCS, at least 1)")
	dur(&c.ReadShareWait, "read-share-wait", "how long a read past MAX_READS_PER_KEY waits for one of its key's reads to finish before 429 (a `duration`)")
	num(&c.MaxQueryChars, "max-query-chars", "longest query parameter (the query language) in `characters`; 400 naming query beyond")
	num(&c.MaxQueryDepth, "max-query-depth", "deepest nesting of parentheses and NOT in a query parameter; 400 naming query beyond")
	num(&c.MaxQueryTerms, "max-query-terms", "most terms (words, phrases, field conditions) in a query parameter; 400 naming query beyond")
	num(&c.MaxSearches, "max-searches-per-project", "most saved `searches` one project may hold; POST /searches beyond is refused with 409")
	num64(&c.TwirpMaxBody, "twirp-max-body-bytes", "largest Twirp request body in `bytes` (a Twirp malformed error beyond)")
	num64(&c.OTLPMaxBody, "otlp-max-body-bytes", "largest OTLP request body (POST /v1/logs) in `bytes` after decompression (413 beyond)")
	num(&c.OTLPMaxDecodes, "otlp-max-decodes", "OTLP requests read and decoded at once; more are refused with 503")
	num(&c.OTLPMaxDecPer, "otlp-max-decodes-per-client", "OTLP requests one API key (one address without keys) may have read and decoded at once; more are refused with 429")
	num64(&c.ESMaxBody, "es-max-body-bytes", "largest Elasticsearch bulk request body (POST /_bulk) in `bytes` after decompression (413 beyond)")
	num(&c.ESMaxDecodes, "es-max-decodes", "Elasticsearch bulk requests read, decoded and stored at once; more are refused with 429")
	fs.BoolVar(&c.AllowOpen, "allow-open-network", c.AllowOpen, withEnv("allow-open-network", "without API keys, serve on a non-loopback ADDR and to any Host anyway (the service is then open to anyone who can reach it)"))
	fs.Float64Var(&c.WriteRate, "write-rate", c.WriteRate, withEnv("write-rate", "writes per second per API key (per client address without keys), 429 beyond; 0 = off"))
	num(&c.WriteBurst, "write-burst", "writes a key may make at once before WRITE_RATE applies")
	dur(&c.ReadHeaderTO, "read-header-timeout", "time allowed to read request headers (a `duration`)")
	dur(&c.ReadTO, "read-timeout", "time allowed to read a whole request (a `duration`)")
	dur(&c.WriteTO, "write-timeout", "time allowed to write a response (a `duration`)")
	dur(&c.StallTO, "stall-timeout", "a streamed listing whose client takes no more of it for this long is cut off (a `duration`)")
	num(&c.ExportPageSize, "export-page-size", "`entries` a download (GET /logs/export) reads from the store at a time, 1..10000: its memory, and each read bounded by REQUEST_TIMEOUT")
	dur(&c.IdleTO, "idle-timeout", "how long an idle keep-alive connection stays open (a `duration`)")
	num(&c.RetentionDays, "log-retention-days", "retention in `days` (1..3650) of a project created without one; 0 = keep forever")
	dur(&c.RetentionEvery, "retention-interval", "how often entries past their project's retention are deleted (a `duration`)")
	num(&c.RetentionBatch, "retention-batch", "most `entries` one retention delete transaction removes")
	fs.Float64Var(&c.RetentionDuty, "retention-duty", c.RetentionDuty, withEnv("retention-duty", "while ingest competes with it, the most of its wall time (0..1] the retention sweep spends in delete transactions; it rests between them for the rest, and does not rest while no write competes"))
	num(&c.MaxTails, "max-tails", "live tails (GET /logs/tail) one API key (one address without keys) may hold open; more are refused with 429")
	num(&c.MaxTailsTotal, "max-tails-total", "live tails this instance holds open in all; more are refused with 429")
	dur(&c.TailPoll, "tail-poll", "how often an idle live tail looks for entries written through other instances (a `duration`)")
	dur(&c.TailHeartbeat, "tail-heartbeat", "an idle live tail sends a comment line after this long, so proxies keep it open (a `duration`)")
	dur(&c.TailCoalesce, "tail-coalesce", "least time between two reads of a tailed project under a steady stream, so that each live tail sends at most about once per interval; what is written sooner goes out with the next read, and a project quiet this long is read at once; 0 reads and sends every write at once (a `duration`)")
	return fs
}

// envName is the environment variable of a flag: -max-body-bytes is MAX_BODY_BYTES.
func envName(flagName string) string {
	return strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func withEnv(name, usage string) string { return usage + " (env " + envName(name) + ")" }

// parseConfig reads the environment, then the flags. It returns flag.ErrHelp after printing the
// usage for -h.
func parseConfig(args []string, getenv func(string) string, out io.Writer) (config, error) {
	c := defaultConfig()
	fs := c.flags() // registered before the environment is applied, so -h shows the built-in defaults
	fs.SetOutput(out)
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		env := envName(f.Name)
		if v := getenv(env); v != "" && envErr == nil {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = fmt.Errorf("invalid %s=%q: %w", env, v, err)
			}
		}
	})
	if envErr != nil {
		return c, envErr
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
	var level slog.Level
	switch {
	case c.Addr == "":
		return fmt.Errorf("invalid ADDR: must not be empty")
	case level.UnmarshalText([]byte(c.LogLevel)) != nil:
		return fmt.Errorf("invalid LOG_LEVEL %q: want debug, info, warn or error", c.LogLevel)
	case c.MaxBodyBytes <= 0:
		return fmt.Errorf("invalid MAX_BODY_BYTES: must be positive")
	case c.MaxBatchEntries <= 0:
		return fmt.Errorf("invalid MAX_BATCH_ENTRIES: must be positive")
	case c.MaxAttributes < 1:
		return fmt.Errorf("invalid MAX_ATTRIBUTES: must be at least 1")
	case c.MaxAttrKeyChars < 1:
		return fmt.Errorf("invalid MAX_ATTRIBUTE_KEY_CHARS: must be at least 1")
	case c.MaxAttrBytes < 2:
		return fmt.Errorf("invalid MAX_ATTRIBUTES_BYTES: must be at least 2 (the empty object)")
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
	case c.MaxInFlightPer < 0:
		return fmt.Errorf("invalid MAX_IN_FLIGHT_PER_CLIENT: must not be negative")
	case c.MaxReadsPerKey < 0:
		return fmt.Errorf("invalid MAX_READS_PER_KEY: must not be negative")
	case c.ReadShareWait < 0:
		return fmt.Errorf("invalid READ_SHARE_WAIT: must not be negative")
	case c.MaxQueryChars < 1:
		return fmt.Errorf("invalid MAX_QUERY_CHARS: must be at least 1")
	case c.MaxQueryDepth < 1:
		return fmt.Errorf("invalid MAX_QUERY_DEPTH: must be at least 1")
	case c.MaxQueryTerms < 1:
		return fmt.Errorf("invalid MAX_QUERY_TERMS: must be at least 1")
	case c.MaxSearches < 1:
		return fmt.Errorf("invalid MAX_SEARCHES_PER_PROJECT: must be at least 1")
	case c.TwirpMaxBody <= 0:
		return fmt.Errorf("invalid TWIRP_MAX_BODY_BYTES: must be positive")
	case c.OTLPMaxBody <= 0:
		return fmt.Errorf("invalid OTLP_MAX_BODY_BYTES: must be positive")
	case c.OTLPMaxDecodes < 1:
		return fmt.Errorf("invalid OTLP_MAX_DECODES: must be at least 1")
	case c.OTLPMaxDecPer < 1:
		return fmt.Errorf("invalid OTLP_MAX_DECODES_PER_CLIENT: must be at least 1")
	case c.ESMaxBody <= 0:
		return fmt.Errorf("invalid ES_MAX_BODY_BYTES: must be positive")
	case c.ESMaxDecodes < 1:
		return fmt.Errorf("invalid ES_MAX_DECODES: must be at least 1")
	case c.WriteRate < 0:
		return fmt.Errorf("invalid WRITE_RATE: must not be negative")
	case c.WriteBurst < 1:
		return fmt.Errorf("invalid WRITE_BURST: must be at least 1")
	case c.RetentionDays != 0 && (c.RetentionDays < domain.MinRetentionDays || c.RetentionDays > domain.MaxRetentionDays):
		return fmt.Errorf("invalid LOG_RETENTION_DAYS: want %d to %d days, or 0 to keep forever", domain.MinRetentionDays, domain.MaxRetentionDays)
	case c.RetentionEvery <= 0:
		return fmt.Errorf("invalid RETENTION_INTERVAL: must be positive")
	case c.RetentionBatch < 1:
		return fmt.Errorf("invalid RETENTION_BATCH: must be at least 1")
	case !(c.RetentionDuty > 0 && c.RetentionDuty <= 1):
		return fmt.Errorf("invalid RETENTION_DUTY: want more than 0 and at most 1")
	}
	if c.PprofAddr != "" {
		if _, _, err := net.SplitHostPort(c.PprofAddr); err != nil || !edge.IsLoopbackHost(c.PprofAddr) {
			return fmt.Errorf("invalid PPROF_ADDR %q: want a loopback host:port such as 127.0.0.1:6060 (profiles show the service's internals)", c.PprofAddr)
		}
	}
	switch {
	case c.MaxTails < 1:
		return fmt.Errorf("invalid MAX_TAILS: must be at least 1")
	case c.MaxTailsTotal < 1:
		return fmt.Errorf("invalid MAX_TAILS_TOTAL: must be at least 1")
	case c.TailPoll <= 0:
		return fmt.Errorf("invalid TAIL_POLL: must be positive")
	case c.TailHeartbeat <= 0:
		return fmt.Errorf("invalid TAIL_HEARTBEAT: must be positive")
	case c.TailCoalesce < 0 || c.TailCoalesce >= c.TailHeartbeat:
		return fmt.Errorf("invalid TAIL_COALESCE: must be at least 0 and less than TAIL_HEARTBEAT")
	}
	if c.StallTO <= 0 {
		return fmt.Errorf("invalid STALL_TIMEOUT: must be positive")
	}
	if c.ExportPageSize < 1 || c.ExportPageSize > domain.DefaultLimits().MaxPageSize {
		return fmt.Errorf("invalid EXPORT_PAGE_SIZE: must be from 1 to %d", domain.DefaultLimits().MaxPageSize)
	}
	for name, d := range map[string]time.Duration{"READ_HEADER_TIMEOUT": c.ReadHeaderTO, "READ_TIMEOUT": c.ReadTO, "WRITE_TIMEOUT": c.WriteTO, "IDLE_TIMEOUT": c.IdleTO} {
		if d < 0 {
			return fmt.Errorf("invalid %s: must not be negative", name)
		}
	}
	return nil
}

// logEffective logs the configuration in force, with the database password redacted.
func (c config) logEffective(log *slog.Logger) {
	var attrs []any
	c.flags().VisitAll(func(f *flag.Flag) {
		v := f.Value.String()
		switch f.Name {
		case "database-url":
			v = redactURL(v)
		case "api-keys":
			if v != "" {
				v = "(set, not shown)"
			}
		}
		attrs = append(attrs, envName(f.Name), v)
	})
	log.Info("configuration", attrs...)
}

// secretParams are the query parameters of a database URL that carry secrets (lib/pq takes a
// password there as well as in the user info).
var secretParams = []string{"password", "sslpassword"}

// redactURL hides the passwords of a URL, in its user info and in its query; text that does not
// parse as a URL is hidden whole when it could hold one.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.Contains(raw, "@") || strings.Contains(strings.ToLower(raw), "password") {
			return "(unparseable, redacted)"
		}
		return raw
	}
	q := u.Query()
	for _, p := range secretParams {
		if q.Has(p) {
			q.Set(p, "xxxxx")
		}
	}
	if u.RawQuery != "" {
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// listenAddr is where the service listens. With API keys, or when the operator allowed an open
// network, it is ADDR as given. Without keys it is loopback only: ADDR without a host (":8080")
// listens on 127.0.0.1, and a non-loopback host is refused.
func (c config) listenAddr(keys bool) (string, error) {
	if keys || c.AllowOpen {
		return c.Addr, nil
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return "", fmt.Errorf("invalid ADDR %q: %w", c.Addr, err)
	}
	switch {
	case host == "":
		return net.JoinHostPort("127.0.0.1", port), nil
	case edge.IsLoopbackHost(host):
		return c.Addr, nil
	}
	return "", fmt.Errorf("refusing to serve without API keys on %s, which is not a loopback address: configure API_KEYS or API_KEYS_FILE, or set ALLOW_OPEN_NETWORK=true to let anyone who can reach it in", c.Addr)
}
