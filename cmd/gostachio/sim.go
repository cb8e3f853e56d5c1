package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/internal/atomicfile"
	"gostachio/internal/sqlquery"
	"gostachio/plan"
	"gostachio/sim"
	"gostachio/sqlplan"
	"gostachio/tpch/queries"
	"gostachio/traces"
)

func init() { commands = append(commands, newSimCmd) }

func newSimCmd(g *globals) *cobra.Command {
	var o sim.SimOptions
	var data, replay, query string
	var chunkRows int
	var hybrid bool
	var sqlf *sqlFlags
	cmd := &cobra.Command{
		Use:   "sim --profile P --sf F --query Q | --sql TEXT | --sql-file FILE --policy P",
		Short: "Simulate a TPC-H or SQL query on a cluster of a hardware profile under a policy",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			o.JSON = g.json
			if o.Trace != "" {
				if err := atomicfile.CheckDir(o.Trace); err != nil {
					return fmt.Errorf("sim: --trace: %w", err)
				}
			}
			if o.Nodes < 1 {
				// SimOptions takes 0 for its default; a flag asks for a size.
				return fmt.Errorf("sim: --nodes %d must be at least 1", o.Nodes)
			}
			if hybrid {
				if replay != "" {
					return fmt.Errorf("sim: --gpu-hybrid places a planned query; a replay keeps its trace's placement")
				}
				o.Place = func(p *plan.Plan) error {
					_, err := engine.PlaceGPU(p, true)
					return err
				}
			}
			if replay != "" {
				if sqlf.given(c) {
					return fmt.Errorf("sim: --replay re-simulates its trace's query; --sql and --sql-file plan a new one")
				}
				return runReplay(c, o, replay, data)
			}
			var tables []plan.TableStats
			if data != "" {
				ds, err := dataset.Open(data)
				if err != nil {
					return err
				}
				tables, o.SF = ds.PlanStats(), ds.Manifest.ScaleFactor
			}
			if chunkRows == 0 {
				chunkRows = sim.DefaultChunkRows
			}
			if sqlf.given(c) {
				q, err := sqlf.query(c, "query")
				if err != nil {
					return err
				}
				if o.Plan, err = simSQL(q, o, chunkRows, tables); err != nil {
					return err
				}
				return sim.RunSim(c.Context(), o, c.OutOrStdout())
			}
			if sqlf.plans == "sql" {
				// The TPC-H query planned from its SQL text.
				if !(o.SF > 0) {
					return fmt.Errorf("sim: --plans sql: the dataset states no scale factor (Q11's parameter depends on it)")
				}
				text, err := queries.SQLText(query, o.SF)
				if err != nil {
					return fmt.Errorf("sim: %w", err)
				}
				if o.Plan, err = simSQL(sqlplan.Query{Name: query, SQL: text}, o, chunkRows, tables); err != nil {
					return err
				}
				return sim.RunSim(c.Context(), o, c.OutOrStdout())
			}
			if _, err := sqlf.tpchCatalog(0); err != nil {
				return fmt.Errorf("sim: %w", err)
			}
			p, sf, err := queries.Sized(query, o.SF, chunkRows, tables)
			if err != nil {
				return fmt.Errorf("sim: %w", err)
			}
			o.Plan, o.SF = p, sf
			return sim.RunSim(c.Context(), o, c.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Profile, "profile", "dgx-a100", "hardware profile: "+joinNames(sim.ProfileNames())+", or a .yaml path")
	f.IntVar(&o.Nodes, "nodes", 1, "nodes in the cluster")
	f.Float64Var(&o.SF, "sf", 1, "TPC-H scale factor (sizes only; no data needed)")
	f.StringVar(&data, "data", "", "size the workload from this dataset's manifest instead of --sf")
	f.IntVar(&chunkRows, "chunk-rows", 0, "rows per stored chunk (default: the dataset writer's)")
	f.StringVar(&query, "query", "q6", "TPC-H query")
	sqlf = addSQLFlags(f)
	sqlf.addPlansFlag(f)
	f.StringVar(&o.Policy, "policy", "overlap", "scheduling policy (see `gostachio policies`)")
	f.StringVar(&o.Set, "set", "", "policy knob overrides, e.g. chunk=8MiB,depth=4,combine=off")
	f.StringVar(&o.Trace, "trace", "", "write a Perfetto/Chrome JSON trace to this file")
	f.Float64Var(&o.Jitter, "jitter", 0, "vary every latency by ±this fraction (seeded)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the jitter")
	f.StringVar(&o.Net, "net", sim.NetFluid, "network model of sends: fluid (max-min fair with every flow on their links; exact) or analytic (each link serves its sends first come first served at its full rate; an approximation for large clusters, see docs/model.md)")
	f.Float64Var(&o.CPUSlowdown, "cpu-slowdown", 0, "multiply the host's compute prices by this factor (a CPU reference's time now over at calibration; 0: as profiled)")
	f.Float64Var(&o.DiskSpeedup, "disk-speedup", 0, "multiply the NVMe bandwidth by this factor (a disk reference's throughput now over the profile's model of it; 0: as profiled)")
	f.BoolVar(&hybrid, "gpu-hybrid", false, "with a GPU-backend profile (h100-gpu-calibrated, h200-gpu-calibrated): place the scan pipelines as query --gpu-hybrid runs them (what the GPU path lacks on the host)")
	f.StringVar(&replay, "replay", "", "re-simulate this engine trace with its real per-unit output sizes (--policy: what-if; default the recorded one)")
	return cmd
}

// simSQL plans query q for the simulation of o: over tables (a dataset's
// manifest) or, where nil, the TPC-H tables at o.SF in chunks of chunkRows
// rows, sized for the profile's devices on o.Nodes nodes.
func simSQL(q sqlplan.Query, o sim.SimOptions, chunkRows int, tables []plan.TableStats) (*plan.Plan, error) {
	prof, err := sim.LoadProfileLog(o.Profile, io.Discard)
	if err != nil {
		return nil, err
	}
	if tables == nil {
		if tables, err = queries.Stats(o.SF, chunkRows); err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
	}
	p, err := sqlplan.Plan(q.Name, q.SQL, tables, sqlplan.Options{Workers: o.Nodes * max(prof.Node.GPUs, 1)})
	if err != nil {
		return nil, sqlquery.Unwrapped(sqlquery.Locate(err, q.SQL))
	}
	return p, nil
}

// runReplay is `sim --replay TRACE`: the dataset is --data or the one the
// trace's title names; --policy defaults to the recorded one.
func runReplay(c *cobra.Command, o sim.SimOptions, path, data string) error {
	evs, meta, err := traces.Load(path)
	if err != nil {
		return err
	}
	query, _, dir, err := sim.TraceRun(evs, meta)
	if err != nil {
		return err
	}
	if data == "" {
		data = dir
	}
	if data == "" {
		return fmt.Errorf("sim: replay: the trace names no dataset; give --data DIR")
	}
	ds, err := dataset.Open(data)
	if err != nil {
		return err
	}
	p, sf, err := queries.Sized(query, ds.Manifest.ScaleFactor, 0, ds.PlanStats())
	if err != nil {
		return fmt.Errorf("sim: replay: %w", err)
	}
	ro := sim.ReplayOptions{Events: evs, Meta: meta, Profile: o.Profile, Plan: p, SF: sf, Set: o.Set, JSON: o.JSON}
	if c.Flags().Changed("policy") {
		ro.Policy = o.Policy
	}
	return sim.RunReplay(c.Context(), ro, c.OutOrStdout())
}
