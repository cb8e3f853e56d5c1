package calibrate

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"gostachio/costmodel"
	"gostachio/engine"
	"gostachio/plan"
	"gostachio/sim"
	"gostachio/tpch/queries"
)

// OpsOptions are the inputs of PriceOps (`gostachio validate-ops`).
type OpsOptions struct {
	// Profile prices the operators (a name or a .yaml path); its host
	// device must run the kernels (a CPU-engine profile).
	Profile string
	// Data is the dataset the times were taken on: the plans' statistics.
	Data string
	// Times are CSVs of `gostachio query --op-times`: one run's, or a
	// cluster's, one a worker (their hash tables are their own).
	Times []string
	// CPUSlowdown multiplies every price (validate's --rescale-cpu
	// factor; 0: 1).
	CPUSlowdown float64
	// Warmup drops each query's first Warmup runs (a process's first run
	// of a query faults its memory in: not the steady state validate
	// measures). Negative is an error.
	Warmup int
	// Log receives the profile's provenance warnings.
	Log io.Writer
}

// OpRow is one plan operator of one query over all its timed runs: what
// the engine measured and what the profile prices the same inputs at.
type OpRow struct {
	Query    string `json:"query"`
	Pipeline int    `json:"pipeline"`
	Op       int    `json:"op"`
	// Kind is the operator's plan.OpKind name, or engine.OpEmit (not
	// priced: the simulator prices a state's emit with its consumer).
	Kind  string `json:"kind"`
	Label string `json:"label"`
	// Profiled: priced at its own scale of its kind (host.profiled).
	Profiled bool  `json:"profiled"`
	Runs     int   `json:"runs"`
	InRows   int64 `json:"in_rows"`
	InBytes  int64 `json:"in_bytes"`
	// MeasuredNs is the wall time; CPUNs the CPU time of the operator's
	// thread (engine.OpTime), -1 where a run did not record it.
	MeasuredNs float64 `json:"measured_ns"`
	CPUNs      float64 `json:"cpu_ns"`
	PricedNs   float64 `json:"priced_ns"`
}

// Ratio is measured (wall) over priced time (0 when nothing is priced).
func (r OpRow) Ratio() float64 { return ratio(r.MeasuredNs, r.PricedNs) }

// CPURatio is the CPU time over the priced time (0 when nothing is priced
// or a run has no CPU time).
func (r OpRow) CPURatio() float64 { return cpuRatio(r.CPUNs, r.PricedNs) }

func cpuRatio(cpu, priced float64) float64 {
	if cpu < 0 {
		return 0
	}
	return ratio(cpu, priced)
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// OpsTotal sums the priced operators of a query or of a kind.
type OpsTotal struct {
	Name       string  `json:"name"`
	Operators  int     `json:"operators"`
	MeasuredNs float64 `json:"measured_ns"`
	// CPUNs is -1 where a run did not record its CPU time.
	CPUNs    float64 `json:"cpu_ns"`
	PricedNs float64 `json:"priced_ns"`
	// Ratio is MeasuredNs over PricedNs; CPURatio CPUNs over PricedNs
	// (0: not recorded).
	Ratio    float64 `json:"ratio"`
	CPURatio float64 `json:"cpu_ratio"`
	// EmitNs is the measured time of partial states' emits (unpriced);
	// EmitCPUNs their CPU time (-1: not recorded).
	EmitNs    float64 `json:"emit_ns,omitempty"`
	EmitCPUNs float64 `json:"emit_cpu_ns,omitempty"`
	// ProcessCPUNs, per query, is the CPU time its processes used over
	// the kept runs (every worker's, in a cluster; engine.OpQuery): the
	// operators' and what ran beside them. -1: not recorded (a file of a
	// binary from before it was).
	ProcessCPUNs float64 `json:"process_cpu_ns,omitempty"`
}

// OpsReport is PriceOps' result.
type OpsReport struct {
	Profile string     `json:"profile"`
	Runs    int        `json:"runs"`
	Rows    []OpRow    `json:"operators"`
	Queries []OpsTotal `json:"queries"`
	Kinds   []OpsTotal `json:"kinds"`
}

type opKey struct {
	query        string
	pipeline, op int
	kind         string
}

type tableKey struct {
	query                       string
	node, run, pipeline, device int
}

// timed is an operator run of worker node's times (OpsOptions.Times),
// from row row of file.
type timed struct {
	engine.OpTime
	node int
	file string
	row  int
}

// PriceOps prices every operator run of opts.Times on the profile's host
// with its measured input rows, bytes and output bytes, as the simulator
// prices it inside a kernel (costmodel.Device.OpNs: its kind's cost, its
// own scale where profiled; a probe's working set the table its device
// (and worker) built in that run, costmodel.WorkingSet), and sums both per plan
// operator, per query and per kind. A ratio above 1 is an operator the
// model under-prices inside the query; the cardinalities are the
// measured ones, so what is left is the cost per row and byte.
func PriceOps(opts OpsOptions) (*OpsReport, error) {
	prof, err := sim.LoadProfileLog(opts.Profile, opts.Log)
	if err != nil {
		return nil, err
	}
	if !prof.Node.KernelsOnHost {
		return nil, fmt.Errorf("calibrate: validate-ops prices the CPU engine's operators: profile %s runs its kernels on a GPU", prof.Name)
	}
	if len(opts.Times) == 0 {
		return nil, fmt.Errorf("calibrate: validate-ops: no operator times to price")
	}
	if opts.Warmup < 0 {
		return nil, fmt.Errorf("calibrate: validate-ops: --warmup %d: want 0 or more runs", opts.Warmup)
	}
	var times []timed
	var whole []engine.OpTime // the OpQuery rows
	for node, path := range opts.Times {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
		ts, err := engine.ReadOpTimes(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", path, err)
		}
		for i, t := range afterWarmup(ts, opts.Warmup) {
			if t.Kind == engine.OpQuery {
				whole = append(whole, t)
				continue
			}
			times = append(times, timed{t, node, path, i + 1})
		}
	}
	if len(times) == 0 {
		return nil, fmt.Errorf("calibrate: %s: no operator was timed after each query's first %d runs", strings.Join(opts.Times, ", "), opts.Warmup)
	}
	_, tables, sf, err := openPlanStats(opts.Data)
	if err != nil {
		return nil, err
	}
	slow := opts.CPUSlowdown
	if slow == 0 {
		slow = 1
	}
	plans := map[string]*plan.Plan{}
	built := map[tableKey]float64{}
	runs := map[[2]any]bool{}
	for _, t := range times {
		p := plans[t.Query]
		if p == nil {
			if p, err = queries.Build(t.Query, sf, tables); err != nil {
				return nil, fmt.Errorf("calibrate: %s: row %d: %w", t.file, t.row, err)
			}
			plans[t.Query] = p
		}
		if t.Pipeline < 0 || t.Pipeline >= len(p.Pipelines) || t.Op < 0 || t.Op >= len(p.Pipelines[t.Pipeline].Ops) {
			return nil, fmt.Errorf("calibrate: %s: row %d: %s has no pipeline %d op %d (times of another plan version?)", t.file, t.row, t.Query, t.Pipeline, t.Op)
		}
		op := &p.Pipelines[t.Pipeline].Ops[t.Op]
		want := op.Kind.String()
		if t.Kind == engine.OpEmit {
			want = plan.OpAggPartial.String()
		}
		if op.Kind.String() != want || (t.Kind != engine.OpEmit && t.Kind != want) {
			return nil, fmt.Errorf("calibrate: %s: row %d: %s pipeline %d op %d is a %s, the times say %s (times of another plan version?)", t.file, t.row, t.Query, t.Pipeline, t.Op, op.Kind, t.Kind)
		}
		if op.Kind == plan.OpHashBuild {
			built[tableKey{t.Query, t.node, t.Run, t.Pipeline, t.Device}] += float64(t.InRows)
		}
		runs[[2]any{t.Query, t.Run}] = true
	}
	rows := map[opKey]*OpRow{}
	var order []opKey
	for _, t := range times {
		p := plans[t.Query]
		op := &p.Pipelines[t.Pipeline].Ops[t.Op]
		k := opKey{t.Query, t.Pipeline, t.Op, t.Kind}
		r := rows[k]
		if r == nil {
			r = &OpRow{Query: t.Query, Pipeline: t.Pipeline, Op: t.Op, Kind: t.Kind, Label: op.Label}
			_, r.Profiled = prof.Host.Profiled[op.Fingerprint()]
			r.Profiled = r.Profiled && t.Kind != engine.OpEmit
			rows[k] = r
			order = append(order, k)
		}
		r.Runs++
		r.InRows += t.InRows
		r.InBytes += t.InBytes
		r.MeasuredNs += float64(t.Ns)
		r.CPUNs = addCPU(r.CPUNs, t.CPUNs)
		if t.Kind == engine.OpEmit {
			continue
		}
		table := func(build int) float64 {
			bp := &p.Pipelines[build]
			return costmodel.TableBytes(&bp.Ops[len(bp.Ops)-1], built[tableKey{t.Query, t.node, t.Run, build, t.Device}])
		}
		b, n := float64(t.InBytes), float64(t.InRows)
		r.PricedNs += slow * prof.Host.OpNs(op, b, n, float64(t.OutBytes), costmodel.WorkingSet(op, b, n, table), op.Fingerprint())
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.query != b.query {
			return queryLess(a.query, b.query)
		}
		if a.pipeline != b.pipeline {
			return a.pipeline < b.pipeline
		}
		return a.op < b.op
	})
	rep := &OpsReport{Profile: prof.Name, Runs: len(runs)}
	perQuery, perKind := map[string]*OpsTotal{}, map[string]*OpsTotal{}
	var qs, ks []string
	for _, k := range order {
		r := rows[k]
		rep.Rows = append(rep.Rows, *r)
		q := perQuery[r.Query]
		if q == nil {
			q = &OpsTotal{Name: r.Query}
			perQuery[r.Query] = q
			qs = append(qs, r.Query)
		}
		if r.Kind == engine.OpEmit {
			q.EmitNs += r.MeasuredNs
			q.EmitCPUNs = addCPU(q.EmitCPUNs, int64(r.CPUNs))
			continue
		}

		kd := perKind[r.Kind]
		if kd == nil {
			kd = &OpsTotal{Name: r.Kind}
			perKind[r.Kind] = kd
			ks = append(ks, r.Kind)
		}
		for _, t := range []*OpsTotal{q, kd} {
			t.Operators++
			t.MeasuredNs += r.MeasuredNs
			t.CPUNs = addCPU(t.CPUNs, int64(r.CPUNs))
			t.PricedNs += r.PricedNs
		}
	}
	sort.Strings(ks)
	process := map[string]float64{}
	for _, t := range whole {
		process[t.Query] = addCPU(process[t.Query], t.CPUNs)
	}
	for _, q := range qs {
		t := perQuery[q]
		t.ProcessCPUNs = -1
		if cpu, ok := process[q]; ok {
			t.ProcessCPUNs = cpu
		}
		t.Ratio, t.CPURatio = ratio(t.MeasuredNs, t.PricedNs), cpuRatio(t.CPUNs, t.PricedNs)
		rep.Queries = append(rep.Queries, *t)
	}
	for _, k := range ks {
		t := perKind[k]
		t.Ratio, t.CPURatio = ratio(t.MeasuredNs, t.PricedNs), cpuRatio(t.CPUNs, t.PricedNs)
		rep.Kinds = append(rep.Kinds, *t)
	}
	return rep, nil
}

// OutsideOpsNs is the CPU time of a query's processes outside its timed
// operators and emits: reads, decoding, exchange, the network stack,
// page faults, the collector, the scheduler (-1 where any part was not
// recorded).
func (t OpsTotal) OutsideOpsNs() float64 {
	if t.ProcessCPUNs < 0 || t.CPUNs < 0 || t.EmitCPUNs < 0 {
		return -1
	}
	return t.ProcessCPUNs - t.CPUNs - t.EmitCPUNs
}

// addCPU adds a run's CPU time to a sum; -1 (not recorded) in either
// makes the sum -1.
func addCPU(sum float64, run int64) float64 {
	if sum < 0 || run < 0 {
		return -1
	}
	return sum + float64(run)
}

// afterWarmup drops the times of each query's first warmup runs.
func afterWarmup(times []engine.OpTime, warmup int) []engine.OpTime {
	if warmup == 0 {
		return times
	}
	runs := map[string][]int{}
	for _, t := range times {
		if rs := runs[t.Query]; len(rs) == 0 || rs[len(rs)-1] != t.Run {
			if !slices.Contains(rs, t.Run) {
				runs[t.Query] = append(rs, t.Run)
			}
		}
	}
	drop := map[[2]any]bool{}
	for q, rs := range runs {
		slices.Sort(rs)
		for _, r := range rs[:min(warmup, len(rs))] {
			drop[[2]any{q, r}] = true
		}
	}
	var out []engine.OpTime
	for _, t := range times {
		if !drop[[2]any{t.Query, t.Run}] {
			out = append(out, t)
		}
	}
	return out
}

// queryLess orders q1 < q2 < q10.
func queryLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// WriteText prints the report: per query its operators (profiled ones
// marked *), then the totals per query and per kind; "-" where nothing is
// priced or no CPU time was recorded.
func (r *OpsReport) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "query\tpipe\top\tkind\truns\tin rows\twall ms\tcpu ms\tpriced ms\twall/priced\tcpu/priced\t\n")
	for _, o := range r.Rows {
		kind := o.Kind
		if o.Profiled {
			kind += "*"
		}
		priced, rt, crt := fmt.Sprintf("%.2f", o.PricedNs/1e6), orDash(o.Ratio(), "%.2f"), orDash(o.CPURatio(), "%.2f")
		if o.Kind == engine.OpEmit {
			priced, rt, crt = "-", "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%.2f\t%s\t%s\t%s\t%s\t\n", o.Query, o.Pipeline, o.Op, kind, o.Runs, o.InRows,
			o.MeasuredNs/1e6, cpuMs(o.CPUNs), priced, rt, crt)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d query runs priced by %s (* priced at its own scale; emits of partial states measured, not priced; wall: the operator's time, waits for a core included; cpu: its thread's CPU time; process cpu: every thread's over the query's runs, outside ops: what of it no operator took)\n", r.Runs, r.Profile)
	for _, part := range []struct {
		head string
		rows []OpsTotal
	}{{"query", r.Queries}, {"kind", r.Kinds}} {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		perQuery := part.head == "query"
		fmt.Fprintf(tw, "%s\toperators\twall ms\tcpu ms\tpriced ms\twall/priced\tcpu/priced\temits ms\t", part.head)
		if perQuery {
			fmt.Fprintf(tw, "process cpu ms\toutside ops ms\t")
		}
		fmt.Fprintln(tw)
		for _, t := range part.rows {
			fmt.Fprintf(tw, "%s\t%d\t%.2f\t%s\t%.2f\t%s\t%s\t%.2f\t", t.Name, t.Operators, t.MeasuredNs/1e6, cpuMs(t.CPUNs),
				t.PricedNs/1e6, orDash(t.Ratio, "%.2f"), orDash(t.CPURatio, "%.2f"), t.EmitNs/1e6)
			if perQuery {
				fmt.Fprintf(tw, "%s\t%s\t", cpuMs(t.ProcessCPUNs), cpuMs(t.OutsideOpsNs()))
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return nil
}

// cpuMs is a CPU time in ms, or "-" where it was not recorded.
func cpuMs(ns float64) string {
	if ns < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", ns/1e6)
}

// orDash formats v, or "-" where it is not positive (not priced, not
// recorded).
func orDash(v float64, format string) string {
	if !(v > 0) {
		return "-"
	}
	return fmt.Sprintf(format, v)
}
