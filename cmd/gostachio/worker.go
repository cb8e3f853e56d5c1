package main

import (
	"time"

	"github.com/spf13/cobra"

	"gostachio/engine/cluster"
	"gostachio/internal/units"
)

func init() { commands = append(commands, newWorkerCmd) }

func newWorkerCmd(g *globals) *cobra.Command {
	var o cluster.WorkerOptions
	var mem string
	cmd := &cobra.Command{
		Use:   "worker --data DIR [--query q1|all ...]",
		Short: "Run one worker of a multi-process query (under torchrun, srun, mpirun or 'gostachio cluster')",
		Long: `Runs one worker of a cluster that executes TPC-H queries together, exchanging
data over TCP. The rank, the number of workers and rank 0's address come from
the launcher's environment:
  torchrun   RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
  SLURM      SLURM_PROCID, SLURM_NTASKS, first host of SLURM_NODELIST
             (MASTER_ADDR / MASTER_PORT override; port default 29500)
  Open MPI   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, MASTER_ADDR (MASTER_PORT)
Rank 0 listens at the address, takes the query options (the others ignore
them), coordinates, and prints the results as 'gostachio query' does. Every
worker reads the same dataset directory (shared or replicated storage). A
worker that fails, dies or goes silent for --timeout fails the run with an
error naming it.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if g.json {
				o.Format = "json"
			}
			if mem != "" {
				n, err := units.ParseBytes(mem)
				if err != nil {
					return err
				}
				o.Mem = n
			}
			return cluster.RunWorker(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Data, "data", "", "dataset directory (the same path on every worker)")
	f.StringVar(&o.Query, "query", "all", "q1..q22, a comma-separated list, or all")
	f.StringVar(&o.Policy, "policy", "overlap", "scheduling policy (see `gostachio policies`)")
	f.StringVar(&o.Set, "set", "", "policy knob overrides, e.g. chunk=8MiB,depth=4")
	f.StringVar(&o.Format, "format", "table", "result format: table, csv, json")
	f.StringVar(&o.Trace, "trace", "", "rank 0 writes every worker's tasks as one Perfetto/Chrome JSON trace here, one process per worker (several queries: one file each, the query name before the extension)")
	f.StringVar(&mem, "mem", "4GiB", "memory budget of each worker")
	f.IntVar(&o.Devices, "devices", 0, "worker groups per worker (default: rank 0's CPUs)")
	f.BoolVar(&o.Buffered, "buffered", false, "read through the page cache instead of O_DIRECT")
	f.StringVar(&o.IO, "io", "auto", "storage backend: auto, uring, pread")
	f.DurationVar(&o.Timeout, "timeout", 5*time.Second, "fail the run when a worker is silent or a transfer stalls this long")
	f.StringVar(&o.Transport, "transport", "tcp", "exchange transport: tcp, or rdma (needs a binary built with -tags rdma: make build-rdma)")
	_ = cmd.MarkFlagRequired("data")
	return cmd
}
