package main

import (
	"strings"

	"github.com/spf13/cobra"

	"gostachio/engine"
	"gostachio/internal/units"
	"gostachio/kernels/cuda"
	"gostachio/tpch/queries"
)

func init() { commands = append(commands, newGPUCmd) }

func newGPUCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "gpu", Short: "The GPU backend: CUDA driver and devices, and its benchmarks"}
	cmd.AddCommand(&cobra.Command{
		Use:   "info",
		Short: "Load the CUDA driver and list its devices (name, memory, compute capability, driver version), or say that the CPU is used",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return cuda.WriteInfo(c.OutOrStdout(), g.json)
		},
	})
	var o engine.GPUBenchOptions
	var policies, gpuMem string
	bench := &cobra.Command{
		Use:   "bench --data DIR",
		Short: "Copy bandwidths, the queries' GPU kernels over device-resident columns vs a device-to-device copy, and the queries from storage on the GPU and the CPU under each policy",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.JSON = g.json
			o.Policies = strings.Split(policies, ",")
			if gpuMem != "" {
				n, err := units.ParseBytes(gpuMem)
				if err != nil {
					return err
				}
				o.GPUMem = n
			}
			o.Catalog = queries.Catalog()
			return engine.BenchGPU(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := bench.Flags()
	f.StringVar(&o.Data, "data", "", "dataset directory (from gostachio gen)")
	f.IntVar(&o.Ordinal, "gpu", 0, "CUDA device")
	f.StringVar(&o.Queries, "queries", "q1,q6", "queries (their scan pipelines must run on the GPU path)")
	f.IntVar(&o.Rounds, "rounds", 5, "timed rounds of every measurement (medians are reported)")
	f.StringVar(&policies, "policies", "serial,overlap", "policies of the runs from storage")
	f.StringVar(&o.Set, "set", "", "policy knob overrides, e.g. chunk=16MiB")
	f.StringVar(&gpuMem, "gpu-mem", "", "device memory budget (default: 90% of the free memory)")
	_ = bench.MarkFlagRequired("data")
	cmd.AddCommand(bench)
	return cmd
}
