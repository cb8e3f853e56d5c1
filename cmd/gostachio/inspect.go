package main

import (
	"github.com/spf13/cobra"

	"gostachio/dataset"
)

func init() { commands = append(commands, newInspectCmd) }

func newInspectCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "inspect DIR",
		Short: "Show a dataset's tables, rows, chunks, bytes per column, scale factor and format version",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return dataset.Inspect(args[0], g.json, c.OutOrStdout())
		},
	}
}
