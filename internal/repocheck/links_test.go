package repocheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink matches an inline Markdown link or image, capturing its target.
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// relativeTarget returns the file part of a link target when it is a
// relative path into the repository, and false for URLs, anchors and mail.
func relativeTarget(target string) (string, bool) {
	if strings.HasPrefix(target, "#") || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return "", false
	}
	if i := strings.IndexByte(target, '#'); i >= 0 {
		target = target[:i]
	}
	return target, target != ""
}

// TestRelativeLinksResolve fails on any relative link in a tracked Markdown
// file whose target does not exist (in the working tree, or outside the
// repository: a clone has nothing beside it).
func TestRelativeLinksResolve(t *testing.T) {
	root := repoRoot(t)
	docs := readTracked(t, root, isMarkdown)
	if len(docs) < 5 {
		t.Fatalf("found %d Markdown files; expected the README and docs/", len(docs))
	}
	checked := 0
	for f, data := range docs {
		inFence := false
		lines := strings.Split(string(data), "\n")
		for i, line := range lines {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inFence = !inFence
				continue
			}
			if inFence {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target, ok := relativeTarget(m[1])
				if !ok {
					continue
				}
				checked++
				abs := filepath.Clean(filepath.Join(root, filepath.Dir(f), target))
				if rel, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(rel, "..") {
					t.Errorf("%s:%d: link %q leaves the repository", f, i+1, m[1])
					continue
				}
				if _, err := os.Stat(abs); err != nil {
					t.Errorf("%s:%d: link %q does not resolve", f, i+1, m[1])
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found: the link pattern is broken")
	}
}

func TestRelativeTarget(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"docs/model.md", "docs/model.md", true},
		{"docs/model.md#nvme", "docs/model.md", true},
		{"#usage", "", false},
		{"https://duckdb.org", "", false},
		{"mailto:a@b", "", false},
	} {
		got, ok := relativeTarget(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("relativeTarget(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
