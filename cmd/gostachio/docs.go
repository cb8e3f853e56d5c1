package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"gostachio/internal/clidoc"
)

func init() { commands = append(commands, newDocsCmd) }

func newDocsCmd(g *globals) *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "docs",
		Short: "Write the command-line reference (one Markdown page per command) into a folder",
		Long: `docs writes one Markdown page per command of this binary (usage, flags,
subcommands) into --out, and removes pages of commands that no longer exist.
The repository's docs/cli is this command's output (make docs).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			names, err := clidoc.WriteTree(c.Root(), out)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.ErrOrStderr(), "wrote %d pages to %s\n", len(names), out)
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "docs/cli", "folder to write the pages into")
	return c
}
