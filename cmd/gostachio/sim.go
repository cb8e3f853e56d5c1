package main

import (
	"github.com/spf13/cobra"

	"gostachio/dataset"
	"gostachio/sim"
	"gostachio/tpch"
)

func init() { commands = append(commands, newSimCmd) }

func newSimCmd(g *globals) *cobra.Command {
	var o sim.SimOptions
	var data string
	cmd := &cobra.Command{
		Use:   "sim --profile P --sf F --query Q --policy P",
		Short: "Simulate a TPC-H query on a cluster of a hardware profile under a policy",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.JSON = g.json
			if data != "" {
				ds, err := dataset.Open(data)
				if err != nil {
					return err
				}
				o.Tables, o.SF = tpch.PlanStats(ds), ds.Manifest.ScaleFactor
			}
			return sim.RunSim(c.Context(), o, c.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Profile, "profile", "dgx-a100", "hardware profile: "+joinNames(sim.ProfileNames())+", or a .yaml path")
	f.IntVar(&o.Nodes, "nodes", 1, "nodes in the cluster")
	f.Float64Var(&o.SF, "sf", 1, "TPC-H scale factor (sizes only; no data needed)")
	f.StringVar(&data, "data", "", "size the workload from this dataset's manifest instead of --sf")
	f.IntVar(&o.ChunkRows, "chunk-rows", 0, "rows per stored chunk (default: the dataset writer's)")
	f.StringVar(&o.Query, "query", "q6", "TPC-H query")
	f.StringVar(&o.Policy, "policy", "overlap", "scheduling policy (see `gostachio policies`)")
	f.StringVar(&o.Set, "set", "", "policy knob overrides, e.g. chunk=8MiB,depth=4,combine=off")
	f.StringVar(&o.Trace, "trace", "", "write a Perfetto/Chrome JSON trace to this file")
	f.Float64Var(&o.Jitter, "jitter", 0, "vary every latency by ±this fraction (seeded)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the jitter")
	return cmd
}
