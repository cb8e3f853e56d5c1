package costmodel

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Rate is a throughput in units per second (bytes/s for bandwidths, rows/s
// for row rates). In profile files it is written with a unit and "/s":
// "6.4GiB/s", "25GB/s", "200Gb/s" (bits), "40G/s" (plain count, SI
// prefix), "12.5/s"; a bare number is refused there, save 0 (ParseRate
// itself takes one: "1.5e9").
type Rate float64

// PerNs returns the rate in units per nanosecond (r / 1e9), the unit the
// simulator's fluid model works in.
func (r Rate) PerNs() float64 { return float64(r) / 1e9 }

// String formats r as decimal bytes per second with 3 significant digits.
func (r Rate) String() string {
	v := float64(r)
	for _, u := range []struct {
		s string
		m float64
	}{{"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"K", 1e3}} {
		if v >= u.m {
			return strconv.FormatFloat(v/u.m, 'g', 4, 64) + u.s + "B/s"
		}
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + "B/s"
}

var rateUnits = []struct {
	suffix string
	mult   float64
	exp    string // the decimal exponent of mult, for SI prefixes
}{
	{"kib", 1 << 10, ""}, {"mib", 1 << 20, ""}, {"gib", 1 << 30, ""}, {"tib", 1 << 40, ""},
	{"kb", 1e3, "e3"}, {"mb", 1e6, "e6"}, {"gb", 1e9, "e9"}, {"tb", 1e12, "e12"},
	{"kbit", 1e3 / 8, ""}, {"mbit", 1e6 / 8, ""}, {"gbit", 1e9 / 8, ""}, {"tbit", 1e12 / 8, ""},
	{"k", 1e3, "e3"}, {"m", 1e6, "e6"}, {"g", 1e9, "e9"}, {"t", 1e12, "e12"},
	{"b", 1, ""},
}

// ParseRate parses a rate ("6.4GiB/s", "25GB/s", "200Gb/s", "40G/s",
// "1e9"). A lower-case "b" after a decimal prefix ("Gb") means bits; "B"
// means bytes. The "/s" suffix is optional. The result must be finite and
// non-negative.
func ParseRate(s string) (Rate, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(t, "/s")
	t = strings.TrimSpace(t)
	// Bits: "Gb", "Mb", "Tb", "Kb" with a lower-case b (bytes use "B").
	if n := len(t); n >= 2 && t[n-1] == 'b' && strings.ContainsRune("KMGTkmgt", rune(t[n-2])) {
		t = t[:n-1] + "bit"
	}
	lt := strings.ToLower(t)
	mult, exp := 1.0, ""
	for _, u := range rateUnits {
		if strings.HasSuffix(lt, u.suffix) {
			lt = strings.TrimSpace(strings.TrimSuffix(lt, u.suffix))
			mult, exp = u.mult, u.exp
			break
		}
	}
	v, err := strconv.ParseFloat(lt, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("costmodel: %q is not a rate (want e.g. 6.4GiB/s, 25GB/s, 200Gb/s, 40G/s)", s)
	}
	if exp != "" && strings.Trim(lt, "0123456789.") == "" {
		// An SI prefix shifts the decimal point: "32.5091G" is the
		// number 32.5091e9, rounded once, as a bare number would be.
		if w, err := strconv.ParseFloat(lt+exp, 64); err == nil && !math.IsInf(w, 0) {
			return Rate(w), nil
		}
	}
	return Rate(v * mult), nil
}

// rateUnitsHint lists the units a rate is written with, for errors.
const rateUnitsHint = "B/s, kB/s, MB/s, GB/s, GiB/s, Gb/s ... for bytes; /s, K/s, M/s, G/s for counts"

// bareNumber reports whether s is a number without a unit, and its value.
func bareNumber(s string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return v, err == nil
}

// UnmarshalYAML parses a Rate scalar, naming the line on error. A bare
// number is refused (is 3 three bytes or three gigabytes a second?), save
// 0, which is the same in every unit.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a rate scalar (e.g. 25GB/s)", n.Line)
	}
	if v, ok := bareNumber(n.Value); ok && v != 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
		return fmt.Errorf("line %d: %s: a rate needs a unit (%s)", n.Line, n.Value, rateUnitsHint)
	}
	v, err := ParseRate(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*r = v
	return nil
}

// rateUnit is one unit FormatRate may write.
type rateUnit struct {
	name string
	mult float64
	exp  int // mult is 10^exp (0: not a power of ten)
}

var (
	byteRateUnits = []rateUnit{{"TB", 1e12, 12}, {"GB", 1e9, 9}, {"MB", 1e6, 6}, {"kB", 1e3, 3},
		{"TiB", 1 << 40, 0}, {"GiB", 1 << 30, 0}, {"MiB", 1 << 20, 0}, {"KiB", 1 << 10, 0}}
	countRateUnits = []rateUnit{{"T", 1e12, 12}, {"G", 1e9, 9}, {"M", 1e6, 6}, {"K", 1e3, 3}}
)

// formatRate writes v in the largest SI prefix of units it is at least
// one of ("32.5091G"), or in a binary one where that is shorter ("6.4Gi"),
// always a form that ParseRate reads back as exactly v; below every unit,
// in base (the unit of multiplier 1).
func formatRate(v float64, units []rateUnit, base string) string {
	if v == 0 {
		return "0" + base + "/s"
	}
	best, si := strconv.FormatFloat(v, 'g', -1, 64)+base+"/s", false
	for _, u := range units {
		if math.Abs(v) < u.mult || (si && u.exp > 0) {
			continue
		}
		m := strconv.FormatFloat(v/u.mult, 'g', -1, 64)
		if u.exp > 0 {
			m = shiftDecimal(v, u.exp)
		}
		s := m + u.name + "/s"
		if back, err := ParseRate(s); err != nil || float64(back) != v {
			continue
		}
		if u.exp > 0 || len(s) < len(best) {
			best, si = s, si || u.exp > 0
		}
	}
	return best
}

// shiftDecimal writes v/10^k (v > 0) from v's shortest decimal form by
// moving its decimal point: the digits of "3.25091e+10" shifted by 9 are
// "32.5091".
func shiftDecimal(v float64, k int) string {
	e := strconv.FormatFloat(v, 'e', -1, 64) // d.ddddde±xx
	mant, ex, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(ex)
	digits := strings.Replace(mant, ".", "", 1)
	point := 1 + x - k // digits before the decimal point
	switch {
	case point <= 0:
		digits = strings.Repeat("0", 1-point) + digits
		point = 1
	case point > len(digits):
		digits += strings.Repeat("0", point-len(digits))
	}
	if frac := digits[point:]; frac != "" {
		return digits[:point] + "." + frac
	}
	return digits[:point]
}

// FormatBytes writes r as bytes per second with a unit ("24GB/s",
// "6.4GiB/s", "1234.5B/s") that ParseRate reads back as exactly r.
func (r Rate) FormatBytes() string { return formatRate(float64(r), byteRateUnits, "B") }

// FormatCount writes r as a count per second with an SI prefix ("30G/s",
// "60M/s", "12.5/s") that ParseRate reads back as exactly r.
func (r Rate) FormatCount() string { return formatRate(float64(r), countRateUnits, "") }

// MarshalYAML writes r as a bandwidth (FormatBytes): it reads back as
// exactly r.
func (r Rate) MarshalYAML() (any, error) {
	if math.IsNaN(float64(r)) || math.IsInf(float64(r), 0) || r < 0 {
		return nil, fmt.Errorf("costmodel: rate %g cannot be written (want finite, not negative)", float64(r))
	}
	return r.FormatBytes(), nil
}

// Duration is a time span in nanoseconds, written in profile files as Go
// durations ("80us", "1.5ms", "0s").
type Duration int64

// Ns returns d in nanoseconds.
func (d Duration) Ns() int64 { return int64(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML parses a Duration scalar, naming the line on error.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration scalar (e.g. 80us)", n.Line)
	}
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a non-negative duration (want e.g. 80us, 1.5ms)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// durationUnits are the units Duration.MarshalYAML writes, largest first.
var durationUnits = []struct {
	name string
	ns   int64
}{{"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}}

// Format writes d as a decimal in the largest unit of s, ms, us and ns
// it is at least one of ("80us", "1.5ms", "1234ns", "0s"); the decimal
// is exact, so time.ParseDuration reads back exactly d.
func (d Duration) Format() string {
	if d == 0 {
		return "0s"
	}
	neg, v := d < 0, int64(d)
	if neg {
		v = -v
	}
	for _, u := range durationUnits {
		if v < u.ns && u.ns > 1 {
			continue
		}
		s := strconv.FormatInt(v/u.ns, 10)
		if frac := v % u.ns; frac != 0 {
			digits := len(strconv.FormatInt(u.ns, 10)) - 1
			f := fmt.Sprintf("%0*d", digits, frac)
			s += "." + strings.TrimRight(f, "0")
		}
		if neg {
			s = "-" + s
		}
		return s + u.name
	}
	panic("unreachable")
}

// MarshalYAML writes d with a unit (Format); it reads back as exactly d.
func (d Duration) MarshalYAML() (any, error) {
	if d < 0 {
		return nil, fmt.Errorf("costmodel: duration %s cannot be written (want not negative)", time.Duration(d))
	}
	return d.Format(), nil
}

// Bytes is a byte size, written in profile files with binary or decimal
// units ("40GiB", "1MiB", "512KB", "4096B").
type Bytes int64

// UnmarshalYAML parses a Bytes scalar, naming the line on error. A bare
// number is refused, save 0.
func (b *Bytes) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a byte size scalar (e.g. 1MiB)", n.Line)
	}
	if v, ok := bareNumber(n.Value); ok && v != 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
		return fmt.Errorf("line %d: %s: a size needs a unit (B, KB, MB, GB, KiB, MiB, GiB ...)", n.Line, n.Value)
	}
	r, err := ParseRate(n.Value)
	if err != nil || strings.HasSuffix(strings.TrimSpace(n.Value), "/s") || r != Rate(math.Trunc(float64(r))) || float64(r) > math.MaxInt64/2 {
		return fmt.Errorf("line %d: %q is not a whole byte size (want e.g. 4096B, 1MiB, 40GiB)", n.Line, n.Value)
	}
	*b = Bytes(r)
	return nil
}

// Format writes b in the largest binary unit it is a whole multiple of
// ("40GiB", "1MiB", "4097B"), which reads back as exactly b.
func (b Bytes) Format() string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && int64(b)%u.mult == 0 {
			return strconv.FormatInt(int64(b)/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// MarshalYAML writes b with a unit (Format); it reads back as exactly b.
func (b Bytes) MarshalYAML() (any, error) {
	if b < 0 {
		return nil, fmt.Errorf("costmodel: byte size %d cannot be written (want not negative)", int64(b))
	}
	return b.Format(), nil
}
