package costmodel

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestUnitsRoundTrip: a Rate, Duration or Bytes marshalled and read back
// is exactly the value written, over seeded random values and edge cases.
func TestUnitsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	rates := []Rate{0, 1, 0.5, 6.4 * (1 << 30), 24e9, 1e12, 3.25091e10, 7.71221e8, 1.05788e12, 123.456}
	durs := []Duration{0, 1, 999, 1000, 1500000, 145946, 4422283, 1e9, 3600e9 + 1}
	sizes := []Bytes{0, 1, 1023, 1 << 20, 1536 << 20, 2965831, 1 << 40}
	for range 2000 {
		rates = append(rates, Rate(math.Exp(r.Float64()*60-10)), Rate(math.Round(r.Float64()*1e6)/1e3*1e9))
		durs = append(durs, Duration(r.Int64N(1e13)))
		sizes = append(sizes, Bytes(r.Int64N(1<<50)))
	}
	check := func(in, out any, text string) {
		t.Helper()
		if err := yaml.Unmarshal([]byte(text), out); err != nil {
			t.Fatalf("%v written as %q: %v", in, text, err)
		}
	}
	for _, v := range rates {
		for _, s := range []string{v.FormatBytes(), v.FormatCount()} {
			var back Rate
			check(v, &back, s)
			if back != v {
				t.Fatalf("rate %v written as %q reads back as %v", float64(v), s, float64(back))
			}
		}
		b, _ := yaml.Marshal(v)
		if v != 0 && !strings.Contains(string(b), "B/s") {
			t.Errorf("rate %v marshals as %q", float64(v), b)
		}
	}
	for _, v := range durs {
		b, _ := yaml.Marshal(v)
		var back Duration
		check(v, &back, string(b))
		if back != v {
			t.Fatalf("duration %d written as %q reads back as %d", v, b, back)
		}
	}
	for _, v := range sizes {
		b, _ := yaml.Marshal(v)
		var back Bytes
		check(v, &back, string(b))
		if back != v {
			t.Fatalf("size %d written as %q reads back as %d", v, b, back)
		}
	}
	for v, want := range map[Rate]string{24e9: "24GB/s", 6.4 * (1 << 30): "6.4GiB/s", 3.25091e10: "32.5091GB/s", 12.5: "12.5B/s"} {
		if got := v.FormatBytes(); got != want {
			t.Errorf("%v: %q, want %q", float64(v), got, want)
		}
	}
	if got := Rate(7.71221e8).FormatCount(); got != "771.221M/s" {
		t.Errorf("count rate: %q", got)
	}
	if got := Duration(1500000).Format(); got != "1.5ms" {
		t.Errorf("duration: %q", got)
	}
	if got := Bytes(1536 << 20).Format(); got != "1536MiB" {
		t.Errorf("size: %q", got)
	}
	if _, err := yaml.Marshal(Rate(math.NaN())); err == nil {
		t.Error("a NaN rate marshals")
	}
}

// TestDeviceRoundTrip: a device table with every kind of entry reads
// back from its YAML as the same Device.
func TestDeviceRoundTrip(t *testing.T) {
	const y = `
launch: 1us
reference: 5ms
ops:
  filter: {fixed: 859ns, bytes: 32.5091GB/s, rows: 771.221M/s, out: 2.98263GB/s, str_terms: 357.094M/s}
  hash-build: {fixed: 0s, bytes: 10.1742GB/s, rows: 95.785M/s, miss: 19ns, cache: 2965831B}
profiled:
  "00df1f20ca1ed071": {op: filter, case: "q6 p1 filter", scale: 0.557124}
fused: {fixed: 109.272us, bytes: 1.36689TB/s, terms: 2G/s}
`
	var d Device
	if err := yaml.Unmarshal([]byte(y), &d); err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back Device
	if err := yaml.Unmarshal(b, &back); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if back.Launch != d.Launch || back.Reference != d.Reference || back.Ops != d.Ops || *back.Fused != *d.Fused ||
		len(back.Profiled) != 1 || back.Profiled["00df1f20ca1ed071"] != d.Profiled["00df1f20ca1ed071"] {
		t.Errorf("read back as %+v from\n%s", back, b)
	}
}
