package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"gostachio/internal/clidoc"
)

// TestCLIReferenceUpToDate fails when docs/cli differs from what the
// command tree generates: a flag or command changed without `make docs`.
func TestCLIReferenceUpToDate(t *testing.T) {
	pages, err := clidoc.Render(newRoot())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "docs", "cli")
	tracked, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var stale []string
	for _, f := range tracked {
		if _, ok := pages[filepath.Base(f)]; !ok {
			stale = append(stale, filepath.Base(f)+" (no such command)")
		}
	}
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			stale = append(stale, name+" (missing)")
			continue
		}
		if !bytes.Equal(got, want) {
			stale = append(stale, name+" (differs)")
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("docs/cli is out of date; run `make docs`:\n%v", stale)
	}
	if _, ok := pages["gostachio-sim.md"]; !ok {
		t.Errorf("no page for gostachio sim among %d pages", len(pages))
	}
}
