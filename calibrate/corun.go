package calibrate

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gostachio/costmodel"
	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/internal/stats"
	"gostachio/kernels/cpu"
	"gostachio/plan"
)

// What cores computing at once take from each other (sim node.corun). The
// engine runs a device per core, each on its own units of the same
// pipeline, so every kernel of a scan shares the caches and the memory
// bandwidth with the kernels of the other cores, where the kernel samples
// (micro.walk) run one at a time on an otherwise idle machine. microCorun
// times the plans' leading kernels over chunk 0 of their table alone and
// beside the same kernel over chunk 1 on every other core, in alternation,
// and fitCorun turns the pairs into the loss. On the 2-core Xeon guest
// (2026-11-26): 88 ms of kernels took 98 ms beside a neighbour, corun
// 0.114 (filters 1.15x, partial aggregates 1.06x, projections and shuffles
// 1.01x); single kernels 0.57–1.96x, so it is the time-weighted sum that
// is fitted.

const (
	// corunRounds alternations of alone / beside per kernel (their
	// medians are paired: the machine's speed flips within seconds).
	corunRounds = 7
	// corunReps timed runs per measurement (their median).
	corunReps = 3
	// corunMinNs: kernels faster than this alone are left out (under a
	// tenth of a millisecond the timer's and the neighbours' start-up
	// noise is the measurement; they weigh nothing in the time-weighted
	// fit either).
	corunMinNs = 100_000
)

// corunKernel is one kernel of microCorun: run on chunk 0, neighbour the
// same operator on chunk 1 (chunk 0 again where the table has one).
type corunKernel struct {
	op             plan.OpKind
	label          string
	rows           int64
	run, neighbour func() error
}

// microCorun measures the kernels beside kernels (see above): two
// CompCorun samples per kernel, Depth 0 alone and Depth the kernels beside
// it, Ns the median over corunRounds of the median of corunReps runs.
// With one core it measures nothing (nil).
func microCorun(ctx context.Context, ds *dataset.Dataset, opts MicroOptions, logw io.Writer) ([]Sample, error) {
	cores := runtime.GOMAXPROCS(0)
	if cores < 2 {
		return nil, nil
	}
	kernels, err := corunKernels(ds, opts.Quick)
	if err != nil {
		return nil, err
	}
	rounds := corunRounds
	if opts.Quick {
		rounds = 3
	}
	var out []Sample
	for i, k := range kernels {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		alone, err := corunTime(k.run)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", k.label, err)
		}
		if alone < corunMinNs && !opts.Quick {
			continue
		}
		var as, bs []int64
		for range rounds {
			a, err := corunTime(k.run)
			if err != nil {
				return nil, fmt.Errorf("calibrate: %s: %w", k.label, err)
			}
			b, err := corunBeside(k, cores-1)
			if err != nil {
				return nil, fmt.Errorf("calibrate: %s: %w", k.label, err)
			}
			as, bs = append(as, a), append(bs, b)
		}
		a, b := stats.LowerMedian(as), stats.LowerMedian(bs)
		out = append(out,
			Sample{Component: CompCorun, Op: k.op.String(), Case: k.label, Rows: k.rows, Tasks: rounds, Ns: a},
			Sample{Component: CompCorun, Op: k.op.String(), Case: k.label, Rows: k.rows, Tasks: rounds, Depth: cores - 1, Ns: b})
		if (i+1)%20 == 0 {
			fmt.Fprintf(logw, "calibrate: kernels beside kernels: %d of %d\n", i+1, len(kernels))
		}
	}
	return out, nil
}

// corunTime is the median of corunReps runs of fn.
func corunTime(fn func() error) (int64, error) {
	ts := make([]int64, 0, corunReps)
	for range corunReps {
		start := time.Now()
		if err := fn(); err != nil {
			return 0, err
		}
		ts = append(ts, time.Since(start).Nanoseconds())
	}
	return stats.LowerMedian(ts), nil
}

// corunBeside is corunTime of k.run while others goroutines run
// k.neighbour in a loop (started, and one of their runs under way, before
// the timing).
func corunBeside(k corunKernel, others int) (int64, error) {
	var stop atomic.Bool
	var started sync.WaitGroup
	var wg sync.WaitGroup
	errs := make([]error, others)
	for g := range others {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			first := true
			for !stop.Load() {
				if first {
					started.Done()
					first = false
				}
				if err := k.neighbour(); err != nil {
					errs[g] = err
					return
				}
			}
			if first {
				started.Done()
			}
		}()
	}
	started.Wait()
	ns, err := corunTime(k.run)
	stop.Store(true)
	wg.Wait()
	for _, e := range errs {
		if e != nil && err == nil {
			err = e
		}
	}
	return ns, err
}

// corunKernels lists the leading operators (filters, projections, the
// partial aggregate, the shuffle) of every scan pipeline of the 22 plans
// over all of chunk 0 of their table, each with its neighbour on chunk 1,
// up to the first operator that needs another pipeline's output. Quick:
// q1 and q6 only.
func corunKernels(ds *dataset.Dataset, quick bool) ([]corunKernel, error) {
	m := &micro{ds: ds, batches: map[string]*cpu.Batch{}}
	chunk1 := map[string]*cpu.Batch{}
	other := func(name string) (*cpu.Batch, error) {
		if b, ok := chunk1[name]; ok {
			return b, nil
		}
		tm, err := ds.Table(name)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
		if len(tm.Chunks) < 2 {
			return m.table(name)
		}
		sb, err := ds.ReadChunk(name, 1, nil)
		if err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
		b := engine.ChunkBatch(sb)
		chunk1[name] = b
		return b, nil
	}
	var out []corunKernel
	err := m.eachPlan(context.Background(), func(p *plan.Plan) error {
		if quick && p.Name != "q1" && p.Name != "q6" {
			return nil
		}
		for pi := range p.Pipelines {
			pl := &p.Pipelines[pi]
			if pl.Source.Kind != plan.SourceScan {
				continue
			}
			name := p.Tables[pl.Source.Table].Name
			base, err := m.table(name)
			if err != nil {
				return err
			}
			nb, err := other(name)
			if err != nil {
				return err
			}
			a, err := cols(base, pl.Ops[0].Out, base.Rows)
			if err != nil {
				return fmt.Errorf("calibrate: %s pipeline %d: %w", p.Name, pi, err)
			}
			b, err := cols(nb, pl.Ops[0].Out, nb.Rows)
			if err != nil {
				return fmt.Errorf("calibrate: %s pipeline %d: %w", p.Name, pi, err)
			}
			ks, err := corunPipeline(p, pi, a, b)
			if err != nil {
				return fmt.Errorf("calibrate: %s pipeline %d (%s): %w", p.Name, pi, pl.Name, err)
			}
			out = append(out, ks...)
		}
		return nil
	})
	return out, err
}

// corunPipeline is corunKernels for one pipeline, its input a on chunk 0
// and b on chunk 1 (the operators' outputs on each feed the next).
func corunPipeline(p *plan.Plan, pi int, a, b *cpu.Batch) ([]corunKernel, error) {
	pl := &p.Pipelines[pi]
	devices := runtime.GOMAXPROCS(0)
	var out []corunKernel
	for oi := 1; oi < len(pl.Ops) && a.Rows > 0 && b.Rows > 0; oi++ {
		op := &pl.Ops[oi]
		// step is op over in; next is its output (nil: the last kernel).
		var step func(in *cpu.Batch) (next *cpu.Batch, err error)
		switch op.Kind {
		case plan.OpFilter:
			step = func(in *cpu.Batch) (*cpu.Batch, error) { return cpu.Filter(in, op.Expr) }
		case plan.OpProject:
			step = func(in *cpu.Batch) (*cpu.Batch, error) { return cpu.Project(in, op.Expr.(plan.Projection)) }
		case plan.OpAggPartial:
			step = func(in *cpu.Batch) (*cpu.Batch, error) { _, err := fold(op, in); return nil, err }
		case plan.OpShuffle:
			step = func(in *cpu.Batch) (*cpu.Batch, error) {
				_, err := cpu.Partition(in, op.Keys, devices)
				return nil, err
			}
		default:
			return out, nil
		}
		ina, inb := a, b
		out = append(out, corunKernel{op: op.Kind, label: fmt.Sprintf("%s p%d %s", p.Name, pi, op.Kind), rows: int64(ina.Rows),
			run:       func() error { _, err := step(ina); return err },
			neighbour: func() error { _, err := step(inb); return err }})
		var err error
		if a, err = step(ina); err != nil {
			return nil, err
		}
		if b, err = step(inb); err != nil {
			return nil, err
		}
		if a == nil || b == nil {
			break
		}
	}
	return out, nil
}

// fitCorun fits sim node.corun to the CompCorun samples of samples
// (others are skipped): with a_i and b_i kernel i's time alone and beside
// c kernels on the other cores,
//
//	corun = clamp(Σ b_i / Σ a_i − 1, 0, c)
//
// (time-weighted: the model slows every kernel alike, so the kernels that
// take the time should set it). The bound c: at corun = c the c + 1 cores
// together do the work of one, and a kernel that slows more beside its
// neighbours than it would sharing one core with them is measuring
// something else (the machine's other load taking a core: seen with the
// quick samples under `make test`, 16 Ki-row kernels 1.6x beside one
// neighbour). The report gives the same ratio per operator kind. ok is
// false without a pair.
func fitCorun(samples []Sample) (corun float64, ok bool, q Component) {
	type pair struct{ a, b int64 }
	pairs := map[string]*pair{}
	kind := map[string]string{}
	var order []string
	beside := 0
	for _, s := range samples {
		if s.Component != CompCorun || s.Ns <= 0 {
			continue
		}
		p, seen := pairs[s.Case]
		if !seen {
			p = &pair{}
			pairs[s.Case] = p
			kind[s.Case] = s.Op
			order = append(order, s.Case)
		}
		if s.Depth == 0 {
			p.a = s.Ns
		} else {
			p.b = s.Ns
			beside = max(beside, s.Depth)
		}
	}
	var sa, sb float64
	byKind := map[string][2]float64{}
	var ratios []float64
	n := 0
	for _, c := range order {
		p := pairs[c]
		if p.a <= 0 || p.b <= 0 {
			continue
		}
		n++
		sa += float64(p.a)
		sb += float64(p.b)
		k := byKind[kind[c]]
		byKind[kind[c]] = [2]float64{k[0] + float64(p.a), k[1] + float64(p.b)}
		ratios = append(ratios, float64(p.b)/float64(p.a))
	}
	if n == 0 {
		return 0, false, Component{}
	}
	corun = min(max(sb/sa-1, 0), float64(beside))
	capped := ""
	if sb/sa-1 > corun {
		capped = fmt.Sprintf(", capped at %d: the cores together no slower than one", beside)
	}
	var kinds []string
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var per []string
	for _, k := range kinds {
		per = append(per, fmt.Sprintf("%s %.2fx", k, byKind[k][1]/byKind[k][0]))
	}
	q = Component{"corun", fmt.Sprintf("each kernel at 1/(1+%.3g) with every core busy: %.1f ms of kernels took %.1f ms beside their neighbours (%s; single kernels %.2f–%.2fx%s)",
		corun, sa/1e6, sb/1e6, strings.Join(per, ", "), slices.Min(ratios), slices.Max(ratios), capped), costmodel.FitQuality{N: n, R2: math.NaN()}}
	return corun, true, q
}
