// Command gostachio is the one CLI of the testbed. This file only builds the
// command tree and parses flags; every command's work is a function in a
// library package that takes its options and io.Writers.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"gostachio/internal/madvfree"
)

// globals are the flags every command accepts.
type globals struct {
	json bool
}

func main() {
	madvfree.Reexec()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "gostachio:", err)
		if errors.Is(err, context.Canceled) {
			os.Exit(130)
		}
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "gostachio",
		Short: "A testbed for distributed GPU query processing over fast storage and networks",
		Long: `gostachio reproduces PystachIO's overlap of NVMe reads, PCIe copies, kernels and
network exchange, with one overlap scheduler driving either a discrete-event
simulator of the hardware or the real engine.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().BoolVar(&g.json, "json", false, "machine-readable JSON output on stdout")
	for _, c := range commands {
		root.AddCommand(c(g))
	}
	return root
}

// commands are the subcommands, each registered by the file that builds it.
var commands []func(*globals) *cobra.Command
