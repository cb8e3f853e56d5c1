package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"gostachio/engine/cluster"
)

func init() { commands = append(commands, newClusterCmd) }

func newClusterCmd(_ *globals) *cobra.Command {
	var o cluster.LaunchOptions
	cmd := &cobra.Command{
		Use:   "cluster --nodes N -- query --data DIR [--query all ...]",
		Short: "Run a query on N worker processes of this machine (an emulated cluster over loopback TCP)",
		Long: `Starts N 'gostachio worker' processes on this machine (torchrun environment,
rank 0 at 127.0.0.1 on a free port) with the query options after '--', prints
rank 0's output and the others' prefixed with [rank k] on stderr. All workers
are killed on an interrupt or when one fails and the others do not exit
within --grace; none is left behind.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if c.Flags().ArgsLenAtDash() != 0 {
				return fmt.Errorf("cluster: put the query options after '--': gostachio cluster --nodes N -- query --data DIR ...")
			}
			if len(args) > 0 && args[0] == "query" {
				args = args[1:]
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("cluster: %w", err)
			}
			o.Exe, o.Args = exe, args
			return cluster.Launch(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Nodes, "nodes", 2, "worker processes")
	f.DurationVar(&o.Grace, "grace", 0, "how long workers may take to exit after one exited before they are killed (default 15s)")
	return cmd
}
