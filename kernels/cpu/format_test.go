package cpu

import (
	"math"
	"testing"
)

// TestFormatFloat: a float prints to 2 places rounded half away from zero
// from its shortest decimal form, the rule the DuckDB peer's formatFloat
// states (strconv's 'f', 2 rounds the binary values of 0.125 and 2.675
// to 0.12 and 2.67).
func TestFormatFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0.125, "0.13"},
		{2.675, "2.68"},
		{-0.005, "-0.01"},
		{1e-9, "0.00"},
		{-1e-9, "0.00"},
		{-0.004, "0.00"},
		{9.995, "10.00"},
		{-99.999, "-100.00"},
		{123, "123.00"},
		{1.5, "1.50"},
		{0, "0.00"},
		{1e21, "1000000000000000000000.00"},
		{math.Inf(-1), "-Inf"},
	} {
		v := Vec{Type: TFloat64, F64: []float64{tc.f}}
		if got := v.Format(0); got != tc.want {
			t.Errorf("Format(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}
