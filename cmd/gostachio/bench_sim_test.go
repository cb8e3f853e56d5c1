package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchSimRows: a recorded row reads back as written, and the table
// shows a later build's speedup and makespan against the first one.
func TestBenchSimRows(t *testing.T) {
	old := benchSimRow{Label: "before", Nodes: 16, GPUs: 8, SF: 1000, Query: "q3", WallS: 4, RSSBytes: 80e6, Tasks: 100000, Makespan: 1000}
	got, err := parseBenchSimRow(old.tsv())
	if err != nil || got != old {
		t.Fatalf("read back %+v, %v; want %+v", got, err, old)
	}
	if _, err := parseBenchSimRow("a\tb"); err == nil {
		t.Fatal("a short row was accepted")
	}
	mine := old
	mine.Label, mine.WallS, mine.Makespan, mine.CPUS = "new", 0.5, 1010, 0.4
	var b bytes.Buffer
	writeBenchSimTable(&b, []benchSimRow{old, mine})
	out := b.String()
	for _, want := range []string{"speedup vs before", "8.00x wall", "+1.00%", "5.00 µs", "0.40 s"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
