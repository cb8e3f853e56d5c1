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
// "6.4GiB/s", "25GB/s", "200Gb/s" (bits), "40G/s" (plain count, SI prefix),
// or a bare number ("1.5e9").
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
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"kbit", 1e3 / 8}, {"mbit", 1e6 / 8}, {"gbit", 1e9 / 8}, {"tbit", 1e12 / 8},
	{"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12},
	{"b", 1},
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
	mult := 1.0
	for _, u := range rateUnits {
		if strings.HasSuffix(lt, u.suffix) {
			lt = strings.TrimSpace(strings.TrimSuffix(lt, u.suffix))
			mult = u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(lt, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("costmodel: %q is not a rate (want e.g. 6.4GiB/s, 25GB/s, 200Gb/s, 40G/s)", s)
	}
	return Rate(v * mult), nil
}

// UnmarshalYAML parses a Rate scalar, naming the line on error.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a rate scalar (e.g. 25GB/s)", n.Line)
	}
	v, err := ParseRate(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*r = v
	return nil
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

// Bytes is a byte size, written in profile files with binary or decimal
// units ("40GiB", "1MiB", "512KB") or as a plain count.
type Bytes int64

// UnmarshalYAML parses a Bytes scalar, naming the line on error.
func (b *Bytes) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a byte size scalar (e.g. 1MiB)", n.Line)
	}
	r, err := ParseRate(n.Value)
	if err != nil || r != Rate(math.Trunc(float64(r))) || float64(r) > math.MaxInt64/2 {
		return fmt.Errorf("line %d: %q is not a whole byte size (want e.g. 4096, 1MiB, 40GiB)", n.Line, n.Value)
	}
	*b = Bytes(r)
	return nil
}
