package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The six canonical levels: OpenTelemetry's severity names, lower case, from the least severe.
const (
	LevelTrace = "trace"
	LevelDebug = "debug"
	LevelInfo  = "info"
	LevelWarn  = "warn"
	LevelError = "error"
	LevelFatal = "fatal"
)

// SeverityTextAttribute is the attribute that keeps a level's text as sent when the stored level
// differs from it beyond case (OpenTelemetry's name for that text).
const SeverityTextAttribute = "severity_text"

// levelSynonyms maps the level names that common loggers write, under FoldCase, to the canonical
// level. The rule follows OpenTelemetry's mappings of those loggers' levels onto its severity
// ranges: syslog (RFC 5424: emerg, alert, crit, err, warning, notice, informational), Python
// logging (CRITICAL, WARNING), log4j and logback, java.util.logging (SEVERE, FINE, FINER,
// FINEST), .NET and Serilog (Critical, Information, Verbose), zap (dpanic, panic), logrus and
// slog. Anything severer than an error that stops or endangers the program is fatal.
var levelSynonyms = map[string]string{
	"trace":   LevelTrace,
	"finest":  LevelTrace,
	"verbose": LevelTrace,

	"debug": LevelDebug,
	"fine":  LevelDebug,
	"finer": LevelDebug,

	"info":          LevelInfo,
	"information":   LevelInfo,
	"informational": LevelInfo,
	"notice":        LevelInfo,

	"warn":    LevelWarn,
	"warning": LevelWarn,

	"error":  LevelError,
	"err":    LevelError,
	"severe": LevelError,

	"fatal":     LevelFatal,
	"critical":  LevelFatal,
	"crit":      LevelFatal,
	"alert":     LevelFatal,
	"emerg":     LevelFatal,
	"emergency": LevelFatal,
	"panic":     LevelFatal,
	"dpanic":    LevelFatal,
}

// CanonicalLevel is the level stored for a level as sent, and the one a log_level filter
// compares: levels are case-insensitive (Unicode simple case folding, see FoldCase), a known
// spelling of one of the six canonical levels becomes that level ("WARNING" and "Warn" are
// "warn", "CRITICAL" is "fatal"), and any other text is kept folded ("Audit" is "audit"), so
// custom levels still work. It is idempotent: a stored level is its own canonical form.
func CanonicalLevel(text string) string {
	f := FoldCase(text)
	if l, ok := levelSynonyms[f]; ok {
		return l
	}
	return f
}

// KeepsSeverityText says whether the text a level was sent as is kept beside the stored level, as
// the attribute severity_text: when it differs from the level beyond case ("WARNING" stored as
// "warn"), not when only the case differs ("Error" stored as "error"). Nothing is lost either way.
func KeepsSeverityText(text, level string) bool {
	return text != "" && FoldCase(text) != level
}

// WithSeverityText returns attrs (a canonical attributes object, or nil for none) with the
// attribute severity_text set to text, unless attrs hold that key already: what a client sent
// under that name wins. The result is canonical too (keys sorted, numbers as they were).
func WithSeverityText(attrs json.RawMessage, text string) (json.RawMessage, error) {
	obj := map[string]any{}
	if len(attrs) > 0 {
		dec := json.NewDecoder(bytes.NewReader(attrs))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil {
			return nil, fmt.Errorf("attributes: %w", err)
		}
		if obj == nil { // the JSON null
			obj = map[string]any{}
		}
		if _, ok := obj[SeverityTextAttribute]; ok {
			return attrs, nil
		}
	}
	obj[SeverityTextAttribute] = text
	return encodeAttributes(obj)
}

// encodeAttributes encodes an attributes object in canonical form.
func encodeAttributes(obj map[string]any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
