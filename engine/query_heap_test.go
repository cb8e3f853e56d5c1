package engine

import (
	"runtime/debug"
	"testing"
)

// ShareHeapLimit divides the limit among the local workers, not below
// its floor, and leaves it alone for one worker or under GOMEMLIMIT.
func TestShareHeapLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, c := range []struct {
		env   string
		limit int64
		local int
		want  int64
	}{
		{"", 2 << 30, 4, 512 << 20},
		{"", 1 << 30, 8, heapShareFloor},
		{"", 1 << 30, 1, 1 << 30},
		{"", 1 << 30, 0, 1 << 30},
		{"3GiB", 2 << 30, 4, 2 << 30},
	} {
		t.Setenv("GOMEMLIMIT", c.env)
		debug.SetMemoryLimit(c.limit)
		ShareHeapLimit(c.local)
		if got := debug.SetMemoryLimit(-1); got != c.want {
			t.Errorf("GOMEMLIMIT %q, limit %d, %d local workers: %d, want %d", c.env, c.limit, c.local, got, c.want)
		}
	}
}
