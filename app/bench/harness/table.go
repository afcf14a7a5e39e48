package main

import (
	"fmt"
	"io"
	"strings"
)

// figure is one line of the harness's table: our figure beside its baseline from the same run.
type figure struct {
	Name     string
	Unit     string  // "rows/s", "calls/s", "ms", "s" or "MiB"
	Ours     float64 // 0 with Err set: not measured
	Baseline float64
	Target   float64 // the ratio ours/baseline must be at least (rates) or at most (the rest) this; 0: none
	Note     string  // shown after the verdict, e.g. refused calls
	Err      error
}

// higherIsBetter tells rates from latencies.
func (f figure) higherIsBetter() bool { return strings.HasSuffix(f.Unit, "/s") }

// ratio is ours / baseline.
func (f figure) ratio() float64 {
	if f.Baseline == 0 {
		return 0
	}
	return f.Ours / f.Baseline
}

// met reports whether the ratio meets the target.
func (f figure) met() bool {
	if f.higherIsBetter() {
		return f.ratio() >= f.Target
	}
	return f.ratio() <= f.Target
}

// writeTable writes figs as a Markdown table, the form the README quotes.
func writeTable(w io.Writer, figs []figure) {
	fmt.Fprintln(w, "| Figure | Ours | Baseline | Ratio | Target | |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, f := range figs {
		cmp := "≥"
		if !f.higherIsBetter() {
			cmp = "≤"
		}
		target := fmt.Sprintf("%s %.2f", cmp, f.Target)
		if f.Target == 0 {
			target = "none"
		}
		if f.Err != nil {
			fmt.Fprintf(w, "| %s | failed: %s | | | %s | |\n", f.Name, oneLine(f.Err.Error()), target)
			continue
		}
		if f.Baseline == 0 {
			fmt.Fprintf(w, "| %s | %s | | | %s | %s |\n", f.Name, amount(f.Ours, f.Unit), target, f.Note)
			continue
		}
		verdict := "met"
		if f.Target == 0 {
			verdict = ""
		} else if !f.met() {
			verdict = "MISSED"
		}
		if f.Note != "" {
			verdict = strings.TrimPrefix(verdict+"; "+f.Note, "; ")
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.2f | %s | %s |\n", f.Name, amount(f.Ours, f.Unit), amount(f.Baseline, f.Unit), f.ratio(), target, verdict)
	}
}

// amount renders v in unit: rates as whole numbers with thousands separators, latencies in ms
// with two decimals.
func amount(v float64, unit string) string {
	switch unit {
	case "ms":
		return fmt.Sprintf("%.2f ms", v)
	case "s":
		return fmt.Sprintf("%.1f s", v)
	}
	return thousands(int64(v+0.5)) + " " + unit
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "|", "/")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
