package repocheck

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the module's root: two folders above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found at %s: %v", root, err)
	}
	return root
}

// trackedFiles lists the repository's files relative to root: git's index
// where git is there, else every file outside the build and output folders
// that .gitignore names.
func trackedFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil && len(out) > 0 {
		var files []string
		for _, f := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
			if _, err := os.Stat(filepath.Join(root, string(f))); err == nil {
				files = append(files, string(f))
			}
		}
		return files
	}
	skip := map[string]bool{".git": true, "out": true, "bin": true, "gpucarry": true, "gpudata": true}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && skip[rel] {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// isText reports whether data looks like text (no NUL in its first 8 KiB).
func isText(data []byte) bool {
	return !bytes.Contains(data[:min(len(data), 8192)], []byte{0})
}

func readTracked(t *testing.T, root string, match func(string) bool) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, f := range trackedFiles(t, root) {
		if !match(f) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if isText(data) {
			out[f] = data
		}
	}
	return out
}

func lineOf(data []byte, off int) int { return 1 + bytes.Count(data[:off], []byte{'\n'}) }

func isMarkdown(f string) bool { return strings.HasSuffix(f, ".md") }
