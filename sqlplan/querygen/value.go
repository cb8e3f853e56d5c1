package querygen

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// val is a generated scalar expression: its text, type and what is known
// of its values (bounds for numbers and dates, sample values to draw
// literals from).
type val struct {
	sql   string
	k     kind
	scale int
	// lo, hi bound the values where bounded (dates in days).
	lo, hi  float64
	bounded bool
	samples []string
	// lit marks a literal; plain marks a bare column reference.
	lit, plain bool
}

// maxAbs is the largest magnitude a bounded value may take.
func (v val) maxAbs() float64 { return math.Max(math.Abs(v.lo), math.Abs(v.hi)) }

// literal is a constant of v's type that v takes or lies near: a sample
// where there are samples, else a point of v's bounds.
func (q *gen) literal(v val) string {
	if len(v.samples) > 0 {
		return formatLit(v.k, v.samples[q.r.IntN(len(v.samples))])
	}
	x := v.lo + q.r.Float64()*(v.hi-v.lo)
	switch v.k {
	case kInt:
		return strconv.FormatInt(int64(math.Round(x)), 10)
	case kDate:
		return "date '" + time.Unix(int64(math.Round(x))*86400, 0).UTC().Format("2006-01-02") + "'"
	case kDec:
		return strconv.FormatFloat(x, 'f', min(v.scale, 2), 64)
	default:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
}

// formatLit writes sample s (text in the Config.Samples form) as a literal
// of kind k.
func formatLit(k kind, s string) string {
	switch k {
	case kDate:
		return "date '" + s + "'"
	case kStr:
		return quote(s)
	}
	return s
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// sortedPair returns two literals lo <= hi of v (for BETWEEN).
func (q *gen) sortedPair(v val) (string, string) {
	if len(v.samples) > 1 {
		a := v.samples[q.r.IntN(len(v.samples))]
		b := v.samples[q.r.IntN(len(v.samples))]
		if less(v.k, b, a) {
			a, b = b, a
		}
		return formatLit(v.k, a), formatLit(v.k, b)
	}
	a, b := q.literal(v), q.literal(v)
	if v.k != kStr {
		fa, _ := litNumber(a)
		fb, _ := litNumber(b)
		if fb < fa {
			a, b = b, a
		}
	}
	return a, b
}

// less orders two samples of kind k.
func less(k kind, a, b string) bool {
	switch k {
	case kInt, kDec:
		fa, _ := strconv.ParseFloat(a, 64)
		fb, _ := strconv.ParseFloat(b, 64)
		return fa < fb
	}
	// Dates (YYYY-MM-DD) and strings order as bytes.
	return a < b
}

// litNumber reads back a numeric or date literal written by literal.
func litNumber(s string) (float64, bool) {
	if d, ok := strings.CutPrefix(s, "date '"); ok {
		t, err := time.Parse("2006-01-02", strings.TrimSuffix(d, "'"))
		if err != nil {
			return 0, false
		}
		return float64(t.Unix() / 86400), true
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

func days(s string) (float64, bool) {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return 0, false
	}
	return float64(t.Unix() / 86400), true
}
