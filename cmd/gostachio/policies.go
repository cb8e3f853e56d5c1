package main

import (
	"strings"

	"github.com/spf13/cobra"

	"gostachio/scheduler"
)

func init() { commands = append(commands, newPoliciesCmd) }

func newPoliciesCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "policies",
		Short: "List the scheduling policies and every knob (--set key=value) with its default and meaning",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return scheduler.ListPolicies(c.OutOrStdout(), g.json)
		},
	}
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
