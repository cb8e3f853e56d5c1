package demo

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/sim"
	"gostachio/sqlplan"
	"gostachio/tpch/queries"
)

// demoSQLText is the demo's own query: not one of TPC-H's 22, written the
// way a researcher would bring one.
const demoSQLText = `select l_shipmode, count(*) as lines, sum(l_extendedprice) as revenue
from lineitem join orders on l_orderkey = o_orderkey
where o_orderpriority = '1-URGENT' and l_shipdate >= date '1995-01-01'
group by l_shipmode
order by revenue desc
limit 3`

// DemoSQL is the demo's SQL step: its query planned from the dataset's
// manifest and run on the engine, and planned again from the
// specification's statistics at the cluster's scale and simulated.
type DemoSQL struct {
	SQL string `json:"sql"`
	// Pipelines and PlanMicros describe the engine's plan: its pipelines
	// and the planning time.
	Pipelines  int     `json:"pipelines"`
	PlanMicros float64 `json:"plan_us"`
	// Columns and Rows are the engine's result; EngineMs its run time.
	Columns  []string   `json:"columns"`
	Rows     [][]string `json:"rows"`
	EngineMs float64    `json:"engine_ms"`
	// SimProfile, SimNodes and SimSF say what was simulated; SimMs is the
	// simulated makespan under overlap.
	SimProfile string  `json:"sim_profile"`
	SimNodes   int     `json:"sim_nodes"`
	SimSF      float64 `json:"sim_sf"`
	SimMs      float64 `json:"sim_ms"`
}

// demoSQL plans demoSQLText over ds for this machine's workers and runs
// it on the engine (with qo), then plans it at scale factor clusterSF for
// nodes dgx-a100 nodes and simulates it.
func demoSQL(ctx context.Context, ds *dataset.Dataset, qo engine.QueryOptions, clusterSF float64, nodes int, now func() time.Time) (*DemoSQL, error) {
	out := &DemoSQL{SQL: demoSQLText, SimProfile: "dgx-a100", SimNodes: nodes, SimSF: clusterSF}
	if now == nil {
		now = time.Now
	}
	start := now()
	p, err := sqlplan.Plan("mine", demoSQLText, ds.PlanStats(), sqlplan.Options{Workers: runtime.GOMAXPROCS(0)})
	if err != nil {
		return nil, fmt.Errorf("demo: plan the SQL query: %w", err)
	}
	out.PlanMicros = float64(now().Sub(start).Nanoseconds()) / 1e3
	out.Pipelines = len(p.Pipelines)
	res, err := engine.Query(ctx, ds, p, qo)
	if err != nil {
		return nil, fmt.Errorf("demo: the SQL query on the engine: %w", err)
	}
	out.Columns, out.Rows, out.EngineMs = res.Columns, res.Rows(), float64(res.Wall.Microseconds())/1e3
	prof, err := sim.LoadProfileLog(out.SimProfile, io.Discard)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	tables, err := queries.Stats(clusterSF, sim.DefaultChunkRows)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	sp, err := sqlplan.Plan("mine", demoSQLText, tables, sqlplan.Options{Workers: nodes * max(prof.Node.GPUs, 1)})
	if err != nil {
		return nil, fmt.Errorf("demo: plan the SQL query at SF%g: %w", clusterSF, err)
	}
	r, err := simulate(ctx, sim.SimOptions{Profile: out.SimProfile, Log: io.Discard, Nodes: nodes, SF: clusterSF, Plan: sp, Policy: "overlap"})
	if err != nil {
		return nil, fmt.Errorf("demo: simulate the SQL query: %w", err)
	}
	out.SimMs = float64(r.MakespanNs) / 1e6
	return out, nil
}

// write prints the step.
func (d *DemoSQL) write(w io.Writer) {
	fmt.Fprintf(w, "\n== 3. your own query: SQL, planned for the engine and for the simulator ==\n")
	for _, line := range strings.Split(d.SQL, "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
	fmt.Fprintf(w, "planned in %.0f µs into %d pipelines from the dataset's statistics (gostachio explain --sql ... shows the plan)\n",
		d.PlanMicros, d.Pipelines)
	fmt.Fprintf(w, "engine, this machine: %.3f ms\n", d.EngineMs)
	fmt.Fprintf(w, "  %s\n", strings.Join(d.Columns, " | "))
	for _, r := range d.Rows {
		fmt.Fprintf(w, "  %s\n", strings.Join(r, " | "))
	}
	fmt.Fprintf(w, "simulator, %d %s nodes at SF%g (planned from the specification's statistics): %.3f ms under overlap\n",
		d.SimNodes, d.SimProfile, d.SimSF, d.SimMs)
}
