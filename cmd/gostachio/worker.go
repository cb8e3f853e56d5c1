package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	calcluster "gostachio/calibrate/cluster"
	"gostachio/engine/cluster"
	"gostachio/internal/sqlquery"
	"gostachio/sqlplan"
)

func init() { commands = append(commands, newWorkerCmd) }

func newWorkerCmd(g *globals) *cobra.Command {
	var o cluster.WorkerOptions
	var ro calcluster.ReferenceOptions
	var rf *runFlags
	var sqlf *sqlFlags
	cmd := &cobra.Command{
		Use:   "worker --data DIR [--query q1|all | --sql TEXT | --sql-file FILE ...]",
		Short: "Run one worker of a multi-process query (under torchrun, srun, mpirun or 'gostachio cluster')",
		Long: `Runs one worker of a cluster that executes TPC-H queries together, exchanging
data over TCP. The rank, the number of workers and rank 0's address come from
the launcher's environment:
  torchrun   RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
  SLURM      SLURM_PROCID, SLURM_NTASKS, first host of SLURM_NODELIST
             (MASTER_ADDR / MASTER_PORT override; port default 29500)
  Open MPI   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, MASTER_ADDR (MASTER_PORT)
Where the launcher says how many workers share this machine (LOCAL_WORLD_SIZE,
SLURM_NTASKS_PER_NODE, OMPI_COMM_WORLD_LOCAL_SIZE), each worker's heap gets that
share of the memory limit (not under 256 MiB; GOMEMLIMIT overrides).
Rank 0 listens at the address, takes the query options (the others ignore
them), coordinates, and prints the results as 'gostachio query' does. Every
worker reads the same dataset directory (shared or replicated storage). A
worker that fails, dies or goes silent for --timeout fails the run with an
error naming it. With --cpu-reference-every and --disk-reference-every, rank 0
times the CPU and disk references between queries while the others wait, and
each JSON result carries the times ('cluster bench-sim' rescales the simulator
by them).

An SQL query (--sql, --sql-file) must reach every worker the same (the
launcher's arguments: 'gostachio cluster' passes a --sql-file's text as --sql):
each plans it over its manifest for --devices on each of the workers (without
--devices, for the planner's default of 8), and rank 0 fails the run when a
worker's plan differs from its own.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := rf.resolve(g); err != nil {
				return err
			}
			// The references are rank 0's; an environment without a rank
			// is RunWorker's error to report.
			if rv, err := cluster.FromEnv(os.Getenv); err == nil {
				ro.Data, ro.IO, ro.Buffered = o.Data, o.IO, o.Buffered
				refs, err := calcluster.OpenReferences(ro, rv.Rank)
				if err != nil {
					return err
				}
				defer refs.Close()
				o.BetweenQueries = refs.Hook()
			}
			// Every worker must plan alike: from what all of them are
			// told, not from their own machine's cores.
			var workers int
			if rv, err := cluster.FromEnv(os.Getenv); err == nil && o.Devices > 0 {
				workers = rv.World * o.Devices
			}
			var err error
			if o.Catalog, err = sqlf.tpchCatalog(workers); err != nil {
				return err
			}
			if sqlf.given(c) {
				q, err := sqlf.query(c, "query")
				if err != nil {
					return err
				}
				if o.Catalog, err = sqlquery.Catalog([]sqlplan.Query{q}, sqlplan.Options{Workers: workers}); err != nil {
					return err
				}
				o.Query = q.Name
			}
			return sqlquery.Unwrapped(cluster.RunWorker(c.Context(), o, c.OutOrStdout(), c.ErrOrStderr()))
		},
	}
	f := cmd.Flags()
	rf = addRunFlags(f, &o.RunOptions, true)
	sqlf = addSQLFlags(f)
	sqlf.addPlansFlag(f)
	f.DurationVar(&o.Timeout, "timeout", 5*time.Second, "fail the run when a worker is silent or a transfer stalls this long")
	f.StringVar(&o.Transport, "transport", "tcp", "exchange transport: tcp, or rdma (needs a binary built with -tags rdma: make build-rdma)")
	f.IntVar(&ro.CPUEvery, "cpu-reference-every", 0, "rank 0 times the CPU reference after every N-th query, while the others wait (0: never)")
	f.IntVar(&ro.DiskEvery, "disk-reference-every", 0, "rank 0 times the disk reference (128 MiB of lineitem in --disk-reference-profile's requests) after every N-th query, while the others wait (0: never)")
	f.StringVar(&ro.DiskProfile, "disk-reference-profile", "", "profile (name or .yaml) whose storage model (nvme.request, nvme.device_qd) shapes the disk reference's reads")
	_ = cmd.MarkFlagRequired("data")
	return cmd
}
