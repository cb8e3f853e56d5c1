package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"gostachio/tpch"
)

func init() { commands = append(commands, newGenCmd) }

func newGenCmd(g *globals) *cobra.Command {
	var o tpch.GenOptions
	var stripes string
	cmd := &cobra.Command{
		Use:   "gen --sf F --out DIR",
		Short: "Generate a dbgen-exact TPC-H dataset (Arrow IPC, O_DIRECT-aligned) with its manifest",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if stripes != "" {
				o.Stripes = strings.Split(stripes, ",")
			}
			if c.Flags().Changed("partitions") && o.Partitions < 1 {
				return fmt.Errorf("gen: --partitions %d: must be at least 1", o.Partitions)
			}
			o.JSON = g.json
			o.Now = time.Now
			return tpch.Gen(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.ScaleFactor, "sf", 0, "TPC-H scale factor (e.g. 0.01, 0.1, 1, 10)")
	f.StringVar(&o.Out, "out", "", "dataset folder to create")
	f.IntVar(&o.ChunkRows, "chunk-rows", tpch.DefaultChunkRows, "rows per chunk (orders/lineitem/partsupp: see docs)")
	f.BoolVar(&o.Force, "force", false, "replace an existing dataset folder")
	f.BoolVar(&o.IfMissing, "if-missing", false, "keep an existing valid dataset of the same scale factor")
	f.StringVar(&stripes, "stripe", "", "extra folders (comma-separated, e.g. on other SSDs) to spread chunks over")
	f.IntVar(&o.Workers, "workers", 0, "generator goroutines (default: all cores)")
	f.IntVar(&o.Partitions, "partitions", 0, "split the tables by key hash into N partitions (see `gostachio partition`; 0: unpartitioned)")
	_ = cmd.MarkFlagRequired("sf")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}
