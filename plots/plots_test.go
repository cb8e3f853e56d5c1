package plots

import (
	"bytes"
	"fmt"
	"image"
	_ "image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"gostachio/experiments"
	"gostachio/internal/stats"
	"gostachio/traces"
	"gostachio/traces/event"
)

type plotT = plot.Plot

// synthResults builds a results table with every figure's data:
//   - sim on dgx-a100, SF 100: 5 queries x 4 policies x 5 reps, with
//     utilization, and a chunk sweep of 2 policies on q6 (3 reps);
//   - sim on dgx-a100 at SF 0.01 and the engine on vm-2cpu at SF 0.01:
//     3 queries x 2 policies (scatter pairs), 3 reps each.
func synthResults() []experiments.Result {
	rng := rand.New(rand.NewPCG(7, 7))
	var rs []experiments.Result
	speed := map[string]float64{"serial": 1, "double-buffer": 1.8, "pipeline": 2.6, "overlap": 3.4}
	base := map[string]float64{"q1": 2.0, "q3": 3.1, "q6": 0.9, "q9": 4.2, "q12": 1.7}
	add := func(backend, profile, machine string, sf float64, q, pol, sweep string, reps int, sec float64, util map[string]float64) {
		for rep := range reps {
			r := experiments.Result{
				Key: fmt.Sprintf("%s/%s/%s/%s/%g/%d", backend, q, pol, sweep, sf, rep), Backend: backend, Profile: profile,
				Machine: machine, Nodes: 1, SF: sf, Query: q, Policy: pol, Sweep: sweep, Rep: rep,
				Seconds: sec * (1 + 0.04*rng.NormFloat64()), Util: util,
			}
			r.Bound = r.Seconds * 0.8
			r.Efficiency = r.Bound / r.Seconds
			rs = append(rs, r)
		}
	}
	for _, q := range []string{"q1", "q3", "q6", "q9", "q12"} {
		for _, pol := range []string{"serial", "double-buffer", "pipeline", "overlap"} {
			s := speed[pol]
			util := map[string]float64{"nvme": min(0.25*s, 0.97), "h2d": 0.08 * s, "d2h": 0, "gpu": 0.05 * s, "host": 0.01, "nic-out": 0.02 * s}
			add("sim", "dgx-a100", "", 100, q, pol, "", 5, base[q]/s, util)
		}
	}
	for _, pol := range []string{"pipeline", "overlap"} {
		for _, c := range []string{"1MiB", "4MiB", "16MiB", "64MiB"} {
			n := map[string]float64{"1MiB": 1.6, "4MiB": 1.1, "16MiB": 1, "64MiB": 1.2}[c]
			add("sim", "dgx-a100", "", 100, "q6", pol, "chunk="+c, 3, base["q6"]/speed[pol]*n, nil)
		}
	}
	for _, q := range []string{"q1", "q3", "q6"} {
		for _, pol := range []string{"serial", "overlap"} {
			e := base[q] / 100 / speed[pol]
			add("engine", "dgx-a100", "vm-2cpu", 0.01, q, pol, "", 3, e, map[string]float64{"nvme": 0.3, "gpu": 0.6, "host": 0.1})
			err := map[string]float64{"q1": 1.04, "q3": 0.7, "q6": 1.3}[q]
			add("sim", "dgx-a100", "", 0.01, q, pol, "", 3, e*err, nil)
		}
	}
	return rs
}

// synthEvents builds a run on 2 SSDs (reads 4 deep), 2 PCIe links, 2
// GPUs and the host: n units of read -> h2d -> kernel per device.
func synthEvents(n int) []traces.Event {
	var ev []traces.Event
	task := int32(0)
	add := func(k event.TaskKind, rk event.ResourceKind, idx int32, s, e int64, meta bool) {
		ev = append(ev, traces.Event{Res: event.Resource{Kind: rk, Index: idx}, Kind: k, Meta: meta,
			Start: s, End: e, Task: task, Device: idx, Unit: -1, Pipeline: 0, Table: -1, Chunk: -1, Bytes: 1 << 20})
		task++
	}
	for d := int32(0); d < 2; d++ {
		add(event.TaskRead, event.ResNVMe, d, 0, 50_000, true)
		for u := range n {
			t0 := int64(u)*200_000 + 50_000
			for c := range 4 {
				add(event.TaskRead, event.ResNVMe, d, t0+int64(c)*10_000, t0+int64(c)*10_000+700_000, false)
			}
			add(event.TaskH2D, event.ResH2D, d, t0+710_000, t0+760_000, false)
			add(event.TaskKernel, event.ResGPU, d, t0+760_000, t0+900_000, false)
		}
	}
	end := int64(n)*200_000 + 1_000_000
	add(event.TaskMerge, event.ResHost, 0, end, end+300_000, false)
	add(event.TaskSync, event.ResHost, 0, end+300_000, end+310_000, false)
	return ev
}

// pngSize decodes path's PNG header.
func pngSize(t *testing.T, path string) (int, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, format, err := image.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if format != "png" {
		t.Fatalf("%s: format %s, want png", path, format)
	}
	return cfg.Width, cfg.Height
}

func wantPixels(l vg.Length) int { return int(float64(l/vg.Inch)*PNGDPI + 0.5) }

// TestEveryFigureKind renders each kind to PNG and checks the files are
// PNGs of the size Save promises.
func TestEveryFigureKind(t *testing.T) {
	dir := t.TempDir()
	rs := synthResults()
	var simPlain, sweep []experiments.Result
	for _, r := range rs {
		if r.Backend == "sim" && r.SF == 100 {
			if r.Sweep == "" {
				simPlain = append(simPlain, r)
			} else {
				sweep = append(sweep, r)
			}
		}
	}
	var scatterRs []experiments.Result
	for _, r := range rs {
		if r.SF == 0.01 {
			scatterRs = append(scatterRs, r)
		}
	}
	ev := synthEvents(30)
	build := map[string]func() (*plotT, error){
		"timeline": func() (*plotT, error) {
			return Timeline(ev, traces.Meta{Backend: "sim", Profile: "dgx-a100"}, "synthetic")
		},
		"utilization": func() (*plotT, error) { return Utilization(simPlain, "") },
		"util-q3":     func() (*plotT, error) { return Utilization(simPlain, "q3") },
		"speedup":     func() (*plotT, error) { return Speedup(simPlain, "") },
		"sweep":       func() (*plotT, error) { return Sweep(sweep, "chunk") },
		"scatter":     func() (*plotT, error) { return Scatter(scatterRs) },
	}
	for name, f := range build {
		p, err := f()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Every figure names where its data came from.
		if !strings.Contains(p.Title.Text, "simulated: dgx-a100") ||
			name == "scatter" && !strings.Contains(p.Title.Text, "measured: vm-2cpu") {
			t.Errorf("%s: title %q does not name the profile/machine", name, p.Title.Text)
		}
		path := filepath.Join(dir, name+".png")
		if err := Save(p, path); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w, h := pngSize(t, path)
		ww, wh := Size(p)
		if w != wantPixels(ww) || h != wantPixels(wh) {
			t.Errorf("%s: %dx%d px, want %dx%d", name, w, h, wantPixels(ww), wantPixels(wh))
		}
		if name == "utilization" && (w != wantPixels(DefaultWidth) || h != wantPixels(DefaultHeight)) {
			t.Errorf("utilization: %dx%d px, want the default size", w, h)
		}
		if name == "timeline" && ww <= DefaultWidth {
			t.Errorf("timeline: width %v, want wider than %v", ww, DefaultWidth)
		}
	}
	// SVG and PDF, and an unknown extension.
	p, err := Speedup(simPlain, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{"svg", "pdf"} {
		path := filepath.Join(dir, "speedup."+ext)
		if err := Save(p, path); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		magic := map[string]string{"svg": "<?xml", "pdf": "%PDF"}[ext]
		if !bytes.HasPrefix(b, []byte(magic)) {
			t.Errorf("%s: does not start with %q", path, magic)
		}
	}
	if err := Save(p, filepath.Join(dir, "x.gif")); err == nil {
		t.Error("Save .gif: no error")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestDrawAllPicks checks DrawAll draws exactly the figures the results
// support, in every format asked for.
func TestDrawAllPicks(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "run.csv")
	f, err := os.Create(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := traces.WriteCSV(f, synthEvents(5)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out := filepath.Join(dir, "figs")
	var log bytes.Buffer
	files, err := DrawAll(synthResults(), []string{tr}, out, []string{"png", "svg"}, &log)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"speedup-engine-vm-2cpu-1n-sf0.01", "utilization-engine-vm-2cpu-1n-sf0.01",
		"speedup-sim-dgx-a100-1n-sf0.01",
		"speedup-sim-dgx-a100-1n-sf100", "utilization-sim-dgx-a100-1n-sf100", "sweep-chunk-sim-dgx-a100-1n-sf100",
		"scatter-sim-dgx-a100-1n-vs-engine-vm-2cpu-1n",
		"timeline-run",
	}
	var wantFiles []string
	for _, w := range want {
		for _, ext := range []string{"png", "svg"} {
			wantFiles = append(wantFiles, filepath.Join(out, w+"."+ext))
		}
	}
	sort.Strings(wantFiles)
	got := slices.Sorted(slices.Values(files))
	if !slices.Equal(got, wantFiles) {
		t.Errorf("files:\n got %v\nwant %v", got, wantFiles)
	}
	for _, f := range got {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
		if strings.HasSuffix(f, ".png") {
			pngSize(t, f)
		}
	}
	// The SF 0.01 sim results record no utilization: the skip says so.
	if !strings.Contains(log.String(), "skipped utilization (simulated: dgx-a100, 1 node, SF 0.01)") {
		t.Errorf("log does not explain the skipped utilization figure:\n%s", log.String())
	}
}

// TestDrawAllDegenerate: no data, one policy, bad input.
func TestDrawAllDegenerate(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	if _, err := DrawAll(nil, nil, dir, nil, &log); err == nil || !strings.Contains(err.Error(), "nothing to draw") {
		t.Errorf("empty: err %v", err)
	}
	var one []experiments.Result
	for _, r := range synthResults() {
		if r.Policy == "overlap" && r.Sweep == "" && r.Backend == "sim" {
			r.Util = nil
			one = append(one, r)
		}
	}
	_, err := DrawAll(one, nil, dir, []string{"png"}, &log)
	if err == nil || !strings.Contains(err.Error(), "only one policy") {
		t.Errorf("one policy: err %v", err)
	}
	if _, err := Speedup(one, ""); err == nil {
		t.Error("Speedup of one policy: no error")
	}
	if _, err := Utilization(one, ""); err == nil {
		t.Error("Utilization without util: no error")
	}
	if _, err := Sweep(one, "chunk"); err == nil {
		t.Error("Sweep without sweep: no error")
	}
	if _, err := Scatter(one); err == nil {
		t.Error("Scatter of sim only: no error")
	}
	if _, err := Timeline(nil, traces.Meta{}, "x"); err == nil {
		t.Error("Timeline of no events: no error")
	}
	if _, err := Speedup(synthResults(), ""); err == nil || !strings.Contains(err.Error(), "several") {
		t.Errorf("Speedup of mixed origins: err %v", err)
	}
	if _, err := DrawAll(one, nil, dir, []string{"gif"}, &log); err == nil {
		t.Error("format gif: no error")
	}
	// A bad trace file fails its figure only.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{"), 0o644)
	files, err := DrawAll(synthResults(), []string{bad}, filepath.Join(dir, "f"), []string{"png"}, &log)
	if err == nil || !strings.Contains(err.Error(), "timeline-bad") || len(files) == 0 {
		t.Errorf("bad trace: files %d err %v", len(files), err)
	}
}

// TestSpeedupValues compares the bars with medians computed by hand.
func TestSpeedupValues(t *testing.T) {
	var rs []experiments.Result
	for _, r := range synthResults() {
		if r.Backend == "sim" && r.SF == 100 && r.Sweep == "" {
			rs = append(rs, r)
		}
	}
	tab, err := computeSpeedup(rs, "")
	if err != nil {
		t.Fatal(err)
	}
	if tab.base != "serial" || !slices.Equal(tab.variants, []string{"double-buffer", "pipeline", "overlap"}) {
		t.Fatalf("base %q variants %v", tab.base, tab.variants)
	}
	if !slices.Equal(tab.queries, []string{"q1", "q3", "q6", "q9", "q12"}) {
		t.Fatalf("queries %v", tab.queries)
	}
	for qi, q := range tab.queries {
		for vi, v := range tab.variants {
			var a, b []float64
			for _, r := range rs {
				if r.Query == q && r.Policy == "serial" {
					a = append(a, r.Seconds)
				}
				if r.Query == q && r.Policy == v {
					b = append(b, r.Seconds)
				}
			}
			c := tab.cells[qi][vi]
			// The bar is the ratio of medians, inside its interval, and
			// the interval is narrow (the noise is 4%).
			want := median(a) / median(b)
			if !c.ok || math.Abs(c.med-want) > 1e-12 || c.lo > c.med || c.hi < c.med || c.hi-c.lo > 0.3*want {
				t.Errorf("%s %s: cell %+v, ratio of medians %.3f", q, v, c, want)
			}
		}
	}
	// Geomean of the bars.
	for vi := range tab.variants {
		var ms []float64
		for qi := range tab.queries {
			ms = append(ms, tab.cells[qi][vi].med)
		}
		if g, c := stats.GeoMean(ms), tab.geo[vi]; math.Abs(g-c.med) > 1e-12 || c.lo > c.med || c.hi < c.med {
			t.Errorf("geomean %+v, want %v", c, g)
		}
	}
}

// TestTimelineLayout checks lanes against brute force: with lanes enough,
// no two slices of a lane overlap and every task's interval is covered by
// a slice of its kind on its resource; merging keeps coverage and caps
// the rectangle count.
func TestTimelineLayout(t *testing.T) {
	ev := synthEvents(40)
	lanes, gap := timelineLayout(ev, 1000, 1<<30)
	if gap != -1 {
		t.Fatalf("gap %d with no rectangle limit", gap)
	}
	peak := map[event.Resource]int{}
	for _, l := range lanes {
		peak[l.res] = max(peak[l.res], l.lane+1)
		for i := 1; i < len(l.slices); i++ {
			if l.slices[i].start < l.slices[i-1].end {
				t.Fatalf("%v lane %d: slices overlap: %+v %+v", l.res, l.lane, l.slices[i-1], l.slices[i])
			}
		}
	}
	// Brute-force peak concurrency per resource.
	for res, got := range peak {
		want := 0
		for _, a := range ev {
			if a.Res != res {
				continue
			}
			n := 0
			for _, b := range ev {
				if b.Res == res && b.Start <= a.Start && a.Start < b.End {
					n++
				}
			}
			want = max(want, n)
		}
		if got != want {
			t.Errorf("%v: %d lanes, peak concurrency %d", res, got, want)
		}
	}
	covered := func(lanes []timelineLane, e traces.Event) bool {
		for _, l := range lanes {
			if l.res != e.Res {
				continue
			}
			for _, s := range l.slices {
				if s.kind == (sliceKind{e.Kind, e.Meta}) && s.start <= e.Start && e.End <= s.end {
					return true
				}
			}
		}
		return false
	}
	for _, e := range ev {
		if !covered(lanes, e) {
			t.Fatalf("task %+v not covered", e)
		}
	}
	// Capped: 2 lanes per resource at most, 20 rectangles at most.
	lanes, gap = timelineLayout(ev, 8, 20)
	n := 0
	for _, l := range lanes {
		if l.lanes > 2 || l.lane >= 2 {
			t.Errorf("%v: lane %d of %d with 8 rows for 4 resources", l.res, l.lane, l.lanes)
		}
		n += len(l.slices)
	}
	if gap <= 0 || n > 20 {
		t.Errorf("merged to %d rectangles with gap %d, want <= 20", n, gap)
	}
	for _, e := range ev {
		if !covered(lanes, e) {
			t.Fatalf("task %+v not covered after merging", e)
		}
	}
	if k := chooseLaneCap([]int{4, 1, 1, 2}, 7); k != 3 {
		t.Errorf("chooseLaneCap = %d, want 3 (3+1+1+2 = 7 <= 7 < 4+1+1+2)", k)
	}
	if k := chooseLaneCap([]int{4, 1, 1, 2}, 2); k != 1 {
		t.Errorf("chooseLaneCap over budget = %d, want 1", k)
	}
}

// TestSweepAxis checks the parse of sweep values.
func TestSweepAxis(t *testing.T) {
	a := parseSweepAxis([]string{"16MiB", "1MiB", "4MiB"})
	if !a.bytes || !slices.Equal(a.values, []string{"1MiB", "4MiB", "16MiB"}) || a.x["4MiB"] != 4<<20 {
		t.Errorf("sizes: %+v", a)
	}
	a = parseSweepAxis([]string{"8", "2", "4"})
	if !a.number || a.bytes || a.values[0] != "2" {
		t.Errorf("numbers: %+v", a)
	}
	a = parseSweepAxis([]string{"on", "off"})
	if a.number || a.x["off"] != 1 {
		t.Errorf("categories: %+v", a)
	}
}

// TestWrapTitle: lines fit, words stay in order, "; " breaks first.
func TestWrapTitle(t *testing.T) {
	p := newPlot("", "")
	sty := p.Title.TextStyle
	s := "Speedup over serial\nmeasured: vm, 2 CPUs, SF 0.01; bars: median over 3 repetitions, whiskers: 95% bootstrap CI (rough: fewer than 5 repetitions)"
	width := sty.Width("bars: median over 3 repetitions, whiskers:")
	got := wrapTitle(sty, s, width)
	lines := strings.Split(got, "\n")
	if lines[0] != "Speedup over serial" || lines[1] != "measured: vm, 2 CPUs, SF 0.01" {
		t.Errorf("first lines %q", lines[:2])
	}
	for _, l := range lines {
		if sty.Width(l) > width {
			t.Errorf("line %q wider than %v", l, width)
		}
	}
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, ";", "")), " ") }
	if norm(got) != norm(s) {
		t.Errorf("words changed:\n%s\n%s", norm(got), norm(s))
	}
	if got := wrapTitle(sty, "short", width); got != "short" {
		t.Errorf("short: %q", got)
	}
}
