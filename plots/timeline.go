package plots

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"gostachio/traces"
	"gostachio/traces/event"
)

// Limits of the timeline: the most lanes drawn (resources with a deeper
// peak concurrency than the lanes allow share them, see Timeline) and the
// most rectangles (closer slices are merged beyond it).
const (
	maxTimelineLanes = 96
	maxTimelineRects = 20000
)

// taskColors are the colours of the task kinds (metadata reads get
// metaReadColor).
var taskColors = map[event.TaskKind]color.Color{
	event.TaskRead:   rgb(0x0072B2),
	event.TaskH2D:    rgb(0xE69F00),
	event.TaskD2H:    rgb(0x8C6D1F),
	event.TaskKernel: rgb(0x009E73),
	event.TaskSend:   rgb(0xCC79A7),
	event.TaskMerge:  rgb(0xD55E00),
	event.TaskSync:   rgb(0x000000),
}

var metaReadColor = rgb(0x56B4E9)

// sliceKind is what colours a slice: the task kind, and metadata reads
// apart from data reads.
type sliceKind struct {
	kind event.TaskKind
	meta bool
}

func (k sliceKind) color() color.Color {
	if k.kind == event.TaskRead && k.meta {
		return metaReadColor
	}
	if c, ok := taskColors[k.kind]; ok {
		return c
	}
	return gray
}

func (k sliceKind) String() string {
	if k.kind == event.TaskRead && k.meta {
		return "read (metadata)"
	}
	return k.kind.String()
}

func compareSliceKind(a, b sliceKind) int {
	return cmp.Or(cmp.Compare(a.kind, b.kind), cmpBool(a.meta, b.meta))
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// timelineLane is one row of the chart: a lane of one resource of one run.
type timelineLane struct {
	run    string
	res    event.Resource
	lane   int // lane within the resource
	lanes  int // lanes the resource got
	peak   int // the resource's peak concurrency
	slices []timeSlice
}

// timeSlice is a drawn rectangle: one task, or several merged ones.
type timeSlice struct {
	start, end int64
	kind       sliceKind
}

// timelineLayout places events into lanes: per run and resource (runs in
// order of appearance, resources by kind, node and index) up to lanes each
// (see chooseLaneCap), then merges each lane's slices of one kind that are
// at most gap apart, doubling gap from span/4000 until at most maxRects
// slices remain. It returns the lanes and the gap used (-1: nothing
// merged; 0: touching or overlapping slices merged).
func timelineLayout(events []traces.Event, maxLanes, maxRects int) ([]timelineLane, int64) {
	type key struct {
		run int
		res event.Resource
	}
	runIdx := map[string]int{}
	for _, r := range traces.Runs(events) {
		runIdx[r] = len(runIdx)
	}
	runNames := traces.Runs(events)
	groups := map[key][]int{}
	for i := range events {
		k := key{runIdx[events[i].Run], events[i].Res}
		groups[k] = append(groups[k], i)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.run, b.run), cmp.Compare(a.res.Kind, b.res.Kind),
			cmp.Compare(a.res.Node, b.res.Node), cmp.Compare(a.res.Index, b.res.Index))
	})
	byStart := func(idx []int) {
		slices.SortFunc(idx, func(a, b int) int {
			return cmp.Or(cmp.Compare(events[a].Start, events[b].Start), cmp.Compare(events[a].End, events[b].End), cmp.Compare(a, b))
		})
	}
	peaks := make([]int, len(keys))
	for i, k := range keys {
		byStart(groups[k])
		peaks[i] = len(assignLanes(events, groups[k], math.MaxInt))
	}
	capLanes := chooseLaneCap(peaks, maxLanes)

	var lanes []timelineLane
	span := int64(0)
	for i, k := range keys {
		idx := groups[k]
		n := min(peaks[i], capLanes)
		first := len(lanes)
		for l := range n {
			lanes = append(lanes, timelineLane{run: runNames[k.run], res: k.res, lane: l, lanes: n, peak: peaks[i]})
		}
		for j, l := range laneOf(events, idx, n) {
			e := &events[idx[j]]
			s := timeSlice{start: e.Start, end: max(e.End, e.Start), kind: sliceKind{e.Kind, e.Meta}}
			lanes[first+l].slices = append(lanes[first+l].slices, s)
			span = max(span, s.end)
		}
	}

	// Merge only when there are too many slices: per lane, slices are in
	// start order; a slice joins the previous one if it is of the same
	// kind and starts within gap of its end (gap 0: touching or
	// overlapping), gap doubling from span/4000 until few enough remain.
	count := func(gap int64) int {
		n := 0
		for i := range lanes {
			n += len(mergeSlices(lanes[i].slices, gap))
		}
		return n
	}
	total := 0
	for i := range lanes {
		total += len(lanes[i].slices)
	}
	gap := int64(-1)
	if total > maxRects {
		gap = 0
		if count(0) > maxRects {
			gap = max(span/4000, 1)
			for count(gap) > maxRects && gap < span {
				gap *= 2
			}
		}
		for i := range lanes {
			lanes[i].slices = mergeSlices(lanes[i].slices, gap)
		}
	}
	return lanes, gap
}

// assignLanes places the events idx (sorted by start) on lanes greedily:
// each on the lowest-numbered lane whose last task has ended by its start;
// with all maxLanes lanes busy, on the lane that frees first (the slices
// then overlap in the drawing). It returns each lane's end.
func assignLanes(events []traces.Event, idx []int, maxLanes int) []int64 {
	var ends []int64
	for _, i := range idx {
		placeOnLane(&ends, events[i].Start, max(events[i].End, events[i].Start), maxLanes)
	}
	return ends
}

// laneOf returns the lane assignLanes gives each of idx.
func laneOf(events []traces.Event, idx []int, maxLanes int) []int {
	var ends []int64
	out := make([]int, len(idx))
	for j, i := range idx {
		out[j] = placeOnLane(&ends, events[i].Start, max(events[i].End, events[i].Start), maxLanes)
	}
	return out
}

func placeOnLane(ends *[]int64, start, end int64, maxLanes int) int {
	e := *ends
	l := -1
	for j, t := range e {
		if t <= start {
			l = j
			break
		}
	}
	if l < 0 && len(e) < maxLanes {
		l = len(e)
		e = append(e, 0)
	}
	if l < 0 {
		l = 0
		for j := range e {
			if e[j] < e[l] {
				l = j
			}
		}
	}
	e[l] = max(e[l], end)
	*ends = e
	return l
}

// chooseLaneCap returns the largest per-resource lane cap K such that the
// resources, each drawn with min(peak, K) lanes, fit in maxLanes (at least
// 1: every resource gets a lane).
func chooseLaneCap(peaks []int, maxLanes int) int {
	best := 1
	hi := 0
	for _, p := range peaks {
		hi = max(hi, p)
	}
	for k := 2; k <= hi; k++ {
		total := 0
		for _, p := range peaks {
			total += min(p, k)
		}
		if total > maxLanes {
			break
		}
		best = k
	}
	return best
}

// mergeSlices merges consecutive slices (in start order) of one kind
// where the next starts at most gap after the current one ends (gap 0:
// touching or overlapping slices). It returns a new slice.
func mergeSlices(in []timeSlice, gap int64) []timeSlice {
	var out []timeSlice
	for _, s := range in {
		if n := len(out); n > 0 && out[n-1].kind == s.kind && s.start <= out[n-1].end+gap {
			out[n-1].end = max(out[n-1].end, s.end)
			continue
		}
		out = append(out, s)
	}
	return out
}

// Timeline draws events as a Gantt chart: one row per resource (and per
// concurrent lane within it, as many as its peak concurrency, within a
// budget of maxTimelineLanes rows; resources deeper than the rows allow
// share theirs, and their label says the peak), task slices coloured by
// kind, time in ms (s beyond 10 s). Several runs get rows of their own,
// labelled with the run. Beyond maxTimelineRects slices, nearby slices of
// one kind in one lane are merged (the caption says by how much). title
// (meta.Title if empty) is the first title line; the second names where
// the trace came from (meta). Save draws it wider than the other figures
// and as tall as its rows need. An empty trace is an error.
func Timeline(events []traces.Event, meta traces.Meta, title string) (*plot.Plot, error) {
	if len(events) == 0 {
		return nil, fmt.Errorf("plots: timeline %q: the trace has no events", cmp.Or(title, meta.Title))
	}
	lanes, gap := timelineLayout(events, maxTimelineLanes, maxTimelineRects)
	span := traces.Makespan(events)
	scale, unit := 1e-6, "ms"
	if span >= 10e9 {
		scale, unit = 1e-9, "s"
	}

	caption := traceOrigin(meta)
	caption += fmt.Sprintf("; makespan %s, %d tasks", fmtNs(span), len(events))
	var notes []string
	capped := false
	for i := range lanes {
		capped = capped || lanes[i].peak > lanes[i].lanes
	}
	if capped {
		notes = append(notes, "resources with more tasks at once than rows share rows (peak in the label)")
	}
	switch {
	case gap == 0:
		notes = append(notes, "touching slices of one kind merged")
	case gap > 0:
		notes = append(notes, fmt.Sprintf("slices of one kind less than %s apart merged", fmtNs(gap)))
	}
	if len(notes) > 0 {
		caption += "\n" + strings.Join(notes, "; ")
	}
	p := newPlot(cmp.Or(title, meta.Title, "timeline"), caption)
	p.X.Label.Text = "time since start (" + unit + ")"
	p.Y.Label.Text = "resource[node.index]"

	// Rows top to bottom in lane order; row i is centred on y = n-1-i.
	n := len(lanes)
	b := &bars{minWidth: vg.Points(1), gap: vg.Points(0.3)}
	band := &bars{}
	kinds := map[sliceKind]bool{}
	var ticks plot.ConstantTicks
	multiRun := len(traces.Runs(events)) > 1
	var runSeps []plot.Plotter
	for i := 0; i < n; {
		l0 := &lanes[i]
		top := float64(n - 1 - i)
		if i > 0 && lanes[i-1].run != l0.run {
			runSeps = append(runSeps, hline{top + 0.5, draw.LineStyle{Color: rgb(0x333333), Width: vg.Points(1)}})
		}
		bottom := top - float64(l0.lanes-1)
		if len(ticks)%2 == 1 {
			band.rects = append(band.rects, rect{-math.MaxFloat64 / 4, math.MaxFloat64 / 4, bottom - 0.5, top + 0.5, color.Gray{Y: 0xf0}})
		}
		label := l0.res.String()
		if multiRun {
			label = cmp.Or(l0.run, "(no run)") + " " + label
		}
		if l0.peak > l0.lanes {
			label += fmt.Sprintf(" (peak %d)", l0.peak)
		}
		ticks = append(ticks, plot.Tick{Value: (top + bottom) / 2, Label: label})
		for j := range l0.lanes {
			y := top - float64(j)
			for _, s := range lanes[i+j].slices {
				kinds[s.kind] = true
				b.rects = append(b.rects, rect{float64(s.start) * scale, float64(s.end) * scale, y - 0.4, y + 0.4, s.kind.color()})
			}
		}
		i += l0.lanes
	}
	// The bands extend past the axes' range: clip them to it.
	xmax := float64(span) * scale
	for i := range band.rects {
		band.rects[i].x0, band.rects[i].x1 = 0, xmax
	}
	p.Add(band, b)
	p.Add(runSeps...)
	p.X.Min, p.X.Max = 0, xmax
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	p.Y.Tick.Marker = ticks
	p.Y.Tick.Length = 0
	p.Y.Padding, p.X.Padding = 0, 0

	ks := make([]sliceKind, 0, len(kinds))
	for k := range kinds {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, compareSliceKind)
	for _, k := range ks {
		p.Legend.Add(k.String(), swatch{k.color()})
	}

	// Row height: 0.3 cm, less for many rows (the figure stays under
	// 36 cm); tick labels shrink with it so that they never overlap.
	rowH := 0.3 * vg.Centimeter
	if float64(n)*0.3 > 32 {
		rowH = max(vg.Length(32.0/float64(n))*vg.Centimeter, 0.12*vg.Centimeter)
	}
	minRows := n
	for i := 0; i < n; i += lanes[i].lanes {
		minRows = min(minRows, lanes[i].lanes)
	}
	fs := min(8, float64(rowH)*float64(minRows)*0.85) // vg.Length is in points
	p.Y.Tick.Label.Font.Size = vg.Points(max(fs, 4))
	h := vg.Length(n)*rowH + 3.5*vg.Centimeter
	setSize(p, 24*vg.Centimeter, max(h, 8*vg.Centimeter))
	return p, nil
}

// traceOrigin names where a trace came from.
func traceOrigin(m traces.Meta) string {
	switch {
	case m.Backend == "sim":
		s := "simulated: " + orUnknown(m.Profile, "unknown profile")
		return s
	case m.Backend == "engine":
		s := "measured: " + orUnknown(m.Machine, "unknown machine")
		if m.Profile != "" {
			s += " (compared with profile " + m.Profile + ")"
		}
		return s
	case m.Machine != "":
		return "measured: " + m.Machine
	case m.Profile != "":
		return "profile " + m.Profile
	}
	return "origin not recorded in the trace"
}
