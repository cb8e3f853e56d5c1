package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"gostachio/dataset"
	"gostachio/internal/machine"
	"gostachio/internal/stats"
	"gostachio/plan"
	"gostachio/tpch/verify"
)

// BenchPlansOptions configure `gostachio bench plans`: two catalogs that
// build the same queries differently (hand-built plans and plans from
// SQL), timed side by side on the CPU engine.
type BenchPlansOptions struct {
	Data string
	// Baseline and Candidate build the plans compared; every query must
	// be in both. Their labels name them in the output.
	Baseline, Candidate           plan.Catalog
	BaselineLabel, CandidateLabel string
	// Queries: "all" (the baseline's names) or a list (see ParseQueries).
	Queries string
	// Policy runs every plan (default "overlap").
	Policy string
	// Rounds of every (query, catalog) pair, in a new random order each
	// round, so that the machine's drift spreads over both.
	Rounds  int
	Seed    uint64
	Devices int
	Mem     int64
	JSON    bool
}

// BenchPlansQuery is one query's figures: medians over the rounds.
type BenchPlansQuery struct {
	Query string `json:"query"`
	// BaselineSeconds and CandidateSeconds are wall times of the run.
	BaselineSeconds  float64 `json:"baseline_seconds"`
	CandidateSeconds float64 `json:"candidate_seconds"`
	// Ratio is CandidateSeconds / BaselineSeconds.
	Ratio float64 `json:"ratio"`
	// PlanMillis is the time to build the candidate's plan (the median
	// over the rounds), BaselinePlanMillis the baseline's.
	PlanMillis         float64 `json:"plan_ms"`
	BaselinePlanMillis float64 `json:"baseline_plan_ms"`
	// Same reports whether both plans gave the same result (as text
	// cells, order-insensitive where neither sorts).
	Same bool `json:"same_result"`
	// Baseline and Candidate summarise each plan's shape; Differences
	// lists where they differ.
	Baseline    PlanShape `json:"baseline_shape"`
	Candidate   PlanShape `json:"candidate_shape"`
	Differences []string  `json:"differences,omitempty"`
}

// BenchPlansReport is the whole comparison.
type BenchPlansReport struct {
	Data      string            `json:"data"`
	Machine   string            `json:"machine"`
	Baseline  string            `json:"baseline"`
	Candidate string            `json:"candidate"`
	Policy    string            `json:"policy"`
	Rounds    int               `json:"rounds"`
	Queries   []BenchPlansQuery `json:"queries"`
	// GeomeanRatio is the geometric mean of the per-query ratios;
	// MaxRatio the largest.
	GeomeanRatio float64 `json:"geomean_ratio"`
	MaxRatio     float64 `json:"max_ratio"`
	// MaxPlanMillis is the slowest candidate planning time.
	MaxPlanMillis float64 `json:"max_plan_ms"`
}

// PlanShape is what distinguishes two plans of one query at a glance.
type PlanShape struct {
	Pipelines int `json:"pipelines"`
	// Scans maps each scanned table to the columns read, per scan
	// ("lineitem": ["l_orderkey,l_suppkey", ...]), sorted.
	Scans map[string][]string `json:"scans"`
	// Pruned is how many scans carry min/max pruning ranges.
	Pruned int `json:"pruned_scans"`
	// Exchanges counts sinks by kind (shuffle, broadcast, gather).
	Exchanges map[string]int `json:"exchanges"`
	// Joins counts probes by join kind (inner, semi, anti, left outer).
	Joins map[string]int `json:"joins"`
	// Aggregates counts partial aggregates.
	Aggregates int `json:"aggregates"`
}

// ShapeOf summarises p.
func ShapeOf(p *plan.Plan) PlanShape {
	s := PlanShape{Pipelines: len(p.Pipelines), Scans: map[string][]string{}, Exchanges: map[string]int{}, Joins: map[string]int{}}
	for i := range p.Pipelines {
		pl := &p.Pipelines[i]
		for _, op := range pl.Ops {
			switch {
			case op.Kind == plan.OpScan:
				s.Scans[op.Label] = append(s.Scans[op.Label], strings.Join(op.Out, ","))
				if len(op.Prune) > 0 {
					s.Pruned++
				}
			case op.Kind.IsExchange():
				s.Exchanges[op.Kind.String()]++
			case op.Kind == plan.OpHashProbe:
				kind := "inner"
				if j, ok := op.Expr.(plan.Join); ok {
					kind = j.Kind.String()
				}
				s.Joins[kind]++
			case op.Kind == plan.OpAggPartial:
				s.Aggregates++
			}
		}
	}
	for t := range s.Scans {
		sort.Strings(s.Scans[t])
	}
	return s
}

// Diff lists where b differs from a, in words ("scans of lineitem: 1 vs
// 2", "broadcast: 3 vs 1").
func (a PlanShape) Diff(b PlanShape) []string {
	var out []string
	if a.Pipelines != b.Pipelines {
		out = append(out, fmt.Sprintf("pipelines %d vs %d", a.Pipelines, b.Pipelines))
	}
	for _, t := range unionKeys(a.Scans, b.Scans) {
		sa, sb := a.Scans[t], b.Scans[t]
		switch {
		case len(sa) != len(sb):
			out = append(out, fmt.Sprintf("scans of %s %d vs %d", t, len(sa), len(sb)))
		case !slices.Equal(sa, sb):
			out = append(out, fmt.Sprintf("columns of %s %s vs %s", t, strings.Join(sa, "; "), strings.Join(sb, "; ")))
		}
	}
	if a.Pruned != b.Pruned {
		out = append(out, fmt.Sprintf("pruned scans %d vs %d", a.Pruned, b.Pruned))
	}
	for _, k := range unionKeys(a.Exchanges, b.Exchanges) {
		if a.Exchanges[k] != b.Exchanges[k] {
			out = append(out, fmt.Sprintf("%s %d vs %d", k, a.Exchanges[k], b.Exchanges[k]))
		}
	}
	for _, k := range unionKeys(a.Joins, b.Joins) {
		if a.Joins[k] != b.Joins[k] {
			out = append(out, fmt.Sprintf("%s joins %d vs %d", k, a.Joins[k], b.Joins[k]))
		}
	}
	if a.Aggregates != b.Aggregates {
		out = append(out, fmt.Sprintf("aggregates %d vs %d", a.Aggregates, b.Aggregates))
	}
	return out
}

func unionKeys[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// BenchPlans runs every query's baseline and candidate plans, cold, in
// one process, interleaved in a random order each round, and prints the
// median times, their ratio, the planning times, whether the results
// agree, and where the plans differ.
func BenchPlans(ctx context.Context, opts BenchPlansOptions, stdout, stderr io.Writer) error {
	if opts.Policy == "" {
		opts.Policy = "overlap"
	}
	if opts.Rounds <= 0 {
		opts.Rounds = 1
	}
	if opts.BaselineLabel == "" {
		opts.BaselineLabel = "baseline"
	}
	if opts.CandidateLabel == "" {
		opts.CandidateLabel = "candidate"
	}
	names, err := ParseQueries(opts.Queries, opts.Baseline.Names)
	if err != nil {
		return err
	}
	for _, q := range names {
		if !opts.Candidate.Has(q) {
			return fmt.Errorf("engine: bench plans: %s has no query %q", opts.CandidateLabel, q)
		}
	}
	ds, err := dataset.Open(opts.Data)
	if err != nil {
		return err
	}
	qo := QueryOptions{Policy: opts.Policy, Devices: opts.Devices, Mem: opts.Mem, Log: stderr, NoVerify: true}
	qo, closeSession, err := benchSession(ctx, ds, qo, stderr)
	if err != nil {
		return err
	}
	defer closeSession()

	type key struct {
		q         string
		candidate bool
	}
	times := map[key][]float64{}
	planMs := map[key][]float64{}
	results := map[key]*verify.Table{}
	shapes := map[key]PlanShape{}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x9e3779b97f4a7c15))
	total, done := opts.Rounds*len(names)*2, 0
	for r := 0; r < opts.Rounds; r++ {
		var jobs []key
		for _, q := range names {
			jobs = append(jobs, key{q, false}, key{q, true})
		}
		rng.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
		for _, j := range jobs {
			if err := ctx.Err(); err != nil {
				return err
			}
			cat, label := opts.Baseline, opts.BaselineLabel
			if j.candidate {
				cat, label = opts.Candidate, opts.CandidateLabel
			}
			start := time.Now()
			p, err := BuildQuery(ds, cat, j.q)
			if err != nil {
				return fmt.Errorf("engine: bench plans: %s %s: %w", label, j.q, err)
			}
			planMs[j] = append(planMs[j], float64(time.Since(start).Microseconds())/1e3)
			shapes[j] = ShapeOf(p)
			res, err := Query(ctx, ds, p, qo)
			if err != nil {
				return fmt.Errorf("engine: bench plans: %s %s: %w", label, j.q, err)
			}
			times[j] = append(times[j], res.Wall.Seconds())
			results[j] = &verify.Table{Header: res.Columns, Rows: res.Rows()}
			done++
			fmt.Fprintf(stderr, "[%d/%d] round %d %s %s: %.3f s\n", done, total, r+1, j.q, label, res.Wall.Seconds())
		}
	}
	rep := BenchPlansReport{Data: ds.Dir, Machine: machine.Name(), Baseline: opts.BaselineLabel, Candidate: opts.CandidateLabel,
		Policy: opts.Policy, Rounds: opts.Rounds}
	logSum := 0.0
	for _, q := range names {
		b, c := key{q, false}, key{q, true}
		bq := BenchPlansQuery{Query: q, BaselineSeconds: stats.Median(times[b]), CandidateSeconds: stats.Median(times[c]),
			PlanMillis: stats.Median(planMs[c]), BaselinePlanMillis: stats.Median(planMs[b]),
			Baseline: shapes[b], Candidate: shapes[c]}
		bq.Ratio = bq.CandidateSeconds / bq.BaselineSeconds
		// The header is not compared: the catalogs may name columns differently.
		rb, rc := *results[b], *results[c]
		rc.Header = rb.Header
		bq.Same = verify.Compare(&rc, &rb, false) == nil
		bq.Differences = bq.Baseline.Diff(bq.Candidate)
		logSum += math.Log(bq.Ratio)
		rep.MaxRatio = max(rep.MaxRatio, bq.Ratio)
		rep.MaxPlanMillis = max(rep.MaxPlanMillis, bq.PlanMillis)
		rep.Queries = append(rep.Queries, bq)
	}
	rep.GeomeanRatio = math.Exp(logSum / float64(len(names)))
	if opts.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	writeBenchPlans(stdout, &rep)
	return nil
}

func writeBenchPlans(w io.Writer, rep *BenchPlansReport) {
	fmt.Fprintf(w, "%s vs %s plans on %s, %s; policy %s; cold reads; median of %d round(s)\n",
		rep.Candidate, rep.Baseline, rep.Data, rep.Machine, rep.Policy, rep.Rounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "query\t%s s\t%s s\tratio\tplan ms\tsame result\twhere the plans differ\n", rep.Baseline, rep.Candidate)
	for _, q := range rep.Queries {
		diff := strings.Join(q.Differences, "; ")
		if diff == "" {
			diff = "-"
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.2f\t%.1f\t%v\t%s\n", q.Query, q.BaselineSeconds, q.CandidateSeconds, q.Ratio, q.PlanMillis, q.Same, diff)
	}
	fmt.Fprintf(tw, "geomean\t\t\t%.2f\t\t\t\n", rep.GeomeanRatio)
	tw.Flush()
	fmt.Fprintf(w, "largest ratio %.2f; slowest planning %.1f ms\n", rep.MaxRatio, rep.MaxPlanMillis)
}
