package traces

import (
	"math"
	"strconv"

	"gostachio/traces/event"
)

// parseTaskKind is the inverse of event.TaskKind.String for the valid
// kinds.
func parseTaskKind(s string) (event.TaskKind, bool) {
	for k := 1; k < event.NumTaskKinds; k++ {
		if event.TaskKind(k).String() == s {
			return event.TaskKind(k), true
		}
	}
	return 0, false
}

// parseResKind is the inverse of event.ResourceKind.String for the
// valid kinds.
func parseResKind(s string) (event.ResourceKind, bool) {
	for k := 1; k < event.NumResourceKinds; k++ {
		if event.ResourceKind(k).String() == s {
			return event.ResourceKind(k), true
		}
	}
	return 0, false
}

// appendMicros appends ns as microseconds with exactly three decimals: the
// exact value, no float rounding ("1234.567" for 1234567 ns).
func appendMicros(b []byte, ns int64) []byte {
	u := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		u = uint64(-ns) // two's complement: also right for MinInt64
	}
	b = strconv.AppendUint(b, u/1000, 10)
	f := u % 1000
	return append(b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// parseMicros parses a microsecond value (a JSON number) into ns: plain
// decimals exactly (rounding half away from zero beyond the third
// decimal), other forms (exponents) through float64.
func parseMicros(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	r := s
	if r[0] == '-' {
		neg, r = true, r[1:]
	}
	ip, fp := r, ""
	for i := 0; i < len(r); i++ {
		if r[i] == '.' {
			ip, fp = r[:i], r[i+1:]
			break
		}
	}
	if ip != "" && allDigits(ip) && allDigits(fp) {
		v, err := strconv.ParseInt(ip, 10, 64)
		if err != nil || v > (math.MaxInt64-1000)/1000 {
			return 0, false
		}
		v *= 1000
		var frac, scale int64 = 0, 100
		for i := 0; i < len(fp) && i < 3; i++ {
			frac += int64(fp[i]-'0') * scale
			scale /= 10
		}
		if len(fp) > 3 && fp[3] >= '5' {
			frac++
		}
		v += frac
		if neg {
			v = -v
		}
		return v, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f > 9e15 || f < -9e15 {
		return 0, false
	}
	if f < 0 {
		return -int64(-f*1000 + 0.5), true
	}
	return int64(f*1000 + 0.5), true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
