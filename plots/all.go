package plots

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"

	"gostachio/experiments"
	"gostachio/traces"
)

// figure is one figure DrawAll draws: its file name without extension and
// a function that builds it.
type figure struct {
	name  string
	build func() (*plot.Plot, error)
}

// planFigures lists the figures results and traceFiles support, and why
// the others are skipped. Results are grouped by origin (backend,
// profile/machine, nodes, SF), and per origin:
//
//   - speedup-ORIGIN: with at least 2 policy variants among the results
//     without a sweep point;
//   - utilization-ORIGIN: if those record utilization;
//   - sweep-AXIS-ORIGIN: per sweep axis present;
//
// then scatter-SIM-vs-ENGINE per sim profile and engine machine with
// paired configurations, and timeline-BASE (timeline-BASE-RUN for a trace
// of several runs) per trace file.
func planFigures(results []experiments.Result, traceFiles []string) (figs []figure, skipped []string) {
	groups := map[origin][]experiments.Result{}
	for i := range results {
		o := originOf(&results[i])
		groups[o] = append(groups[o], results[i])
	}
	origins := make([]origin, 0, len(groups))
	for o := range groups {
		origins = append(origins, o)
	}
	slices.SortFunc(origins, compareOrigin)
	for _, o := range origins {
		g := groups[o]
		var plain []experiments.Result
		hasUtil := false
		for i := range g {
			if g[i].Sweep == "" {
				plain = append(plain, g[i])
				hasUtil = hasUtil || len(g[i].Util) > 0
			}
		}
		switch vs := variantsOf(plain); {
		case len(plain) == 0:
			skipped = append(skipped, fmt.Sprintf("speedup, utilization (%s): every result has a sweep point", o))
		case len(vs) < 2:
			skipped = append(skipped, fmt.Sprintf("speedup (%s): only one policy (%s)", o, vs[0]))
		default:
			figs = append(figs, figure{"speedup-" + o.slug(), func() (*plot.Plot, error) { return Speedup(plain, "") }})
		}
		if len(plain) > 0 {
			if hasUtil {
				figs = append(figs, figure{"utilization-" + o.slug(), func() (*plot.Plot, error) { return Utilization(plain, "") }})
			} else {
				skipped = append(skipped, fmt.Sprintf("utilization (%s): no result records utilization", o))
			}
		}
		for _, axis := range sweepAxes(g) {
			figs = append(figs, figure{"sweep-" + slugify(axis) + "-" + o.slug(), func() (*plot.Plot, error) { return Sweep(g, axis) }})
		}
	}

	// Scatter: per sim profile and engine machine (node counts included).
	sims, engines := map[origin][]experiments.Result{}, map[origin][]experiments.Result{}
	for i := range results {
		o := originOf(&results[i])
		o.sf = 0
		switch o.backend {
		case "sim":
			sims[o] = append(sims[o], results[i])
		case "engine":
			engines[o] = append(engines[o], results[i])
		}
	}
	simOs, engOs := keysSorted(sims), keysSorted(engines)
	if len(simOs) > 0 && len(engOs) > 0 {
		n := 0
		for _, so := range simOs {
			for _, eo := range engOs {
				rs := append(slices.Clone(sims[so]), engines[eo]...)
				if len(scatterPairs(rs)) == 0 {
					continue
				}
				n++
				figs = append(figs, figure{"scatter-" + so.slug() + "-vs-" + eo.slug(), func() (*plot.Plot, error) { return Scatter(rs) }})
			}
		}
		if n == 0 {
			skipped = append(skipped, "scatter: no configuration (query, policy, knobs, sweep point, SF) has results of both the sim and the engine")
		}
	}

	// Timelines: one per trace file, one per run if it holds several.
	used := map[string]int{}
	for _, tf := range traceFiles {
		base := slugify(strings.TrimSuffix(filepath.Base(tf), filepath.Ext(tf)))
		used[base]++
		if used[base] > 1 {
			base = fmt.Sprintf("%s-%d", base, used[base])
		}
		figs = append(figs, figure{"timeline-" + base, func() (*plot.Plot, error) {
			ev, meta, err := traces.Load(tf)
			if err != nil {
				return nil, err
			}
			title := cmp.Or(meta.Title, filepath.Base(tf))
			return Timeline(ev, meta, title)
		}})
	}
	return figs, skipped
}

func keysSorted(m map[origin][]experiments.Result) []origin {
	out := make([]origin, 0, len(m))
	for o := range m {
		out = append(out, o)
	}
	slices.SortFunc(out, compareOrigin)
	return out
}

// DrawAll draws every figure results and traceFiles support (see
// planFigures: speedup with 2 or more policies, utilization if recorded,
// a sweep figure per axis, the sim-vs-engine scatter when both backends
// have paired runs, a timeline per trace file) into the folder out
// (created if missing), each in every format of formats ("png", "svg",
// "pdf"; all of Formats if empty), named KIND-ORIGIN.FORMAT. It prints
// each file written, and each figure skipped with the reason, to w, and
// returns the files written. A figure that fails (a bad trace file) does
// not stop the others: the errors are returned joined, with the files
// that were written. No results and no traces, or nothing to draw, is an
// error.
func DrawAll(results []experiments.Result, traceFiles []string, out string, formats []string, w io.Writer) ([]string, error) {
	if len(formats) == 0 {
		formats = Formats
	}
	for _, f := range formats {
		if !slices.Contains(Formats, f) {
			return nil, fmt.Errorf("plots: unknown format %q (want %s)", f, strings.Join(Formats, ", "))
		}
	}
	if len(results) == 0 && len(traceFiles) == 0 {
		return nil, errors.New("plots: nothing to draw: no results and no trace files")
	}
	figs, skipped := planFigures(results, traceFiles)
	for _, s := range skipped {
		fmt.Fprintf(w, "skipped %s\n", s)
	}
	if len(figs) == 0 {
		return nil, fmt.Errorf("plots: the results support no figure (%s)", strings.Join(skipped, "; "))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	var written []string
	var errs []error
	for _, f := range figs {
		p, err := f.build()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.name, err))
			continue
		}
		for _, ext := range formats {
			path := filepath.Join(out, f.name+"."+ext)
			if err := Save(p, path); err != nil {
				errs = append(errs, err)
				continue
			}
			written = append(written, path)
			fmt.Fprintln(w, path)
		}
	}
	return written, errors.Join(errs...)
}
