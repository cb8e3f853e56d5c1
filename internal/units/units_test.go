package units

import (
	"math"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"4096", 4096, false},
		{"4KiB", 4096, false},
		{"4k", 4096, false},
		{"8MiB", 8 << 20, false},
		{"1.5MiB", 1572864, false},
		{"1GB", 1e9, false},
		{" 2 gib ", 2 << 30, false},
		{"10b", 10, false},
		{"", 0, true},
		{"abc", 0, true},
		{"-1MiB", 0, true},
		{"0.3B", 0, true},
		{"NaN", 0, true},
		{"1e30TiB", 0, true},
	} {
		got, err := ParseBytes(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, err=%v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0B"}, {1000, "1000B"}, {4096, "4KiB"}, {1572864, "1.5MiB"}, {8 << 30, "8GiB"},
	} {
		if got := FormatBytes(tc.in); got != tc.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFormatSeconds(t *testing.T) {
	for _, c := range []struct {
		s    float64
		prec int
		want string
	}{{1.23456, 3, "1.235s"}, {0.012345, 2, "12.35ms"}, {8e-6, 1, "8.0µs"}, {math.NaN(), 3, "-"}} {
		if got := FormatSeconds(c.s, c.prec); got != c.want {
			t.Errorf("FormatSeconds(%v, %d) = %q, want %q", c.s, c.prec, got, c.want)
		}
	}
}
