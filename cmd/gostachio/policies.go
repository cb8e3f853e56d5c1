package main

import (
	"strings"

	"github.com/spf13/cobra"

	"gostachio/scheduler"
	// The policies beyond the knobs' presets register themselves by
	// name: every command that takes --policy (and a cluster worker,
	// which receives policy names) reaches them.
	_ "gostachio/scheduler/policies"
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
