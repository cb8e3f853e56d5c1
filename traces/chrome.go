package traces

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"gostachio/traces/event"
)

// ChromeFormat is the otherData.format value WriteChrome records; ReadChrome
// reads files with it exactly, and others (the simulator's earlier writer)
// as legacy traces.
const ChromeFormat = "gostachio.traces/1"

// Counter track names (per process, i.e. per node).
const (
	CounterReadBytes = "in-flight read bytes"
	CounterBuffer    = "buffer occupancy"
)

// WriteChrome writes events as Chrome trace JSON (the Object Format,
// loadable in Perfetto and chrome://tracing): an object with
// "displayTimeUnit":"ns", "otherData" (the meta's fields and "format":
// ChromeFormat) and "traceEvents", laid out as follows.
//
// Processes: one per node ("node N", pid N+1: Perfetto treats pid 0 as the
// kernel's). A trace holding several runs gets one process per run and
// node ("run R node N", pid 1 + run number × (max node + 1) + node, runs
// numbered by first appearance). Process-scoped events (process metadata,
// counters) carry tid = pid.
//
// Threads: one per resource lane ("nvme[0.1] lane 0"; tids unique in the
// file and above every pid), sorted by resource and lane. A resource's
// tasks are placed, by start time, on its lowest-numbered lane whose last
// task ended by their start, so the slices of one tid never overlap (JSON
// slices on one track must nest) and a resource gets as many lanes as its
// peak concurrency.
//
// Tasks: one complete event (ph "X") per event, in the order of events:
// name "kind[ op][ meta]", cat the kind, ts and dur in microseconds with
// three decimals (exactly the ns values), args {run, node, device, res,
// res_kind, res_node, res_index, kind, op, meta, task, pipeline, unit,
// table, chunk, bytes, rows}: everything ReadChrome needs.
//
// Counters (ph "C"), per process, a sample at every change:
//
//   - CounterReadBytes, args {"bytes"}: the sum of Bytes of the node's read
//     tasks running at that time (Start <= t < End, metadata reads
//     included).
//   - CounterBuffer, args {"devD": ...} for each device D of the node with
//     units: the data a unit has read and its kernel has not yet consumed.
//     A unit (run, node, pipeline, unit >= 0, device >= 0) holds the sum of
//     Bytes of its non-metadata reads from its first read's Start to its
//     last kernel's End (to its last task's End if it has no kernel); a
//     device's series is the sum over its units. It counts read (stored)
//     bytes; a backend's real buffers differ by decoding and staging.
//
// Metadata events (ph "M") carry ts 0, so every event has ph, pid, tid,
// name and ts. An event that ends before it starts is an error (nothing
// is written); other errors are w's.
func WriteChrome(w io.Writer, events []Event, meta Meta) error {
	for i := range events {
		if e := &events[i]; e.End < e.Start {
			return fmt.Errorf("traces: chrome trace: event %d (%s task %d on %s) ends at %d ns, before its start %d ns",
				i, e.Kind, e.Task, e.Res, e.End, e.Start)
		}
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	ew := &errWriter{w: bw}

	// Processes.
	runs := Runs(events)
	runIdx := map[string]int{}
	for i, r := range runs {
		runIdx[r] = i
	}
	maxNode := int32(0)
	for i := range events {
		maxNode = max(maxNode, events[i].Res.Node, events[i].Node)
	}
	stride := int64(maxNode) + 1
	pidOf := func(run string, node int32) int64 {
		return 1 + int64(runIdx[run])*stride + int64(node)
	}

	// Lanes: per run and resource, by (Start, End, index).
	type resKey struct {
		run string
		res event.Resource
	}
	byRes := map[resKey][]int32{}
	for i := range events {
		k := resKey{events[i].Run, events[i].Res}
		byRes[k] = append(byRes[k], int32(i))
	}
	lane := make([]int32, len(events))
	type thread struct {
		pid  int64
		res  event.Resource
		lane int32
	}
	var threads []thread
	for k, idx := range byRes {
		slices.SortFunc(idx, func(a, b int32) int {
			ea, eb := &events[a], &events[b]
			if c := cmp.Compare(ea.Start, eb.Start); c != 0 {
				return c
			}
			if c := cmp.Compare(ea.End, eb.End); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		var ends []int64
		for _, i := range idx {
			e := &events[i]
			l := -1
			for j, end := range ends {
				if end <= e.Start {
					l = j
					break
				}
			}
			if l < 0 {
				l = len(ends)
				ends = append(ends, 0)
			}
			ends[l] = e.End
			lane[i] = int32(l)
		}
		for l := range ends {
			threads = append(threads, thread{pidOf(k.run, k.res.Node), k.res, int32(l)})
		}
	}
	slices.SortFunc(threads, func(a, b thread) int {
		if c := cmp.Compare(a.pid, b.pid); c != 0 {
			return c
		}
		if c := compareRes(a.res, b.res); c != 0 {
			return c
		}
		return cmp.Compare(a.lane, b.lane)
	})
	type tidKey struct {
		run  string
		res  event.Resource
		lane int32
	}
	tids := map[tidKey]int64{}
	pidRun := map[int64]string{}
	for i := range events {
		e := &events[i]
		pidRun[pidOf(e.Run, e.Res.Node)] = e.Run
		pidRun[pidOf(e.Run, e.Node)] = e.Run
	}

	ew.printf(`{"displayTimeUnit":"ns","otherData":`)
	other, _ := json.Marshal(struct {
		Format string `json:"format"`
		Meta
	}{ChromeFormat, meta})
	ew.write(other)
	ew.printf(`,"traceEvents":[`)
	first := true
	emit := func(ev any) {
		b, err := json.Marshal(ev)
		if err != nil {
			if ew.err == nil {
				ew.err = err
			}
			return
		}
		if !first {
			ew.printf(",\n")
		}
		first = false
		ew.write(b)
	}
	type nameArgs struct {
		Name string `json:"name"`
	}
	type sortArgs struct {
		SortIndex int64 `json:"sort_index"`
	}
	// Process metadata for every pid that has threads or counters.
	var pids []int64
	seenPid := map[int64]bool{}
	addPid := func(p int64) {
		if !seenPid[p] {
			seenPid[p] = true
			pids = append(pids, p)
		}
	}
	for _, t := range threads {
		addPid(t.pid)
	}
	for i := range events {
		addPid(pidOf(events[i].Run, events[i].Node))
	}
	slices.Sort(pids)
	for _, p := range pids {
		name := fmt.Sprintf("node %d", (p-1)%stride)
		if len(runs) > 1 {
			name = fmt.Sprintf("run %s node %d", pidRun[p], (p-1)%stride)
		}
		emit(chromeEvent{Name: "process_name", Ph: "M", TS: "0", PID: p, TID: p, Args: nameArgs{name}})
		emit(chromeEvent{Name: "process_sort_index", Ph: "M", TS: "0", PID: p, TID: p, Args: sortArgs{p}})
	}
	// Thread ids are unique in the file and differ from every pid.
	lastPid := int64(0)
	if len(pids) > 0 {
		lastPid = pids[len(pids)-1]
	}
	for k, t := range threads {
		tid := lastPid + 1 + int64(k)
		tids[tidKey{pidRun[t.pid], t.res, t.lane}] = tid
		emit(chromeEvent{Name: "thread_name", Ph: "M", TS: "0", PID: t.pid, TID: tid,
			Args: nameArgs{fmt.Sprintf("%s lane %d", t.res, t.lane)}})
		emit(chromeEvent{Name: "thread_sort_index", Ph: "M", TS: "0", PID: t.pid, TID: tid, Args: sortArgs{int64(k)}})
	}

	// Tasks.
	var buf []byte
	for i := range events {
		e := &events[i]
		name := e.Kind.String()
		if e.Op != "" {
			name += " " + e.Op
		}
		if e.Meta {
			name += " meta"
		}
		buf = appendMicros(buf[:0], e.Start)
		ts := string(buf)
		buf = appendMicros(buf[:0], e.End-e.Start)
		emit(chromeEvent{Name: name, Cat: e.Kind.String(), Ph: "X", TS: json.Number(ts), Dur: json.Number(string(buf)),
			PID: pidOf(e.Run, e.Res.Node), TID: tids[tidKey{e.Run, e.Res, lane[i]}],
			Args: xArgs{Run: e.Run, Node: e.Node, Device: e.Device, Res: e.Res.String(), ResKind: e.Res.Kind.String(),
				ResNode: e.Res.Node, ResIndex: e.Res.Index, Kind: e.Kind.String(), Op: e.Op, Meta: e.Meta,
				Task: e.Task, Pipeline: e.Pipeline, Unit: e.Unit, Table: e.Table, Chunk: e.Chunk,
				Bytes: e.Bytes, Rows: e.Rows}})
	}

	// Counters.
	for _, c := range counters(events, pidOf) {
		emit(c)
	}
	ew.printf("]}\n")
	if ew.err != nil {
		return ew.err
	}
	return bw.Flush()
}

// chromeEvent is one trace event as written.
type chromeEvent struct {
	Name string      `json:"name"`
	Cat  string      `json:"cat,omitempty"`
	Ph   string      `json:"ph"`
	TS   json.Number `json:"ts"`
	Dur  json.Number `json:"dur,omitempty"`
	PID  int64       `json:"pid"`
	TID  int64       `json:"tid"`
	Args any         `json:"args,omitempty"`
}

// xArgs are a task's args.
type xArgs struct {
	Run      string `json:"run"`
	Node     int32  `json:"node"`
	Device   int32  `json:"device"`
	Res      string `json:"res"`
	ResKind  string `json:"res_kind"`
	ResNode  int32  `json:"res_node"`
	ResIndex int32  `json:"res_index"`
	Kind     string `json:"kind"`
	Op       string `json:"op"`
	Meta     bool   `json:"meta"`
	Task     int32  `json:"task"`
	Pipeline int32  `json:"pipeline"`
	Unit     int32  `json:"unit"`
	Table    int32  `json:"table"`
	Chunk    int32  `json:"chunk"`
	Bytes    int64  `json:"bytes"`
	Rows     int64  `json:"rows"`
}

// counters builds the counter events (see WriteChrome), per pid in pid
// order, CounterReadBytes before CounterBuffer.
func counters(events []Event, pidOf func(string, int32) int64) []chromeEvent {
	type delta struct {
		t      int64
		series int
		d      int64
	}
	// In-flight read bytes, per pid.
	reads := map[int64][]delta{}
	for i := range events {
		e := &events[i]
		if e.Kind != event.TaskRead || e.End <= e.Start {
			continue
		}
		p := pidOf(e.Run, e.Res.Node)
		reads[p] = append(reads[p], delta{e.Start, 0, e.Bytes}, delta{e.End, 0, -e.Bytes})
	}
	// Buffer occupancy, per pid and device.
	type held struct {
		dev       int32
		pid       int64
		bytes     int64
		start     int64
		hasRead   bool
		kernelEnd int64
		hasKernel bool
		lastEnd   int64
	}
	units := map[unitKey]*held{}
	var order []unitKey
	for i := range events {
		e := &events[i]
		if e.Unit < 0 || e.Device < 0 {
			continue
		}
		k := unitKey{e.Run, e.Node, e.Pipeline, e.Unit}
		h := units[k]
		if h == nil {
			h = &held{dev: e.Device, pid: pidOf(e.Run, e.Node), lastEnd: e.End}
			units[k] = h
			order = append(order, k)
		}
		h.lastEnd = max(h.lastEnd, e.End)
		switch {
		case e.Kind == event.TaskRead && !e.Meta:
			if !h.hasRead || e.Start < h.start {
				h.start = e.Start
			}
			h.hasRead = true
			h.bytes += e.Bytes
		case e.Kind == event.TaskKernel:
			h.kernelEnd = max(h.kernelEnd, e.End)
			h.hasKernel = true
		}
	}
	devs := map[int64][]int32{} // devices per pid with units that read
	devSeries := map[int64]map[int32]int{}
	buffers := map[int64][]delta{}
	for _, k := range order {
		h := units[k]
		if !h.hasRead {
			continue
		}
		end := h.lastEnd
		if h.hasKernel {
			end = h.kernelEnd
		}
		if end <= h.start {
			continue
		}
		if devSeries[h.pid] == nil {
			devSeries[h.pid] = map[int32]int{}
		}
		if _, ok := devSeries[h.pid][h.dev]; !ok {
			devSeries[h.pid][h.dev] = 0
			devs[h.pid] = append(devs[h.pid], h.dev)
		}
		buffers[h.pid] = append(buffers[h.pid], delta{h.start, int(h.dev), h.bytes}, delta{end, int(h.dev), -h.bytes})
	}
	var pids []int64
	for p := range reads {
		pids = append(pids, p)
	}
	for p := range buffers {
		if _, ok := reads[p]; !ok {
			pids = append(pids, p)
		}
	}
	slices.Sort(pids)
	var out []chromeEvent
	var buf []byte
	series := func(pid int64, name string, ds []delta, keys []int32, key func(int32) string) {
		slices.SortStableFunc(ds, func(a, b delta) int { return cmp.Compare(a.t, b.t) })
		vals := map[int32]int64{}
		for i := 0; i < len(ds); {
			t := ds[i].t
			for ; i < len(ds) && ds[i].t == t; i++ {
				vals[int32(ds[i].series)] += ds[i].d
			}
			args := make(map[string]int64, len(keys))
			for _, k := range keys {
				args[key(k)] = vals[k]
			}
			buf = appendMicros(buf[:0], t)
			out = append(out, chromeEvent{Name: name, Ph: "C", TS: json.Number(string(buf)), PID: pid, TID: pid, Args: args})
		}
	}
	for _, p := range pids {
		if ds := reads[p]; len(ds) > 0 {
			series(p, CounterReadBytes, ds, []int32{0}, func(int32) string { return "bytes" })
		}
		if ds := buffers[p]; len(ds) > 0 {
			keys := devs[p]
			slices.Sort(keys)
			series(p, CounterBuffer, ds, keys, func(d int32) string { return "dev" + strconv.Itoa(int(d)) })
		}
	}
	return out
}

// ReadChrome reads a trace WriteChrome wrote: the events in file order
// (equal to those written) and the meta. It also reads the simulator's
// earlier format (no otherData.format): kind from cat, node from pid,
// resource from the thread name ("nvme 0 #1"), op and meta flag from the
// name, the other fields from args; Run is "", Table and Chunk -1, and
// Meta.Title the trace's title. Errors name the event (its index in
// traceEvents) and the field, or the byte offset of a JSON error.
func ReadChrome(r io.Reader) ([]Event, Meta, error) {
	var f struct {
		DisplayTimeUnit string `json:"displayTimeUnit"`
		OtherData       struct {
			Format string `json:"format"`
			Meta
		} `json:"otherData"`
		TraceEvents *[]struct {
			Name string      `json:"name"`
			Cat  string      `json:"cat"`
			Ph   string      `json:"ph"`
			TS   json.Number `json:"ts"`
			Dur  json.Number `json:"dur"`
			PID  int64       `json:"pid"`
			TID  int64       `json:"tid"`
			// Args of every kind of event decode into one struct (fields
			// absent are nil): one pass over the file, no second decode.
			Args *chromeArgsIn `json:"args"`
		} `json:"traceEvents"`
	}
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<16))
	if err := dec.Decode(&f); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, Meta{}, fmt.Errorf("traces: chrome trace: bad JSON at byte %d: %w", se.Offset, err)
		case errors.As(err, &te) && te.Field == "":
			return nil, Meta{}, fmt.Errorf("traces: chrome trace: the top level is a JSON %s, want an object with traceEvents", te.Value)
		case errors.As(err, &te):
			return nil, Meta{}, fmt.Errorf("traces: chrome trace: %s is a JSON %s at byte %d, want a %s", te.Field, te.Value, te.Offset, te.Type)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil, Meta{}, fmt.Errorf("traces: chrome trace: truncated JSON: %w", io.ErrUnexpectedEOF)
		}
		return nil, Meta{}, fmt.Errorf("traces: chrome trace: %w", err)
	}
	if f.TraceEvents == nil {
		return nil, Meta{}, errors.New("traces: chrome trace: no traceEvents array")
	}
	if f.OtherData.Format != "" && f.OtherData.Format != ChromeFormat {
		return nil, Meta{}, fmt.Errorf("traces: chrome trace: unknown format %q (want %q)", f.OtherData.Format, ChromeFormat)
	}
	legacy := f.OtherData.Format == ""
	meta := f.OtherData.Meta
	tevs := *f.TraceEvents
	threadNames := map[[2]int64]string{}
	if legacy {
		for _, te := range tevs {
			if te.Ph == "M" && te.Name == "thread_name" && te.Args != nil && te.Args.Name != nil {
				threadNames[[2]int64{te.PID, te.TID}] = *te.Args.Name
			}
		}
	}
	var events []Event
	for i, te := range tevs {
		if te.Ph != "X" {
			continue
		}
		where := func(format string, args ...any) error {
			return fmt.Errorf("traces: chrome trace: event %d (X %q): %s", i, te.Name, fmt.Sprintf(format, args...))
		}
		start, ok := parseMicros(string(te.TS))
		if !ok {
			return nil, Meta{}, where("bad or missing ts %q", te.TS)
		}
		dur, ok := parseMicros(string(te.Dur))
		if !ok || dur < 0 {
			return nil, Meta{}, where("bad or missing dur %q", te.Dur)
		}
		if te.Args == nil {
			return nil, Meta{}, where("missing args")
		}
		var e Event
		var err error
		if legacy {
			e, err = te.Args.legacyEvent(te.Name, te.Cat, te.PID, threadNames[[2]int64{te.PID, te.TID}])
		} else {
			e, err = te.Args.event()
		}
		if err != nil {
			return nil, Meta{}, where("%v", err)
		}
		e.Start, e.End = start, start+dur
		events = append(events, e)
	}
	return events, meta, nil
}

// chromeArgsIn is the union of the args ReadChrome reads: a task's (this
// format's and the legacy one's) and a metadata event's name.
type chromeArgsIn struct {
	Name *string `json:"name"`

	Run      *string `json:"run"`
	Node     *int32  `json:"node"`
	Device   *int32  `json:"device"`
	Res      *string `json:"res"`
	ResKind  *string `json:"res_kind"`
	ResNode  *int32  `json:"res_node"`
	ResIndex *int32  `json:"res_index"`
	Kind     *string `json:"kind"`
	Op       *string `json:"op"`
	Meta     *bool   `json:"meta"`
	Task     *int32  `json:"task"`
	Pipeline *int32  `json:"pipeline"`
	Unit     *int32  `json:"unit"`
	Table    *int32  `json:"table"`
	Chunk    *int32  `json:"chunk"`
	Bytes    *int64  `json:"bytes"`
	Rows     *int64  `json:"rows"`
}

// field is an args field and whether it was present (non-null).
type field struct {
	name string
	ok   bool
}

// missing names the first absent field; "" if none is.
func missing(fs ...field) string {
	for _, f := range fs {
		if !f.ok {
			return f.name
		}
	}
	return ""
}

// event decodes the args WriteChrome writes.
func (a *chromeArgsIn) event() (Event, error) {
	if m := missing(field{"run", a.Run != nil}, field{"node", a.Node != nil}, field{"device", a.Device != nil}, field{"res", a.Res != nil},
		field{"res_kind", a.ResKind != nil}, field{"res_node", a.ResNode != nil}, field{"res_index", a.ResIndex != nil},
		field{"kind", a.Kind != nil}, field{"op", a.Op != nil}, field{"meta", a.Meta != nil}, field{"task", a.Task != nil},
		field{"pipeline", a.Pipeline != nil}, field{"unit", a.Unit != nil}, field{"table", a.Table != nil}, field{"chunk", a.Chunk != nil},
		field{"bytes", a.Bytes != nil}, field{"rows", a.Rows != nil}); m != "" {
		return Event{}, fmt.Errorf("args: missing %s", m)
	}
	kind, ok := parseTaskKind(*a.Kind)
	if !ok {
		return Event{}, fmt.Errorf("args.kind: unknown task kind %q", *a.Kind)
	}
	rk, ok := parseResKind(*a.ResKind)
	if !ok {
		return Event{}, fmt.Errorf("args.res_kind: unknown resource kind %q", *a.ResKind)
	}
	res := event.Resource{Kind: rk, Node: *a.ResNode, Index: *a.ResIndex}
	if res.String() != *a.Res {
		return Event{}, fmt.Errorf("args.res %q disagrees with res_kind/res_node/res_index (%s)", *a.Res, res)
	}
	return Event{Run: *a.Run, Node: *a.Node, Device: *a.Device, Res: res, Kind: kind, Op: *a.Op, Meta: *a.Meta,
		Pipeline: *a.Pipeline, Unit: *a.Unit, Table: *a.Table, Chunk: *a.Chunk, Task: *a.Task,
		Bytes: *a.Bytes, Rows: *a.Rows}, nil
}

// legacyEvent decodes a task of the simulator's earlier writer.
func (a *chromeArgsIn) legacyEvent(name, cat string, pid int64, thread string) (Event, error) {
	kind, ok := parseTaskKind(cat)
	if !ok {
		return Event{}, fmt.Errorf("cat: unknown task kind %q", cat)
	}
	// Thread "nvme 0" or "nvme 0 #2": kind, index[, lane].
	tn := thread
	if j := strings.LastIndex(tn, " #"); j >= 0 {
		tn = tn[:j]
	}
	j := strings.LastIndexByte(tn, ' ')
	if j < 0 {
		return Event{}, fmt.Errorf("thread name %q is not \"kind index\"", thread)
	}
	rk, ok := parseResKind(tn[:j])
	idx, err := strconv.ParseInt(tn[j+1:], 10, 32)
	if !ok || err != nil {
		return Event{}, fmt.Errorf("thread name %q is not \"kind index\"", thread)
	}
	if m := missing(field{"task", a.Task != nil}, field{"device", a.Device != nil}, field{"pipeline", a.Pipeline != nil},
		field{"unit", a.Unit != nil}, field{"bytes", a.Bytes != nil}, field{"rows", a.Rows != nil}); m != "" {
		return Event{}, fmt.Errorf("args: missing %s", m)
	}
	e := Event{Node: int32(pid), Device: *a.Device, Res: event.Resource{Kind: rk, Node: int32(pid), Index: int32(idx)},
		Kind: kind, Pipeline: *a.Pipeline, Unit: *a.Unit, Table: -1, Chunk: -1, Task: *a.Task, Bytes: *a.Bytes, Rows: *a.Rows}
	rest := strings.TrimPrefix(name, cat)
	if strings.HasSuffix(rest, " meta") {
		e.Meta = true
		rest = strings.TrimSuffix(rest, " meta")
	}
	if kind == event.TaskKernel || kind == event.TaskMerge {
		e.Op = strings.TrimPrefix(rest, " ")
	}
	return e, nil
}
