// Package clidoc writes the command-line reference of a cobra command tree
// as Markdown: one page per command, and an index. The reference is
// generated rather than written by hand so that it cannot drift from the
// flags the binary really accepts; a test compares the tracked pages with a
// fresh generation.
package clidoc

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"gostachio/internal/atomicfile"
)

// FileName is the page name of c: its command path with spaces as dashes,
// e.g. "gostachio-cluster-bench-sim.md".
func FileName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-") + ".md"
}

// Commands lists c and every command below it that a user can run or read
// about (hidden commands and cobra's own help and completion commands are
// left out), depth first, siblings by name.
func Commands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	subs := append([]*cobra.Command(nil), c.Commands()...)
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name() < subs[j].Name() })
	for _, s := range subs {
		if s.Hidden || s.Name() == "help" || s.Name() == "completion" {
			continue
		}
		out = append(out, Commands(s)...)
	}
	return out
}

// WritePage writes the reference page of one command to w: its usage,
// description, flags (its own, then those inherited from its parents) and
// links to its subcommands.
func WritePage(w io.Writer, c *cobra.Command) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", c.CommandPath())
	if c.Short != "" {
		fmt.Fprintf(&b, "%s\n\n", c.Short)
	}
	if c.Runnable() {
		fmt.Fprintf(&b, "```\n%s\n```\n\n", c.UseLine())
	}
	if c.Long != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(c.Long))
	}
	if c.Example != "" {
		fmt.Fprintf(&b, "## Examples\n\n```\n%s\n```\n\n", strings.TrimRight(c.Example, "\n"))
	}
	writeFlags(&b, "Flags", c.NonInheritedFlags())
	writeFlags(&b, "Inherited flags", c.InheritedFlags())
	var subs []*cobra.Command
	for _, s := range Commands(c)[1:] {
		if s.Parent() == c {
			subs = append(subs, s)
		}
	}
	if len(subs) > 0 {
		b.WriteString("## Subcommands\n\n")
		for _, s := range subs {
			fmt.Fprintf(&b, "- [%s](%s): %s\n", s.CommandPath(), FileName(s), s.Short)
		}
		b.WriteString("\n")
	}
	if p := c.Parent(); p != nil {
		fmt.Fprintf(&b, "Up: [%s](%s)\n", p.CommandPath(), FileName(p))
	}
	_, err := w.Write(bytes.TrimRight(b.Bytes(), "\n"))
	if err == nil {
		_, err = io.WriteString(w, "\n")
	}
	return err
}

func writeFlags(b *bytes.Buffer, title string, fs *pflag.FlagSet) {
	if !fs.HasAvailableFlags() {
		return
	}
	fmt.Fprintf(b, "## %s\n\n```\n%s```\n\n", title, fs.FlagUsagesWrapped(100))
}

// WriteTree writes one page per command of root into dir (created if
// missing), each atomically, and removes pages of commands that no longer
// exist, so the folder is exactly the reference of root. It returns the
// names of the pages written.
func WriteTree(root *cobra.Command, dir string) ([]string, error) {
	pages, err := Render(root)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("clidoc: %w", err)
	}
	old, err := filepath.Glob(filepath.Join(dir, root.Name()+"*.md"))
	if err != nil {
		return nil, fmt.Errorf("clidoc: %w", err)
	}
	for _, f := range old {
		if _, ok := pages[filepath.Base(f)]; !ok {
			if err := os.Remove(f); err != nil {
				return nil, fmt.Errorf("clidoc: %w", err)
			}
		}
	}
	names := make([]string, 0, len(pages))
	for name := range pages {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := atomicfile.WriteFile(filepath.Join(dir, name), pages[name]); err != nil {
			return nil, fmt.Errorf("clidoc: %w", err)
		}
	}
	return names, nil
}

// Render returns every page of root's tree by file name.
func Render(root *cobra.Command) (map[string][]byte, error) {
	root.InitDefaultHelpCmd()
	pages := map[string][]byte{}
	for _, c := range Commands(root) {
		// cobra adds --help to a command when it runs; add it to every
		// page alike, whichever command renders the tree.
		c.InitDefaultHelpFlag()
		var b bytes.Buffer
		if err := WritePage(&b, c); err != nil {
			return nil, err
		}
		pages[FileName(c)] = b.Bytes()
	}
	return pages, nil
}
