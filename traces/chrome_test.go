package traces

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"

	"gostachio/traces/event"
)

// randomEvents makes n events over runs, two nodes, every resource and
// task kind, with ns-precise times (sub-µs parts, large values) and
// concurrency on resources.
func randomEvents(rng *rand.Rand, n int, runs []string) []Event {
	ops := []string{"", "agg-partial", "hash-probe", "filter"}
	events := make([]Event, n)
	for i := range events {
		k := event.TaskKind(1 + rng.IntN(event.NumTaskKinds-1))
		node := int32(rng.IntN(2))
		rk := event.ResourceKind(1 + rng.IntN(event.NumResourceKinds-1))
		s := rng.Int64N(5_000_000)
		if rng.IntN(10) == 0 {
			s += 1 << 40 // ~18 minutes: big numbers keep their ns
		}
		d := rng.Int64N(20_000)
		if rng.IntN(8) == 0 {
			d = 0
		}
		events[i] = Event{Run: runs[rng.IntN(len(runs))], Node: node, Device: int32(rng.IntN(3)) - 1,
			Res:  event.Resource{Kind: rk, Node: node, Index: int32(rng.IntN(3))},
			Kind: k, Op: ops[rng.IntN(len(ops))], Meta: rng.IntN(5) == 0,
			Pipeline: int32(rng.IntN(4)), Unit: int32(rng.IntN(6)) - 1, Table: int32(rng.IntN(3)) - 1,
			Chunk: int32(rng.IntN(100)) - 1, Task: int32(i), Start: s, End: s + d,
			Bytes: rng.Int64N(1 << 40), Rows: rng.Int64N(1 << 30)}
	}
	return events
}

// validateChrome checks data against the trace format's required fields
// and this package's layout rules; it returns the parsed events.
func validateChrome(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var top map[string]any
	if err := dec.Decode(&top); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if top["displayTimeUnit"] != "ns" {
		t.Fatalf("displayTimeUnit %v", top["displayTimeUnit"])
	}
	if _, ok := top["otherData"].(map[string]any); !ok {
		t.Fatalf("otherData %v", top["otherData"])
	}
	list, ok := top["traceEvents"].([]any)
	if !ok {
		t.Fatalf("traceEvents %T", top["traceEvents"])
	}
	num := func(i int, m map[string]any, k string) json.Number {
		n, ok := m[k].(json.Number)
		if !ok {
			t.Fatalf("event %d: %s is %T (%v), want a number: %v", i, k, m[k], m[k], m)
		}
		return n
	}
	type track struct{ pid, tid string }
	type span struct{ s, e int64 }
	slicesOf := map[track][]span{}
	threadNamed := map[track]bool{}
	procNamed := map[string]bool{}
	var evs []map[string]any
	for i, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			t.Fatalf("event %d is %T", i, x)
		}
		evs = append(evs, m)
		ph, _ := m["ph"].(string)
		if _, ok := m["name"].(string); !ok || ph == "" {
			t.Fatalf("event %d lacks name or ph: %v", i, m)
		}
		pid, tid := num(i, m, "pid"), num(i, m, "tid")
		num(i, m, "ts")
		if pid == "0" || tid == "0" {
			t.Fatalf("event %d uses pid/tid 0 (special in Perfetto): %v", i, m)
		}
		switch ph {
		case "X":
			ts, ok1 := parseMicros(string(num(i, m, "ts")))
			dur, ok2 := parseMicros(string(num(i, m, "dur")))
			if !ok1 || !ok2 || dur < 0 {
				t.Fatalf("event %d: ts %v dur %v", i, m["ts"], m["dur"])
			}
			if _, ok := m["args"].(map[string]any); !ok {
				t.Fatalf("event %d: X without args", i)
			}
			k := track{pid.String(), tid.String()}
			slicesOf[k] = append(slicesOf[k], span{ts, ts + dur})
		case "C":
			args, ok := m["args"].(map[string]any)
			if !ok || len(args) == 0 {
				t.Fatalf("event %d: counter without args: %v", i, m)
			}
			for k, v := range args {
				if _, ok := v.(json.Number); !ok {
					t.Fatalf("event %d: counter arg %s = %v is not numeric", i, k, v)
				}
			}
		case "M":
			args, _ := m["args"].(map[string]any)
			switch m["name"] {
			case "process_name":
				if _, ok := args["name"].(string); !ok {
					t.Fatalf("event %d: process_name without args.name", i)
				}
				procNamed[pid.String()] = true
			case "thread_name":
				if _, ok := args["name"].(string); !ok {
					t.Fatalf("event %d: thread_name without args.name", i)
				}
				threadNamed[track{pid.String(), tid.String()}] = true
			}
		default:
			t.Fatalf("event %d: unexpected ph %q", i, ph)
		}
	}
	for k, spans := range slicesOf {
		if !threadNamed[k] || !procNamed[k.pid] {
			t.Fatalf("track %v has slices but no thread or process name", k)
		}
		sort.Slice(spans, func(a, b int) bool { return spans[a].s < spans[b].s })
		for j := 1; j < len(spans); j++ {
			if spans[j].s < spans[j-1].e {
				t.Fatalf("track %v: slices %v and %v overlap", k, spans[j-1], spans[j])
			}
		}
	}
	return evs
}

func TestChromeValidAndRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter, runs := range [][]string{{""}, {"q6/overlap/rep0", "q6/serial \"x\"/rep1"}, {"é,\n"}} {
		events := randomEvents(rng, 300, runs)
		meta := Meta{Title: fmt.Sprintf("test %d", iter), Backend: "sim", Profile: "dgx-a100", Machine: "box"}
		var b bytes.Buffer
		if err := WriteChrome(&b, events, meta); err != nil {
			t.Fatal(err)
		}
		validateChrome(t, b.Bytes())
		got, gotMeta, err := ReadChrome(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if gotMeta != meta {
			t.Fatalf("meta %+v, want %+v", gotMeta, meta)
		}
		if !reflect.DeepEqual(got, events) {
			for i := range events {
				if i >= len(got) || !reflect.DeepEqual(got[i], events[i]) {
					t.Fatalf("iter %d: event %d\n got %+v\nwant %+v", iter, i, got[min(i, len(got)-1)], events[i])
				}
			}
			t.Fatalf("iter %d: %d events, want %d", iter, len(got), len(events))
		}
	}
}

func TestChromeLayoutAndCounters(t *testing.T) {
	events := slowReads()
	// A second node with one read, to get a second process.
	r := ev(event.TaskRead, event.Resource{Kind: event.ResNVMe, Node: 1}, 0, 0, 0, 0, 1500, 7)
	events = append(events, r)
	// Two overlapping reads on nvme[0.1]: two lanes.
	events = append(events, ev(event.TaskRead, nvme1, 1, -1, -1, 0, 50, 1), ev(event.TaskRead, nvme1, 1, -1, -1, 10, 20, 2))
	var b bytes.Buffer
	if err := WriteChrome(&b, events, Meta{Title: "t"}); err != nil {
		t.Fatal(err)
	}
	evs := validateChrome(t, b.Bytes())
	names := map[string]bool{}
	counters := map[string][]string{} // "pid name" -> "ts=args"
	for _, m := range evs {
		args, _ := m["args"].(map[string]any)
		switch m["ph"] {
		case "M":
			if n, ok := args["name"].(string); ok {
				names[fmt.Sprintf("%v %v", m["name"], n)] = true
			}
		case "C":
			var kv []string
			for k, v := range args {
				kv = append(kv, fmt.Sprintf("%s:%v", k, v))
			}
			sort.Strings(kv)
			key := fmt.Sprintf("%v %v", m["pid"], m["name"])
			counters[key] = append(counters[key], fmt.Sprintf("%v=%s", m["ts"], strings.Join(kv, ",")))
		}
	}
	for _, n := range []string{"process_name node 0", "process_name node 1", "thread_name nvme[0.0] lane 0",
		"thread_name nvme[0.1] lane 0", "thread_name nvme[0.1] lane 1", "thread_name gpu[0.0] lane 0",
		"thread_name nvme[1.0] lane 0"} {
		if !names[n] {
			t.Errorf("no metadata %q in %v", n, names)
		}
	}
	if names["thread_name nvme[0.0] lane 1"] {
		t.Errorf("sequential reads got a second lane")
	}
	// Node 0's reads: slowReads' three back-to-back 100-byte reads plus
	// [0,50) 1 B and [10,20) 2 B on nvme[0.1]:
	//   0: 101, 0.010 µs: 103, 0.020: 101, 0.050: 100, 0.100: 100 (one
	//   ends, one starts), 0.200: 100, 0.300: 0.
	wantReads := []string{"0.000=bytes:101", "0.010=bytes:103", "0.020=bytes:101", "0.050=bytes:100",
		"0.100=bytes:100", "0.200=bytes:100", "0.300=bytes:0"}
	if got := counters["1 "+CounterReadBytes]; !reflect.DeepEqual(got, wantReads) {
		t.Errorf("read bytes\n got %v\nwant %v", got, wantReads)
	}
	// Buffer of device 0: unit u holds 100 B from its read's start to its
	// kernel's end: [0,130), [100,235), [200,330).
	wantBuf := []string{"0.000=dev0:100", "0.100=dev0:200", "0.130=dev0:100", "0.200=dev0:200",
		"0.235=dev0:100", "0.330=dev0:0"}
	if got := counters["1 "+CounterBuffer]; !reflect.DeepEqual(got, wantBuf) {
		t.Errorf("buffer\n got %v\nwant %v", got, wantBuf)
	}
	// Node 1's read has no kernel: held to its own end (1.5 µs).
	if got := counters["2 "+CounterBuffer]; !reflect.DeepEqual(got, []string{"0.000=dev0:7", "1.500=dev0:0"}) {
		t.Errorf("node 1 buffer %v", got)
	}
}

// legacyTrace is the simulator's earlier format (sim.ChromeTrace).
const legacyTrace = `{"displayTimeUnit":"ns","otherData":{"title":"engine q3 overlap"},"traceEvents":[{"name":"process_name","ph":"M","pid":0,"args":{"name":"node 0"}},
{"name":"thread_name","ph":"M","pid":0,"tid":1,"args":{"name":"nvme 0"}},
{"name":"thread_name","ph":"M","pid":0,"tid":2,"args":{"name":"nvme 0 #1"}},
{"name":"thread_name","ph":"M","pid":0,"tid":4,"args":{"name":"gpu 0"}},
{"name":"thread_name","ph":"M","pid":0,"tid":5,"args":{"name":"nic-out 0"}},
{"name":"read meta","cat":"read","ph":"X","ts":131.908,"dur":290.257,"pid":0,"tid":1,"args":{"task":0,"device":-1,"pipeline":0,"unit":-1,"bytes":65536,"rows":0}},
{"name":"read","cat":"read","ph":"X","ts":533.989,"dur":1301.812,"pid":0,"tid":2,"args":{"task":3,"device":0,"pipeline":4,"unit":0,"bytes":483328,"rows":60175}},
{"name":"kernel broadcast","cat":"kernel","ph":"X","ts":1607.739,"dur":89.097,"pid":0,"tid":4,"args":{"task":7,"device":0,"pipeline":0,"unit":0,"bytes":36864,"rows":337}},
{"name":"send broadcast","cat":"send","ph":"X","ts":1704.190,"dur":1.024,"pid":0,"tid":5,"args":{"task":8,"device":0,"pipeline":0,"unit":0,"bytes":2696,"rows":337}}]}
`

func TestReadChromeLegacy(t *testing.T) {
	events, meta, err := ReadChrome(strings.NewReader(legacyTrace))
	if err != nil {
		t.Fatal(err)
	}
	if meta != (Meta{Title: "engine q3 overlap"}) {
		t.Fatalf("meta %+v", meta)
	}
	R := func(k event.ResourceKind) event.Resource { return event.Resource{Kind: k} }
	want := []Event{
		{Device: -1, Res: R(event.ResNVMe), Kind: event.TaskRead, Meta: true, Unit: -1, Table: -1, Chunk: -1,
			Start: 131908, End: 422165, Bytes: 65536},
		{Res: R(event.ResNVMe), Kind: event.TaskRead, Pipeline: 4, Table: -1, Chunk: -1, Task: 3,
			Start: 533989, End: 1835801, Bytes: 483328, Rows: 60175},
		{Res: R(event.ResGPU), Kind: event.TaskKernel, Op: "broadcast", Table: -1, Chunk: -1, Task: 7,
			Start: 1607739, End: 1696836, Bytes: 36864, Rows: 337},
		{Res: R(event.ResNICOut), Kind: event.TaskSend, Table: -1, Chunk: -1, Task: 8,
			Start: 1704190, End: 1705214, Bytes: 2696, Rows: 337},
	}
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("legacy\n got %+v\nwant %+v", events, want)
	}
}

func TestWriteChromeBadEvent(t *testing.T) {
	events := slowReads()
	events[4].End = events[4].Start - 1
	var b bytes.Buffer
	err := WriteChrome(&b, events, Meta{})
	if err == nil || !strings.Contains(err.Error(), "event 4 (h2d task 0 on h2d[0.0]) ends at 199 ns, before its start 200 ns") || b.Len() != 0 {
		t.Fatalf("error %v, %d bytes written", err, b.Len())
	}
}

func TestReadChromeErrors(t *testing.T) {
	var b bytes.Buffer
	if err := WriteChrome(&b, slowReads(), Meta{Title: "t"}); err != nil {
		t.Fatal(err)
	}
	full := b.String()
	x := `{"name":"read","ph":"X","ts":1.000,"dur":2.000,"pid":1,"tid":2,"args":`
	goodArgs := `{"run":"","node":0,"device":0,"res":"nvme[0.0]","res_kind":"nvme","res_node":0,"res_index":0,"kind":"read","op":"","meta":false,"task":1,"pipeline":0,"unit":0,"table":-1,"chunk":-1,"bytes":5,"rows":0}`
	file := func(ev string) string {
		return `{"displayTimeUnit":"ns","otherData":{"format":"` + ChromeFormat + `"},"traceEvents":[` + ev + `]}`
	}
	for _, c := range []struct{ name, in, want string }{
		{"truncated", full[:len(full)/2], "truncated"},
		{"empty", "", "truncated"},
		{"not an object", "[1,2]", "top level is a JSON array"},
		{"wrong type", `{"traceEvents":[{"pid":"x"}]}`, "traceEvents.pid is a JSON string"},
		{"no events", `{"displayTimeUnit":"ns"}`, "no traceEvents"},
		{"syntax", file(x + goodArgs + `,}`), "bad JSON at byte"},
		{"missing field", file(x + strings.Replace(goodArgs, `"unit":0,`, "", 1) + "}"), `event 0 (X "read"): args: missing unit`},
		{"bad kind", file(x + strings.Replace(goodArgs, `"kind":"read"`, `"kind":"reed"`, 1) + "}"), `unknown task kind "reed"`},
		{"res mismatch", file(x + strings.Replace(goodArgs, `"res":"nvme[0.0]"`, `"res":"nvme[0.1]"`, 1) + "}"), "disagrees"},
		{"no args", file(`{"name":"read","ph":"X","ts":1,"dur":2,"pid":1,"tid":2}`), "missing args"},
		{"negative dur", file(strings.Replace(x, `"dur":2.000`, `"dur":-2`, 1) + goodArgs + "}"), "bad or missing dur"},
		{"no ts", file(strings.Replace(x, `"ts":1.000,`, "", 1) + goodArgs + "}"), "bad or missing ts"},
		{"string bytes", file(x + strings.Replace(goodArgs, `"bytes":5`, `"bytes":"5"`, 1) + "}"), "traceEvents.args.bytes is a JSON string"},
		{"unknown format", `{"otherData":{"format":"other/9"},"traceEvents":[]}`, "unknown format"},
		{"legacy bad thread", `{"traceEvents":[{"name":"read","cat":"read","ph":"X","ts":1,"dur":1,"pid":0,"tid":9,"args":{"task":0,"device":0,"pipeline":0,"unit":0,"bytes":0,"rows":0}}]}`, "thread name"},
	} {
		_, _, err := ReadChrome(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// The good event itself reads.
	if ev, _, err := ReadChrome(strings.NewReader(file(x + goodArgs + "}"))); err != nil || len(ev) != 1 || ev[0].End != 3000 {
		t.Fatalf("good event: %v %+v", err, ev)
	}
}

func TestMicros(t *testing.T) {
	for _, ns := range []int64{0, 1, 999, 1000, 1001, 123456789, -1, -1500, 1<<62 + 7} {
		s := string(appendMicros(nil, ns))
		got, ok := parseMicros(s)
		if !ok || got != ns {
			t.Errorf("%d -> %q -> %d %v", ns, s, got, ok)
		}
	}
	for s, want := range map[string]int64{"1": 1000, "1.5": 1500, "0.0004": 0, "0.0005": 1, "2.5e3": 2500000, "-0.25": -250, "7.": 7000} {
		if got, ok := parseMicros(s); !ok || got != want {
			t.Errorf("%q -> %d %v, want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "-", "abc", "1.2.3", "NaN"} {
		if _, ok := parseMicros(s); ok {
			t.Errorf("%q parsed", s)
		}
	}
}
