package sim

import (
	"fmt"
	"io"
	"sort"
	"strconv"

	"gostachio/scheduler"
)

// ChromeTrace collects scheduler events and writes them as Chrome /
// Perfetto JSON ({"traceEvents":[...]}): one process per node, one thread
// per resource lane. Concurrent tasks of one resource go on separate lanes
// (tids) so slices on a track never overlap. It is the simulator's minimal
// writer until package traces provides the shared one.
type ChromeTrace struct {
	events []scheduler.Event
}

var _ scheduler.TraceSink = (*ChromeTrace)(nil)

// Record implements scheduler.TraceSink.
func (t *ChromeTrace) Record(e scheduler.Event) { t.events = append(t.events, e) }

// Events returns the recorded events in completion order (shared; do not
// modify).
func (t *ChromeTrace) Events() []scheduler.Event { return t.events }

type laneKey struct {
	kind  scheduler.ResourceKind
	node  int32
	index int32
}

// WriteTo writes the trace JSON to w; title names the trace's metadata.
func (t *ChromeTrace) WriteTo(w io.Writer, title string) error {
	// Lanes: per resource, the first lane whose last slice ended by the
	// event's start. Events arrive in nondecreasing End order, so a lane's
	// last End is its largest and slices on a lane never overlap.
	ends := map[laneKey][]int64{}
	type placed struct {
		tid int
		ev  *scheduler.Event
	}
	tids := map[[4]int32]int{} // (kind, node, index, lane) -> tid
	var meta [][4]int32
	out := make([]placed, len(t.events))
	for i := range t.events {
		e := &t.events[i]
		k := laneKey{e.Res.Kind, e.Res.Node, e.Res.Index}
		lanes := ends[k]
		lane := -1
		for j, end := range lanes {
			if end <= int64(e.Start) {
				lane = j
				break
			}
		}
		if lane < 0 {
			lane = len(lanes)
			lanes = append(lanes, 0)
		}
		lanes[lane] = int64(e.End)
		ends[k] = lanes
		key := [4]int32{int32(e.Res.Kind), e.Res.Node, e.Res.Index, int32(lane)}
		tid, ok := tids[key]
		if !ok {
			tid = len(tids) + 1
			tids[key] = tid
			meta = append(meta, key)
		}
		out[i] = placed{tid, e}
	}
	bw := &errWriter{w: w}
	bw.str(`{"displayTimeUnit":"ns","otherData":{"title":`)
	bw.str(strconv.Quote(title))
	bw.str(`},"traceEvents":[`)
	first := true
	sep := func() {
		if !first {
			bw.str(",\n")
		}
		first = false
	}
	sort.SliceStable(meta, func(i, j int) bool {
		a, b := meta[i], meta[j]
		for x := 0; x < 4; x++ {
			if a[x] != b[x] {
				return a[x] < b[x]
			}
		}
		return false
	})
	nodes := map[int32]bool{}
	for _, m := range meta {
		if !nodes[m[1]] {
			nodes[m[1]] = true
			sep()
			bw.str(fmt.Sprintf(`{"name":"process_name","ph":"M","pid":%d,"args":{"name":"node %d"}}`, m[1], m[1]))
		}
		sep()
		name := fmt.Sprintf("%s %d", scheduler.ResourceKind(m[0]), m[2])
		if m[3] > 0 {
			name += fmt.Sprintf(" #%d", m[3])
		}
		bw.str(fmt.Sprintf(`{"name":"thread_name","ph":"M","pid":%d,"tid":%d,"args":{"name":%s}}`, m[1], tids[m], strconv.Quote(name)))
		sep()
		bw.str(fmt.Sprintf(`{"name":"thread_sort_index","ph":"M","pid":%d,"tid":%d,"args":{"sort_index":%d}}`, m[1], tids[m], tids[m]))
	}
	var buf []byte
	for _, p := range out {
		e := p.ev
		sep()
		buf = buf[:0]
		buf = append(buf, `{"name":"`...)
		buf = append(buf, e.Kind.String()...)
		if e.Kind == scheduler.TaskKernel || e.Kind == scheduler.TaskMerge || e.Kind == scheduler.TaskSend {
			buf = append(buf, ' ')
			buf = append(buf, e.OpKind.String()...)
		}
		if e.Meta {
			buf = append(buf, " meta"...)
		}
		buf = append(buf, `","cat":"`...)
		buf = append(buf, e.Kind.String()...)
		buf = append(buf, `","ph":"X","ts":`...)
		buf = strconv.AppendFloat(buf, float64(e.Start)/1e3, 'f', 3, 64)
		buf = append(buf, `,"dur":`...)
		buf = strconv.AppendFloat(buf, float64(e.End-e.Start)/1e3, 'f', 3, 64)
		buf = append(buf, `,"pid":`...)
		buf = strconv.AppendInt(buf, int64(e.Res.Node), 10)
		buf = append(buf, `,"tid":`...)
		buf = strconv.AppendInt(buf, int64(p.tid), 10)
		buf = append(buf, `,"args":{"task":`...)
		buf = strconv.AppendInt(buf, int64(e.Task), 10)
		buf = append(buf, `,"device":`...)
		buf = strconv.AppendInt(buf, int64(e.Device), 10)
		buf = append(buf, `,"pipeline":`...)
		buf = strconv.AppendInt(buf, int64(e.Pipeline), 10)
		buf = append(buf, `,"unit":`...)
		buf = strconv.AppendInt(buf, int64(e.Unit), 10)
		buf = append(buf, `,"bytes":`...)
		buf = strconv.AppendInt(buf, e.Bytes, 10)
		buf = append(buf, `,"rows":`...)
		buf = strconv.AppendInt(buf, e.Rows, 10)
		buf = append(buf, "}}"...)
		bw.bytes(buf)
	}
	bw.str("]}\n")
	return bw.err
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) str(s string) {
	if e.err == nil {
		_, e.err = io.WriteString(e.w, s)
	}
}

func (e *errWriter) bytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}
