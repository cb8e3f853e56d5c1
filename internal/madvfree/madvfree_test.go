package madvfree

import (
	"slices"
	"testing"
)

func TestNamedAndWith(t *testing.T) {
	for _, c := range []struct {
		in    string
		named bool
		with  string
	}{
		{"", false, "madvdontneed=0"},
		{"gctrace=1", false, "gctrace=1,madvdontneed=0"},
		{"gctrace=1, madvdontneed=1", true, ""},
		{"madvdontneed=0", true, ""},
		{"xmadvdontneed=1", false, "xmadvdontneed=1,madvdontneed=0"},
	} {
		if got := Named(c.in); got != c.named {
			t.Errorf("Named(%q) = %v, want %v", c.in, got, c.named)
		}
		if !c.named {
			if got := With(c.in); got != c.with {
				t.Errorf("With(%q) = %q, want %q", c.in, got, c.with)
			}
			if !Named(With(c.in)) {
				t.Errorf("With(%q) does not name the setting", c.in)
			}
		}
	}
}

// The re-run's environment holds one GODEBUG, with the user's settings and
// madvdontneed=0, and the mark: a second GODEBUG after the first would be
// ignored, and the re-run would exec again, for ever.
func TestEnv(t *testing.T) {
	got := Env([]string{"PATH=/bin", "GODEBUG=gctrace=1", "HOME=/root", "GODEBUG=x=1"}, "gctrace=1")
	want := []string{"PATH=/bin", "HOME=/root", "GODEBUG=gctrace=1,madvdontneed=0", reexecMark + "=1"}
	if !slices.Equal(got, want) {
		t.Fatalf("Env = %q, want %q", got, want)
	}
}
