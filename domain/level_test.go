package domain

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestCanonicalLevel is the table of the level rule: every spelling of the common loggers, in
// the cases they write it, maps to one of the six levels; other text is kept, folded.
func TestCanonicalLevel(t *testing.T) {
	cases := map[string][]string{
		LevelTrace: {"trace", "TRACE", "Trace", "finest", "FINEST", "verbose", "Verbose", "VERBOSE"},
		LevelDebug: {"debug", "DEBUG", "Debug", "fine", "FINE", "finer", "FINER"},
		LevelInfo:  {"info", "INFO", "Info", "information", "Information", "informational", "INFORMATIONAL", "notice", "NOTICE", "Notice"},
		LevelWarn:  {"warn", "WARN", "Warn", "warning", "WARNING", "Warning"},
		LevelError: {"error", "ERROR", "Error", "err", "ERR", "Err", "severe", "SEVERE"},
		LevelFatal: {"fatal", "FATAL", "Fatal", "critical", "CRITICAL", "Critical", "crit", "CRIT", "alert", "ALERT",
			"emerg", "EMERG", "emergency", "EMERGENCY", "panic", "PANIC", "dpanic", "DPANIC", "DPanic"},
		"audit":    {"audit", "AUDIT", "Audit"},
		"sécurité": {"SÉCURITÉ", "Sécurité"},
		"k":        {"K", "\u212a"}, // the Kelvin sign folds like K
		" warn":    {" WARN"},       // no trimming: a spelling is matched whole
		"warn+2":   {"WARN+2"},
	}
	for want, spellings := range cases {
		for _, s := range spellings {
			got := CanonicalLevel(s)
			if got != want {
				t.Errorf("CanonicalLevel(%q) = %q, want %q", s, got, want)
			}
			if again := CanonicalLevel(got); again != got {
				t.Errorf("CanonicalLevel(%q) = %q: a stored level must be its own canonical form", got, again)
			}
		}
	}
	for spelling, level := range levelSynonyms {
		if CanonicalLevel(level) != level || !slices.Contains([]string{LevelTrace, LevelDebug, LevelInfo, LevelWarn, LevelError, LevelFatal}, level) {
			t.Errorf("synonym %q maps to %q, not one of the six canonical levels", spelling, level)
		}
		if FoldCase(spelling) != spelling {
			t.Errorf("synonym %q is not folded: it could never match", spelling)
		}
	}
}

func TestKeepsSeverityText(t *testing.T) {
	for _, c := range []struct {
		text, level string
		keep        bool
	}{
		{"WARNING", "warn", true},
		{"warning", "warn", true},
		{"Error", "error", false},
		{"error", "error", false},
		{"AUDIT", "audit", false},
		{"", "info", false},
		{"Warn", "error", true}, // OTLP: severity_number says error, the text says otherwise
	} {
		if got := KeepsSeverityText(c.text, c.level); got != c.keep {
			t.Errorf("KeepsSeverityText(%q, %q) = %v, want %v", c.text, c.level, got, c.keep)
		}
	}
}

// TestLevelsAreStoredCanonical: the service stores the canonical level of every entry and keeps
// the text as sent in the attribute severity_text when it differs beyond case.
func TestLevelsAreStoredCanonical(t *testing.T) {
	f := newFake()
	s := NewService(f, opts(Options{}))
	pid := testID()
	in := []struct {
		level, severityText *string
		attrs               string
		wantLevel           string
		wantAttrs           string
	}{
		{level: ptr("WARNING"), wantLevel: "warn", wantAttrs: `{"severity_text":"WARNING"}`},
		{level: ptr("Error"), wantLevel: "error"},
		{level: ptr("critical"), attrs: `{"b":1.50,"a":"x"}`, wantLevel: "fatal", wantAttrs: `{"a":"x","b":1.50,"severity_text":"critical"}`},
		{level: ptr("crit"), attrs: `{"severity_text":"mine"}`, wantLevel: "fatal", wantAttrs: `{"severity_text":"mine"}`},
		{level: ptr("Audit"), attrs: `{"a":1}`, wantLevel: "audit", wantAttrs: `{"a":1}`},
		{wantLevel: "info"},
		// As OTLP sends them: the level from severity_number, the text beside it.
		{level: ptr("warn"), severityText: ptr("Warning"), wantLevel: "warn", wantAttrs: `{"severity_text":"Warning"}`},
		{level: ptr("error"), severityText: ptr("ERROR"), wantLevel: "error"},
		{severityText: ptr(strings.Repeat("x", 40)), wantLevel: "info", wantAttrs: `{"severity_text":"` + strings.Repeat("x", 40) + `"}`},
	}
	var batch []LogInput
	for _, c := range in {
		e := LogInput{ProjectID: pid, Message: ptr("m"), Level: c.level, SeverityText: c.severityText}
		if c.attrs != "" {
			e.Attributes = json.RawMessage(c.attrs)
		}
		batch = append(batch, e)
	}
	if _, err := s.CreateLogs(admin(t), batch, ""); err != nil {
		t.Fatal(err)
	}
	for i, c := range in {
		got := f.inserted[i]
		if got.Level != c.wantLevel || string(got.Attributes) != c.wantAttrs {
			t.Errorf("entry %d: level %q attributes %s; want %q %s", i, got.Level, got.Attributes, c.wantLevel, c.wantAttrs)
		}
	}
}

// TestSeverityTextCountsTowardTheAttributeLimits: the added attribute is one like any other, so
// stored attributes never exceed the limits.
func TestSeverityTextCountsTowardTheAttributeLimits(t *testing.T) {
	l := DefaultLimits()
	l.MaxAttributes = 1
	s := NewService(newFake(), opts(Options{Limits: l}))
	_, err := s.CreateLogs(admin(t), []LogInput{{ProjectID: testID(), Message: ptr("m"), Level: ptr("WARNING"), Attributes: json.RawMessage(`{"a":1}`)}}, "")
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindInvalid || len(e.Fields) != 1 || e.Fields[0].Path[1] != "attributes" {
		t.Fatalf("err = %v, want KindInvalid on attributes", err)
	}
}

// filterStore records the filters the service hands the store.
type filterStore struct {
	*fakeStore
	filters []LogFilter
}

func (f *filterStore) ListLogs(ctx context.Context, q LogQuery, fn PageFunc) error {
	f.filters = append(f.filters, q.LogFilter)
	return f.fakeStore.ListLogs(ctx, q, fn)
}

func (f *filterStore) DeleteLogs(ctx context.Context, flt LogFilter) (int64, error) {
	f.filters = append(f.filters, flt)
	return f.fakeStore.DeleteLogs(ctx, flt)
}

func (f *filterStore) LogStats(_ context.Context, q StatsQuery) ([]BucketCount, error) {
	f.filters = append(f.filters, q.LogFilter)
	return nil, nil
}

// TestLevelFiltersAreCanonical: log_level compares as stored levels do, on listings, deletes
// and stats alike.
func TestLevelFiltersAreCanonical(t *testing.T) {
	f := &filterStore{fakeStore: newFake()}
	s := NewService(f, opts(Options{}))
	p, err := s.CreateProject(admin(t), ProjectInput{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	flt := LogFilter{ProjectID: p.ID, Level: ptr("ERROR"), Levels: []string{"err", "Warning", "WARN", "Audit"}}
	if err := s.ListLogs(admin(t), LogQuery{LogFilter: flt}, func(Page) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteLogs(admin(t), flt); err != nil {
		t.Fatal(err)
	}
	stf := flt
	stf.Start, stf.End = ptr[int64](0), ptr[int64](60_000)
	if _, err := s.LogStats(admin(t), StatsQuery{LogFilter: stf, Step: 60_000}); err != nil {
		t.Fatal(err)
	}
	if len(f.filters) != 3 {
		t.Fatalf("%d filters reached the store, want 3", len(f.filters))
	}
	for _, got := range f.filters {
		if got.Level != nil || !slices.Equal(got.Levels, []string{"audit", "error", "warn"}) {
			t.Errorf("store filter levels = %v %q, want [audit error warn]", got.Level, got.Levels)
		}
	}
}
