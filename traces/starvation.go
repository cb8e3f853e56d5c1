package traces

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"gostachio/traces/event"
)

// Stage is a step of a scan unit's pass through its device: read → h2d →
// kernel → out (see the scheduler's package doc).
type Stage uint8

const (
	StageRead   Stage = iota // read tasks of the unit (metadata reads included)
	StageH2D                 // its host-to-device copy
	StageKernel              // its kernel
	StageOut                 // its d2h or sends
	numStages
)

var stageNames = [...]string{"read", "h2d", "kernel", "out"}

func (s Stage) String() string {
	if int(s) < len(stageNames) {
		return stageNames[s]
	}
	return fmt.Sprintf("Stage(%d)", uint8(s))
}

// MarshalText writes the stage's name.
func (s Stage) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a stage name.
func (s *Stage) UnmarshalText(b []byte) error {
	for i, n := range stageNames {
		if n == string(b) {
			*s = Stage(i)
			return nil
		}
	}
	return fmt.Errorf("traces: unknown stage %q", b)
}

// stageOf is the unit stage a task kind belongs to (false: none, e.g.
// sync, merge).
func stageOf(k event.TaskKind) (Stage, bool) {
	switch k {
	case event.TaskRead:
		return StageRead, true
	case event.TaskH2D:
		return StageH2D, true
	case event.TaskKernel:
		return StageKernel, true
	case event.TaskD2H, event.TaskSend:
		return StageOut, true
	}
	return 0, false
}

// QueueSample is a point of a queue-occupancy time series: from T on (until
// the next sample) Units units were queued between producer and consumer.
type QueueSample struct {
	T     int64 `json:"t_ns"`
	Units int32 `json:"units"`
}

// StageStarvation is the starvation report of one producer → consumer
// stage pair on one device (Producer = Consumer-1).
//
// A unit is a scan unit's tasks on its device (events with Unit >= 0 and
// Device >= 0, keyed by run, node, pipeline, unit). For a unit u and stage
// s, start_s(u) is the earliest Start and end_s(u) the latest End of its
// tasks of stage s. Only units with tasks of both stages take part (units
// of an aggregate skip out; inputs pipelines skip read and h2d).
//
//   - ready(t), the queue occupancy, is the number of units with
//     end_P(u) <= t < start_C(u): the producer has finished with them and
//     the consumer has not started them.
//   - busy(t) holds when any task of the consumer's kinds runs on the
//     device at t (pipeline-wide tasks too, e.g. a finalize kernel: the
//     consumer was not idle then).
//   - The window is the union, over the pipelines with participating units
//     on the device, of [min start_C(u), max end_C(u)]: from the consumer's
//     first task to its last, per pipeline; the time between pipelines is
//     left out (the consumer had nothing left to wait for).
//
// Then Idle = |{t in window: not busy(t)}|, Starved = |{t in window: not
// busy(t) and ready(t) = 0}| and Blocked = Idle - Starved. Inside a window
// an idle consumer always has a unit still to start, so ready = 0 means
// the unit it ran next was still in its producer stage: the consumer was
// waiting on data (the "consumer idle"). Blocked time had data
// ready but the consumer did not start it (memory, window or depth limits,
// scheduling latency, syncs).
type StageStarvation struct {
	Run      string `json:"run"`
	Node     int32  `json:"node"`
	Device   int32  `json:"device"`
	Producer Stage  `json:"producer"`
	Consumer Stage  `json:"consumer"`
	// Units is the number of units with both stages on the device.
	Units int `json:"units"`
	// Window, Busy, Idle, Starved, Blocked: see the type's doc (ns);
	// Busy + Idle = Window and Starved + Blocked = Idle.
	Window  int64 `json:"window_ns"`
	Busy    int64 `json:"busy_ns"`
	Idle    int64 `json:"idle_ns"`
	Starved int64 `json:"starved_ns"`
	Blocked int64 `json:"blocked_ns"`
	// MaxQueue is the largest ready(t) at any time (units may queue
	// before the consumer's first task); MeanQueue is ready(t)'s time
	// average over the window.
	MaxQueue  int32   `json:"max_queue"`
	MeanQueue float64 `json:"mean_queue"`
	// Queue is ready(t) as a step function: a sample at every time it
	// changes (the event boundaries where a producer stage ends or a
	// consumer stage starts), in time order; 0 before the first sample.
	Queue []QueueSample `json:"queue,omitempty"`
}

// StarvedFrac is Starved / Window (0 for an empty window).
func (s *StageStarvation) StarvedFrac() float64 {
	if s.Window <= 0 {
		return 0
	}
	return float64(s.Starved) / float64(s.Window)
}

// Starvation computes the starvation report: one StageStarvation per run,
// node, device and stage pair (read→h2d, h2d→kernel, kernel→out) that has
// units with both stages, sorted by run (first appearance), node, device,
// producer stage.
func Starvation(events []Event) []StageStarvation {
	type unitStages struct {
		dev        devKey
		pipeline   int32
		has        [numStages]bool
		start, end [numStages]int64
	}
	units := map[unitKey]*unitStages{}
	var order []unitKey
	// Consumer busy intervals per device and stage (any Unit).
	busy := map[devKey]*[numStages][]interval{}
	for i := range events {
		e := &events[i]
		st, ok := stageOf(e.Kind)
		if !ok || e.Device < 0 {
			continue
		}
		dk := devKey{e.Run, e.Node, e.Device}
		b := busy[dk]
		if b == nil {
			b = &[numStages][]interval{}
			busy[dk] = b
		}
		b[st] = append(b[st], interval{e.Start, e.End})
		if e.Unit < 0 {
			continue
		}
		uk := unitKey{e.Run, e.Node, e.Pipeline, e.Unit}
		u := units[uk]
		if u == nil {
			u = &unitStages{dev: dk, pipeline: e.Pipeline}
			units[uk] = u
			order = append(order, uk)
		}
		if !u.has[st] {
			u.has[st], u.start[st], u.end[st] = true, e.Start, e.End
		} else {
			u.start[st] = min(u.start[st], e.Start)
			u.end[st] = max(u.end[st], e.End)
		}
	}
	runRank := map[string]int{}
	for i, r := range Runs(events) {
		runRank[r] = i
	}
	byDev := map[devKey][]*unitStages{}
	var devs []devKey
	for _, uk := range order {
		u := units[uk]
		if byDev[u.dev] == nil {
			devs = append(devs, u.dev)
		}
		byDev[u.dev] = append(byDev[u.dev], u)
	}
	slices.SortFunc(devs, func(a, b devKey) int {
		if c := cmp.Compare(runRank[a.run], runRank[b.run]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.node, b.node); c != 0 {
			return c
		}
		return cmp.Compare(a.device, b.device)
	})
	var out []StageStarvation
	for _, dk := range devs {
		for p := StageRead; p < StageOut; p++ {
			c := p + 1
			var ready []interval
			windows := map[int32]interval{}
			n := 0
			for _, u := range byDev[dk] {
				if !u.has[p] || !u.has[c] {
					continue
				}
				n++
				ready = append(ready, interval{u.end[p], u.start[c]})
				w, ok := windows[u.pipeline]
				if !ok {
					w = interval{u.start[c], u.end[c]}
				}
				windows[u.pipeline] = interval{min(w.s, u.start[c]), max(w.e, u.end[c])}
			}
			if n == 0 {
				continue
			}
			s := sweepStarvation(windows, busy[dk][c], ready)
			s.Run, s.Node, s.Device, s.Producer, s.Consumer, s.Units = dk.run, dk.node, dk.device, p, c, n
			out = append(out, s)
		}
	}
	return out
}

// sweepStarvation measures the window, idle and starved time and the queue
// series by sweeping the boundaries of the three interval sets.
func sweepStarvation(windows map[int32]interval, busy, ready []interval) StageStarvation {
	type pt struct {
		t             int64
		win, bus, rdy int32
	}
	var pts []pt
	for _, w := range windows {
		if w.e > w.s {
			pts = append(pts, pt{t: w.s, win: 1}, pt{t: w.e, win: -1})
		}
	}
	for _, b := range busy {
		if b.e > b.s {
			pts = append(pts, pt{t: b.s, bus: 1}, pt{t: b.e, bus: -1})
		}
	}
	for _, r := range ready {
		if r.e > r.s {
			pts = append(pts, pt{t: r.s, rdy: 1}, pt{t: r.e, rdy: -1})
		}
	}
	slices.SortFunc(pts, func(a, b pt) int { return cmp.Compare(a.t, b.t) })
	var s StageStarvation
	var win, bus, rdy int32
	var queueArea float64
	for i := 0; i < len(pts); {
		t := pts[i].t
		if i > 0 {
			dt := t - pts[i-1].t
			if win > 0 && dt > 0 {
				s.Window += dt
				queueArea += float64(rdy) * float64(dt)
				if bus == 0 {
					s.Idle += dt
					if rdy == 0 {
						s.Starved += dt
					}
				}
			}
		}
		before := rdy
		for ; i < len(pts) && pts[i].t == t; i++ {
			win += pts[i].win
			bus += pts[i].bus
			rdy += pts[i].rdy
		}
		if rdy != before {
			s.Queue = append(s.Queue, QueueSample{T: t, Units: rdy})
			s.MaxQueue = max(s.MaxQueue, rdy)
		}
	}
	s.Busy = s.Window - s.Idle
	s.Blocked = s.Idle - s.Starved
	if s.Window > 0 {
		s.MeanQueue = queueArea / float64(s.Window)
	}
	return s
}

// starvedThreshold is the starved fraction of a window from which a
// consumer counts as starved in the verdicts.
const starvedThreshold = 0.10

// WriteStarvation prints the report: per device, a verdict and one line
// per stage pair. The verdict is about the device's compute: whether its
// kernel stage was starved (Starved at least 10% of its window) and by
// which stage, following the chain of starved consumers upstream ("kernel
// starved by read (through h2d) 62.0% of its span": the kernel waited on
// copies that waited on reads). Devices without a kernel pair get the
// verdict of their most starved consumer.
func WriteStarvation(w io.Writer, report []StageStarvation) error {
	ew := &errWriter{w: w}
	for i := 0; i < len(report); {
		j := i
		for j < len(report) && report[j].Run == report[i].Run && report[j].Node == report[i].Node && report[j].Device == report[i].Device {
			j++
		}
		dev := report[i:j]
		head := fmt.Sprintf("node %d device %d", dev[0].Node, dev[0].Device)
		if dev[0].Run != "" {
			head = fmt.Sprintf("run %s %s", dev[0].Run, head)
		}
		ew.printf("%s: %s\n", head, Verdict(dev))
		for k := range dev {
			s := &dev[k]
			ew.printf("  %-6s <- %-6s window %-12s starved %5.1f%% (%s)  blocked %5.1f%% (%s)  queue mean %.2f max %d  units %d\n",
				s.Consumer, s.Producer, fmtNs(s.Window), pct(s.Starved, s.Window), fmtNs(s.Starved),
				pct(s.Blocked, s.Window), fmtNs(s.Blocked), s.MeanQueue, s.MaxQueue, s.Units)
		}
		i = j
	}
	return ew.err
}

// Verdict is the verdict WriteStarvation prints for one device's pairs
// (the report's entries of one run, node and device).
func Verdict(dev []StageStarvation) string {
	by := map[Stage]*StageStarvation{} // by consumer
	var focus *StageStarvation
	for k := range dev {
		s := &dev[k]
		by[s.Consumer] = s
		if focus == nil || s.StarvedFrac() > focus.StarvedFrac() {
			focus = s
		}
	}
	if focus == nil {
		return "no stage pairs"
	}
	if k := by[StageKernel]; k != nil {
		focus = k
	}
	if focus.StarvedFrac() < starvedThreshold {
		return fmt.Sprintf("%s not starved (waited on %s %.1f%% of its span)",
			focus.Consumer, focus.Producer, 100*focus.StarvedFrac())
	}
	root := focus.Producer
	var via []string
	for {
		up := by[root]
		if up == nil || up.StarvedFrac() < starvedThreshold {
			break
		}
		via = append(via, root.String())
		root = up.Producer
	}
	msg := fmt.Sprintf("%s starved by %s", focus.Consumer, root)
	if len(via) > 0 {
		msg += " (through"
		for k := len(via) - 1; k >= 0; k-- {
			msg += " " + via[k]
		}
		msg += ")"
	}
	return fmt.Sprintf("%s %.1f%% of its span (%s of %s)", msg, 100*focus.StarvedFrac(), fmtNs(focus.Starved), fmtNs(focus.Window))
}

func pct(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// fmtNs formats a duration in ns ("1.5ms").
func fmtNs(ns int64) string { return event.Time(ns).String() }

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

func (e *errWriter) write(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}
