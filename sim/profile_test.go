package sim

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// tinyWith is testdata/profiles/tiny.yaml with the line starting with
// prefix replaced by repl, and that line's number.
func tinyWith(t *testing.T, prefix, repl string) ([]byte, int) {
	t.Helper()
	data, err := os.ReadFile("testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			lines[i] = repl
			return []byte(strings.Join(lines, "\n")), i + 1
		}
	}
	t.Fatalf("tiny.yaml has no line starting %q", prefix)
	return nil, 0
}

// TestProfileRefusesUnitlessAndNonPositive: a bandwidth, rate or size
// without a unit, a byte size written as a rate, and a bandwidth that
// must be positive and is not are refused with the file, the line and
// what is wrong.
func TestProfileRefusesUnitlessAndNonPositive(t *testing.T) {
	for _, c := range []struct {
		prefix, repl string
		want         []string
	}{
		{"  bandwidth: 1GB/s", "  bandwidth: 3", []string{"3: a rate needs a unit (B/s, kB/s, MB/s, GB/s, GiB/s"}},
		{"  bandwidth: 1GB/s", "  bandwidth: 1.5e9", []string{"1.5e9: a rate needs a unit"}},
		{"pcie:", "pcie: {h2d: 2e9, d2h: 2GB/s, latency: 10us}", []string{"2e9: a rate needs a unit"}},
		{"    agg-final:", "    agg-final: {rows: 1e9}", []string{"1e9: a rate needs a unit", "G/s for counts"}},
		{"    scan:", "    scan: {fixed: 10us, bytes: 1TB/s, out: 5}", []string{"5: a rate needs a unit"}},
		{"  device_memory:", "  device_memory: 1073741824", []string{"1073741824: a size needs a unit (B, KB, MB, GB, KiB, MiB, GiB"}},
		{"  request:", "  request: 4096", []string{"4096: a size needs a unit"}},
		{"  request:", "  request: 1MiB/s", []string{`"1MiB/s" is not a whole byte size`}},
		{"  bandwidth: 1GB/s", "  bandwidth: 0GB/s", []string{"nvme.bandwidth 0 B/s must be positive"}},
		{"nic:", "nic: {bandwidth: 0, latency: 5us}", []string{"nic.bandwidth 0 B/s must be positive"}},
		{"pcie:", "pcie: {h2d: 2GB/s, d2h: 0B/s, latency: 10us}", []string{"pcie.d2h 0 B/s must be positive"}},
		{"intra_node:", "intra_node: {path: nvlink, bandwidth: 0MB/s, latency: 1us}", []string{"intra_node.bandwidth 0 B/s must be positive", "for path nvlink"}},
		{"  pinned_memory:", "  pinned_memory: 0B", []string{"node.pinned_memory must be positive"}},
	} {
		data, line := tinyWith(t, c.prefix, c.repl)
		_, err := ParseProfile("tiny-edited.yaml", data)
		if err == nil {
			t.Errorf("%q: loads", c.repl)
			continue
		}
		want := append([]string{"sim: profile tiny-edited.yaml: ", "line " + strconv.Itoa(line) + ": "}, c.want...)
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", c.repl, err, w)
			}
		}
	}
}

// TestProfileRefusesNonFiniteRates: NaN, infinite and negative rates
// stay refused with the file and the line, and a bare 0 (the same in
// every unit) stays allowed where a rate may be zero.
func TestProfileRefusesNonFiniteRates(t *testing.T) {
	for _, v := range []string{"NaN", ".nan", "Inf", "+Inf", "-1GB/s", "1e999GB/s", "NaNGB/s"} {
		data, line := tinyWith(t, "  bandwidth: 1GB/s", "  bandwidth: "+v)
		_, err := ParseProfile("tiny-edited.yaml", data)
		if err == nil || !strings.Contains(err.Error(), "tiny-edited.yaml") || !strings.Contains(err.Error(), "line "+strconv.Itoa(line)+":") {
			t.Errorf("bandwidth %s: error %v, want one naming the file and line %d", v, err, line)
		}
	}
	data, _ := tinyWith(t, "    agg-final:", "    agg-final: {rows: 1G/s, bytes: 0}")
	if _, err := ParseProfile("tiny-edited.yaml", data); err != nil {
		t.Errorf("a zero rate: %v", err)
	}
}

// TestProfilesRoundTrip: every shipped and test profile, parsed, written
// by MarshalProfile and parsed again, is the same Profile; the written
// text carries the header and loads.
func TestProfilesRoundTrip(t *testing.T) {
	paths := []string{"testdata/profiles/tiny.yaml"}
	for _, n := range ProfileNames() {
		paths = append(paths, n)
	}
	for _, n := range paths {
		p, err := LoadProfileLog(n, nil)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		data, err := MarshalProfile(p, "Written by TestProfilesRoundTrip.\n\nSecond paragraph.")
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if !strings.HasPrefix(string(data), "# Written by TestProfilesRoundTrip.\n#\n# Second paragraph.\nname: ") {
			t.Errorf("%s: written as\n%s", n, data)
		}
		back, err := ParseProfile(n+" (written)", data)
		if err != nil {
			t.Fatalf("%s: the written profile does not load: %v\n%s", n, err, data)
		}
		if !reflect.DeepEqual(p, back) {
			t.Errorf("%s: read back differs:\n%+v\n%+v\n%s", n, p, back, data)
		}
	}
}

// TestWriteProfile: WriteProfile replaces the file whole and leaves no
// temporary file; a profile that does not validate is not written.
func TestWriteProfile(t *testing.T) {
	p, err := LoadProfileLog("devbox-xeon", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "out.yaml")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteProfile(path, p, "provenance: a test"); err != nil {
		t.Fatal(err)
	}
	back, err := LoadProfileLog(path, nil)
	if err != nil || !reflect.DeepEqual(p, back) {
		t.Fatalf("written %s reads back as %+v (%v)", path, back, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("files left: %v", ents)
	}
	bad := *p
	bad.NIC.Bandwidth = 0
	if err := WriteProfile(path, &bad, ""); err == nil || !strings.Contains(err.Error(), "nic.bandwidth") {
		t.Errorf("a zero NIC bandwidth: %v", err)
	}
	if got, _ := os.ReadFile(path); !strings.HasPrefix(string(got), "# provenance: a test\n") {
		t.Errorf("a refused write replaced the file:\n%s", got)
	}
}
