package sqlstore

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestJoinDecimal: the array texts of a tail read hold every number as strconv formats it,
// the extremes of both types included, separated by commas.
func TestJoinDecimal(t *testing.T) {
	signed := []int64{-1, 0, 7, math.MaxInt64, math.MinInt64, -42}
	var want []string
	for _, n := range signed {
		want = append(want, strconv.FormatInt(n, 10))
	}
	if got := joinDecimal(signed); got != strings.Join(want, ",") {
		t.Errorf("joinDecimal(%v) = %q, want %q", signed, got, strings.Join(want, ","))
	}
	unsigned := []uint64{0, 1, math.MaxInt64 + 1, math.MaxUint64}
	want = want[:0]
	for _, n := range unsigned {
		want = append(want, strconv.FormatUint(n, 10))
	}
	if got := joinDecimal(unsigned); got != strings.Join(want, ",") {
		t.Errorf("joinDecimal(%v) = %q, want %q", unsigned, got, strings.Join(want, ","))
	}
	if got := joinDecimal([]int64{}); got != "" {
		t.Errorf("joinDecimal of none = %q, want empty", got)
	}
}
