package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestLogLinesCarryETA: without a terminal the bar prints a line every 5 s
// of the injected clock, with the linear ETA.
func TestLogLinesCarryETA(t *testing.T) {
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	var out bytes.Buffer
	b := New(&out, "runs", 10, "runs", clock)
	now = now.Add(10 * time.Second)
	b.Add(2) // 2 of 10 in 10 s: 8 left at 5 s each = 40 s
	if got := out.String(); !strings.Contains(got, "2/10 runs") || !strings.Contains(got, "ETA 40s") {
		t.Fatalf("progress line %q lacks the count or ETA 40s", got)
	}
}
