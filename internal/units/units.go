// Package units parses and formats the byte sizes and durations users type on
// the command line and in spec files ("8MiB", "4KiB", "1.5GB", "250us").
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var byteSuffixes = []struct {
	suffix string
	mult   float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"b", 1},
}

// ParseBytes parses a byte size: a non-negative number with an optional
// suffix, binary (KiB, MiB, GiB, TiB, and the shorthands K, M, G, T) or
// decimal (KB, MB, GB, TB), case-insensitive. "1.5MiB" is 1572864.
// The result must be a whole number of bytes that fits in an int64.
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	for _, sf := range byteSuffixes {
		if strings.HasSuffix(t, sf.suffix) {
			t = strings.TrimSpace(strings.TrimSuffix(t, sf.suffix))
			mult = sf.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("units: %q is not a byte size (want e.g. 4096, 4KiB, 8MiB, 1GB)", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("units: byte size %q is negative", s)
	}
	b := v * mult
	if b > math.MaxInt64/2 {
		return 0, fmt.Errorf("units: byte size %q is too large", s)
	}
	if b != math.Trunc(b) {
		return 0, fmt.Errorf("units: byte size %q is not a whole number of bytes", s)
	}
	return int64(b), nil
}

// FormatBytes formats n with a binary suffix and up to 3 significant
// decimals, e.g. 1572864 -> "1.5MiB", 4096 -> "4KiB", 1000 -> "1000B".
func FormatBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 && n > -1024 {
		return fmt.Sprintf("%dB", n)
	}
	v := float64(n)
	i := -1
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64) + string(units[i]) + "iB"
}

// FormatSeconds writes s seconds with prec decimals in the largest unit of
// s, µs and ms under which it is at least 1 ("1.234s", "12.35ms", "8.0µs";
// "-" for NaN).
func FormatSeconds(s float64, prec int) string {
	switch {
	case math.IsNaN(s):
		return "-"
	case s >= 1:
		return strconv.FormatFloat(s, 'f', prec, 64) + "s"
	case s >= 1e-3:
		return strconv.FormatFloat(s*1e3, 'f', prec, 64) + "ms"
	}
	return strconv.FormatFloat(s*1e6, 'f', prec, 64) + "µs"
}
