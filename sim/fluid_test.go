package sim

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/cockroachdb/datadriven"

	"gostachio/costmodel"
)

// TestFluidScenarios runs the network scenarios in testdata/fluid: each
// "run" block declares links and flows (with start times) and expects the
// completions, in completion order, as "name start end" (ns). The expected
// figures in the files are computed by hand (see the comments there).
func TestFluidScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/fluid", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "run" {
				t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			}
			out, err := runFluidScenario(d.Input)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

type scenFlow struct {
	name string
	at   int64
	spec FlowSpec
}

// runFluidScenario parses and runs one scenario (format in testdata/fluid).
func runFluidScenario(input string) (string, error) {
	n := NewNet()
	links := map[string]LinkID{}
	var flows []scenFlow
	for ln, line := range strings.Split(input, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		kv := map[string]string{}
		for _, f := range fields[2:] {
			k, v, ok := strings.Cut(f, "=")
			if !ok {
				return "", fmt.Errorf("line %d: %q is not key=value", ln+1, f)
			}
			kv[k] = v
		}
		num := func(k string) float64 {
			v, _ := strconv.ParseFloat(kv[k], 64)
			return v
		}
		switch fields[0] {
		case "link":
			links[fields[1]] = n.AddLink(num("cap"))
		case "storage":
			st := &costmodel.Storage{Bandwidth: costmodel.Rate(num("bw"))}
			if c := kv["curve"]; c != "" {
				for _, p := range strings.Split(c, ",") {
					a, b, _ := strings.Cut(p, ":")
					qd, _ := strconv.ParseFloat(a, 64)
					fr, _ := strconv.ParseFloat(b, 64)
					st.Curve = append(st.Curve, costmodel.QDPoint{QD: qd, Frac: fr})
				}
			}
			st.Completion = kv["completion"]
			if err := st.Validate(); err != nil {
				return "", err
			}
			links[fields[1]] = n.AddStorageLink(st)
		case "slow":
			var by []LinkID
			for _, name := range strings.Split(kv["by"], ",") {
				id, ok := links[name]
				if !ok {
					return "", fmt.Errorf("line %d: unknown link %q", ln+1, name)
				}
				by = append(by, id)
			}
			id, ok := links[fields[1]]
			if !ok {
				return "", fmt.Errorf("line %d: unknown link %q", ln+1, fields[1])
			}
			n.SlowBy(id, num("steal"), by...)
		case "flow":
			sf := scenFlow{name: fields[1], at: int64(num("at"))}
			if l := kv["links"]; l != "" {
				for _, name := range strings.Split(l, ",") {
					id, ok := links[name]
					if !ok {
						return "", fmt.Errorf("line %d: unknown link %q", ln+1, name)
					}
					sf.spec.Links = append(sf.spec.Links, id)
				}
			}
			if w := kv["weights"]; w != "" {
				for _, x := range strings.Split(w, ",") {
					v, err := strconv.ParseFloat(x, 64)
					if err != nil {
						return "", fmt.Errorf("line %d: weight %q", ln+1, x)
					}
					sf.spec.Weights = append(sf.spec.Weights, v)
				}
			}
			sf.spec.Size = num("size")
			sf.spec.Latency = int64(num("lat"))
			sf.spec.Limit = num("limit")
			sf.spec.QD = int(num("qd"))
			sf.spec.Tag = int32(len(flows))
			flows = append(flows, sf)
		default:
			return "", fmt.Errorf("line %d: unknown directive %q", ln+1, fields[0])
		}
	}
	sort.SliceStable(flows, func(i, j int) bool { return flows[i].at < flows[j].at })
	var b strings.Builder
	next := 0
	for {
		limit := int64(math.MaxInt64)
		if next < len(flows) {
			limit = flows[next].at
		}
		tag, start, end, ok := n.stepBefore(limit)
		if ok {
			fmt.Fprintf(&b, "%s %d %d\n", flows[tag].name, start, end)
			continue
		}
		if next == len(flows) {
			break
		}
		n.advance(flows[next].at)
		n.Start(flows[next].spec)
		next++
	}
	if n.InFlight() != 0 {
		fmt.Fprintf(&b, "stalled: %d\n", n.InFlight())
	}
	return b.String(), nil
}

// A shared-cores link runs up to one flow per core at full speed and
// loses throughput linearly past that: 2 cores, efficiency 0.5 at 4 flows.
// Flows of 1000 busy-ns capped at one core each: 2 at once end at 1000 ns;
// 3 share 2·(1 − 0.5·0.5) = 1.5 cores (0.5 each) and end at 2000 ns; 4 (and
// 6: clamped) share 2·0.5 = 1 core and end at 4000 (6000) ns.
func TestSharedCoresLink(t *testing.T) {
	for _, tc := range []struct {
		flows int
		end   int64
	}{{1, 1000}, {2, 1000}, {3, 2000}, {4, 4000}, {6, 6000}} {
		n := NewNet()
		l := n.AddSharedCoresLink(2, 0.5, 4)
		for i := range tc.flows {
			n.Start(FlowSpec{Links: []LinkID{l}, Size: 1000, Limit: 1, Tag: int32(i)})
		}
		for range tc.flows {
			_, _, end, ok := n.Step()
			if !ok || end != tc.end {
				t.Errorf("%d flows: a flow ended at %d (ok %v), want %d", tc.flows, end, ok, tc.end)
			}
		}
	}
	// Weighted flows (a send's share of the network stack) use the cores
	// without counting among the jobs: 2 kernels and 2 flows of weight 0.5
	// keep the full 2 cores, shared 2/(1+1+0.5+0.5) = 2/3 each: every flow
	// of 1000 ends at 1500 ns (as 4 jobs they would share 1 core: 3000).
	n := NewNet()
	l := n.AddSharedCoresLink(2, 0.5, 4)
	for i := range 4 {
		spec := FlowSpec{Links: []LinkID{l}, Size: 1000, Limit: 1, Tag: int32(i)}
		if i >= 2 {
			spec.Limit, spec.Weights = 0, []float64{0.5}
		}
		n.Start(spec)
	}
	for range 4 {
		if _, _, end, ok := n.Step(); !ok || end != 1500 {
			t.Errorf("2 kernels and 2 weighted flows: a flow ended at %d (ok %v), want 1500", end, ok)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("AddSharedCoresLink with full <= cores did not panic")
		}
	}()
	NewNet().AddSharedCoresLink(2, 0.5, 2)
}

// TestFlowWeightsChecked: weights that are not one positive, finite
// number per link are programmer errors (Start panics).
func TestFlowWeightsChecked(t *testing.T) {
	for _, w := range [][]float64{{1}, {1, 0}, {1, -1}, {1, math.Inf(1)}, {1, math.NaN()}, {1, 1, 1}} {
		n := NewNet()
		a, b := n.AddLink(1), n.AddLink(1)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("weights %v on 2 links: no panic", w)
				}
			}()
			n.Start(FlowSpec{Links: []LinkID{a, b}, Size: 1, Weights: w})
		}()
	}
	n := NewNet()
	a := n.AddLink(1)
	n.Start(FlowSpec{Links: []LinkID{a}, Size: 1, Weights: []float64{0.5}}) // valid: no panic
}

func TestContention(t *testing.T) {
	// Two cores, loss 0.25: a job alone runs at full speed; two at once
	// each at 1/1.25; four take turns on the two busy cores (each at
	// 0.4). On the shared-cores link (eff 0.5 at 4 jobs) the loss comes
	// on top of the co-location: four jobs get 2·0.5/1.25 = 0.8 cores.
	for _, tc := range []struct {
		shared bool
		flows  int
		end    int64
	}{{false, 1, 1000}, {false, 2, 1250}, {false, 4, 2500}, {true, 1, 1000}, {true, 2, 1250}, {true, 4, 5000}} {
		n := NewNet()
		var l LinkID
		if tc.shared {
			l = n.AddSharedCoresLink(2, 0.5, 4)
		} else {
			l = n.AddLink(2)
		}
		n.SetContention(l, 2, 0.25)
		for i := range tc.flows {
			n.Start(FlowSpec{Links: []LinkID{l}, Size: 1000, Limit: 1, Tag: int32(i)})
		}
		for range tc.flows {
			if _, _, end, ok := n.Step(); !ok || end != tc.end {
				t.Errorf("shared %v, %d flows: a flow ended at %d (ok %v), want %d", tc.shared, tc.flows, end, ok, tc.end)
			}
		}
	}
	// A job that outlives its neighbour speeds up when it is left alone:
	// two jobs of 1000 and 2000 share 1250 ns at 0.8 (1000 done each),
	// then the second does its last 1000 alone.
	n := NewNet()
	l := n.AddLink(2)
	n.SetContention(l, 2, 0.25)
	n.Start(FlowSpec{Links: []LinkID{l}, Size: 1000, Limit: 1, Tag: 0})
	n.Start(FlowSpec{Links: []LinkID{l}, Size: 2000, Limit: 1, Tag: 1})
	for _, want := range []int64{1250, 2250} {
		if _, _, end, ok := n.Step(); !ok || end != want {
			t.Errorf("jobs of 1000 and 2000: one ended at %d (ok %v), want %d", end, ok, want)
		}
	}
	// Weighted flows (a send's CPU) are not jobs: beside one kernel they
	// leave it at full speed.
	n = NewNet()
	l = n.AddLink(2)
	n.SetContention(l, 2, 0.25)
	n.Start(FlowSpec{Links: []LinkID{l}, Size: 1000, Limit: 1, Tag: 0})
	n.Start(FlowSpec{Links: []LinkID{l}, Size: 100, Weights: []float64{0.01}, Tag: 1})
	for range 2 {
		if tag, _, end, ok := n.Step(); ok && tag == 0 && end != 1000 {
			t.Errorf("a kernel beside a weighted flow ended at %d, want 1000", end)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("SetContention on one core did not panic")
		}
	}()
	n = NewNet()
	n.SetContention(n.AddLink(1), 1, 0.1)
}

// TestFlowLayout: a flow fills whole cache lines (re-sharing reads its
// first two).
func TestFlowLayout(t *testing.T) {
	if s := unsafe.Sizeof(flow{}); s != 256 {
		t.Fatalf("flow is %d bytes, want 256", s)
	}
	if o := unsafe.Offsetof(flow{}.rate); o+8 > 64 {
		t.Fatalf("flow.rate ends at byte %d, past the first cache line", o+8)
	}
}
