package main

import (
	"errors"
	"strings"
	"testing"
)

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	writeTable(&b, []figure{
		{Name: "ingest", Unit: "rows/s", Ours: 45512.4, Baseline: 58685, Target: 0.8},
		{Name: "page", Unit: "ms", Ours: 1.5, Baseline: 1.0, Target: 1.2, Note: "same body"},
		{Name: "hat", Unit: "calls/s", Target: 0.95, Err: errors.New("load: refused\nmore")},
		{Name: "upgrade", Unit: "s", Ours: 137.04, Baseline: 0.25},
		{Name: "rss", Unit: "MiB", Ours: 40, Baseline: 34, Note: "service only"},
	})
	got := b.String()
	want := `| Figure | Ours | Baseline | Ratio | Target | |
|---|---|---|---|---|---|
| ingest | 45,512 rows/s | 58,685 rows/s | 0.78 | ≥ 0.80 | MISSED |
| page | 1.50 ms | 1.00 ms | 1.50 | ≤ 1.20 | MISSED; same body |
| hat | failed: load: refused | | | ≥ 0.95 | |
| upgrade | 137.0 s | 0.2 s | 548.16 | none |  |
| rss | 40 MiB | 34 MiB | 1.18 | none | service only |
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -45000: "-45,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
