package main

import (
	"github.com/spf13/cobra"

	"gostachio/kernels/cuda"
)

func init() { commands = append(commands, newGPUCmd) }

func newGPUCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "gpu", Short: "The GPU backend: CUDA driver and devices"}
	cmd.AddCommand(&cobra.Command{
		Use:   "info",
		Short: "Load the CUDA driver and list its devices (name, memory, compute capability, driver version), or say that the CPU is used",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return cuda.WriteInfo(c.OutOrStdout(), g.json)
		},
	})
	return cmd
}
