// Package scentest runs the scheduler's datadriven scenario files: a
// topology, tables and a plan, then a policy against a scripted completion
// order, printing every start and completion. The scheduler's own
// scenarios and every policy package's use it, so a policy's scenario reads
// like the built-in ones (docs/policies.md).
package scentest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"gostachio/internal/units"
	"gostachio/plan"
	"gostachio/scheduler"
)

// Walk runs every scenario file under dir. Scenario files describe a topology, tables and a plan,
// then run a policy against a scripted completion order and print every
// start and completion in order. Rewrite the expected output with
// `go test PKG -run Scenario -rewrite` after checking the diff.
//
// Commands:
//
//	topology nodes=N devices=N ssds=N nics=N devmem=BYTES pinned=BYTES
//	    [rate-KIND=BYTES/DURATION ...]   (a resource's bandwidth per second
//	    and latency, as Topology.Rates: rate-nvme=1GiB/100us; kinds nvme,
//	    h2d, d2h, gpu, nic-out, nic-in, host)
//	table NAME rows=R chunks=N cols=a:8,b:4 [stats=a]   (stats: chunk i of
//	    column a spans [100i, 100i+99])
//	plan      one pipeline per input line, ops separated by " | ":
//	    scan T a,b [prune=a:lo:hi] | from 0,1 | after 0,1 | filter SEL |
//	    project WIDTH | probe BUILD SEL WIDTH | agg-partial GROUPS WIDTH |
//	    agg-final GROUPS WIDTH | sort | topk N |
//	    build | shuffle | broadcast | gather | result
//	run policy=NAME [set=k=v;k=v] [order=fifo|lifo|random] [seed=N]
func Walk(t *testing.T, dir string) {
	t.Helper()
	datadriven.Walk(t, dir, func(t *testing.T, path string) {
		var topo scheduler.Topology
		var tables []plan.TableStats
		var p *plan.Plan
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "topology":
				topo = scheduler.Topology{Nodes: 1, Devices: 1, SSDs: 1, NICs: 1, DeviceMem: 1 << 30, PinnedMem: 1 << 30}
				for _, a := range d.CmdArgs {
					if err := setTopo(&topo, a.Key, a.Vals[0]); err != nil {
						return "error: " + err.Error()
					}
				}
				return ""
			case "table":
				tb, err := scenarioTable(d)
				if err != nil {
					return "error: " + err.Error()
				}
				tables = append(tables, tb)
				return ""
			case "plan":
				var err error
				p, err = scenarioPlan(tables, d.Input)
				if err != nil {
					return "error: " + err.Error()
				}
				return ""
			case "run":
				return scenarioRun(t, d, topo, p)
			}
			return "unknown command " + d.Cmd
		})
	})
}

func setTopo(topo *scheduler.Topology, k, v string) error {
	if kind, ok := strings.CutPrefix(k, "rate-"); ok {
		return setRate(topo, kind, v)
	}
	switch k {
	case "devmem", "pinned":
		var c scheduler.Config
		if err := c.Set("devmem", v); err != nil {
			return err
		}
		if k == "devmem" {
			topo.DeviceMem = c.DevMem
		} else {
			topo.PinnedMem = c.DevMem
		}
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("topology %s=%q: %w", k, v, err)
	}
	switch k {
	case "nodes":
		topo.Nodes = n
	case "devices":
		topo.Devices = n
	case "ssds":
		topo.SSDs = n
	case "nics":
		topo.NICs = n
	default:
		return fmt.Errorf("unknown topology key %q", k)
	}
	return nil
}

func scenarioTable(d *datadriven.TestData) (plan.TableStats, error) {
	var tb plan.TableStats
	var rows, chunks int64
	var widths []int64
	stats := map[string]bool{}
	tb.Name = d.CmdArgs[0].Key
	for _, a := range d.CmdArgs[1:] {
		switch a.Key {
		case "rows":
			rows, _ = strconv.ParseInt(a.Vals[0], 10, 64)
		case "chunks":
			chunks, _ = strconv.ParseInt(a.Vals[0], 10, 64)
		case "cols":
			for _, v := range strings.Split(strings.Join(a.Vals, ","), ",") {
				name, w, _ := strings.Cut(v, ":")
				n, err := strconv.ParseInt(w, 10, 64)
				if err != nil {
					return tb, fmt.Errorf("table column %q: %w", v, err)
				}
				tb.Columns = append(tb.Columns, name)
				widths = append(widths, n)
			}
		case "stats":
			for _, v := range strings.Split(strings.Join(a.Vals, ","), ",") {
				stats[v] = true
			}
		default:
			return tb, fmt.Errorf("unknown table key %q", a.Key)
		}
	}
	if chunks <= 0 || rows <= 0 {
		return tb, fmt.Errorf("table %s needs rows and chunks", tb.Name)
	}
	var base int64
	for i := int64(0); i < chunks; i++ {
		r := rows / chunks
		if i < rows%chunks {
			r++
		}
		ch := plan.ChunkStats{Rows: r, Base: base}
		for c, w := range widths {
			ch.Bytes = append(ch.Bytes, r*w)
			base += r * w
			mm := plan.MinMax{}
			if stats[tb.Columns[c]] {
				mm = plan.MinMax{Valid: true, Min: 100 * i, Max: 100*i + 99}
			}
			ch.Stats = append(ch.Stats, mm)
		}
		tb.Chunks = append(tb.Chunks, ch)
	}
	return tb, nil
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

func scenarioPlan(tables []plan.TableStats, input string) (*plan.Plan, error) {
	b := plan.NewBuilder("scenario", tables)
	for ln, line := range strings.Split(strings.TrimSpace(input), "\n") {
		var pp *plan.Pipe
		done := false
		for _, step := range strings.Split(line, "|") {
			f := strings.Fields(step)
			if len(f) == 0 {
				continue
			}
			num := func(i int) float64 {
				if i >= len(f) {
					return 0
				}
				v, _ := strconv.ParseFloat(f[i], 64)
				return v
			}
			if pp == nil && f[0] != "scan" && f[0] != "from" {
				return nil, fmt.Errorf("line %d: pipeline must start with scan or from", ln)
			}
			switch f[0] {
			case "scan":
				pp = b.Scan(f[1], strings.Split(f[2], ",")...)
				for _, extra := range f[3:] {
					if v, ok := strings.CutPrefix(extra, "prune="); ok {
						parts := strings.Split(v, ":")
						lo, _ := strconv.ParseInt(parts[1], 10, 64)
						hi, _ := strconv.ParseInt(parts[2], 10, 64)
						pp.Prune(parts[0], lo, hi)
					}
				}
			case "from":
				pp = b.From(ints(f[1])...)
			case "after":
				pp.After(ints(f[1])...)
			case "filter":
				pp.Filter("f", num(1))
			case "project":
				pp.Project("p", int(num(1)))
			case "probe":
				pp.Probe(int(num(1)), num(2), int(num(3)), "k")
			case "agg-partial":
				pp.AggPartial("a", int64(num(1)), int(num(2)), "g")
			case "agg-final":
				pp.AggFinal("a", int64(num(1)), int(num(2)), "g")
			case "sort":
				pp.Sort("k")
			case "topk":
				pp.TopK(int(num(1)), "k")
			case "build":
				pp.HashBuild("k")
				done = true
			case "shuffle":
				pp.Shuffle("k")
				done = true
			case "broadcast":
				pp.Broadcast()
				done = true
			case "gather":
				pp.Gather()
				done = true
			case "result":
				pp.Result()
				done = true
			default:
				return nil, fmt.Errorf("line %d: unknown op %q", ln, f[0])
			}
		}
		if !done && pp != nil {
			pp.Done()
		}
	}
	return b.Build()
}

// recordingBackend wraps testBackend and logs starts and completions.
type recordingBackend struct {
	*testBackend
	log strings.Builder
}

func (r *recordingBackend) Start(t *scheduler.Task) error {
	fmt.Fprintf(&r.log, "start %s\n", t)
	return r.testBackend.Start(t)
}

func (r *recordingBackend) Next(ctx context.Context) (scheduler.Completion, error) {
	c, err := r.testBackend.Next(ctx)
	if err == nil {
		fmt.Fprintf(&r.log, "done  #%d n%d %s out=%dr/%dB\n", c.Task.ID, c.Task.Node, c.Task.Kind, c.OutRows, c.OutBytes)
	}
	return c, err
}

func scenarioRun(t *testing.T, d *datadriven.TestData, topo scheduler.Topology, p *plan.Plan) string {
	if p == nil {
		return "error: no plan"
	}
	name, set, order := "serial", "", "fifo"
	var seed uint64
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "policy":
			name = a.Vals[0]
		case "set":
			set = strings.ReplaceAll(strings.Join(a.Vals, ","), ";", ",")
		case "order":
			order = a.Vals[0]
		case "seed":
			seed, _ = strconv.ParseUint(a.Vals[0], 10, 64)
		}
	}
	pol, err := scheduler.NewPolicy(name, set)
	if err != nil {
		return "error: " + err.Error()
	}
	rb := &recordingBackend{testBackend: newTestBackend(topo, order, seed)}
	res, err := scheduler.Run(context.Background(), p, pol, rb, nil)
	if err != nil {
		fmt.Fprintf(&rb.log, "error: %v\n", err)
		return rb.log.String()
	}
	fmt.Fprintf(&rb.log, "tasks=%d result=%dr/%dB peak-pinned=%d peak-device=%d makespan=%s\n",
		res.Tasks, res.ResultRows, res.ResultBytes, res.PeakPinned, res.PeakDevice, res.Makespan)
	return rb.log.String()
}

// testBackend completes started tasks one per step in a scripted order:
// "fifo" (start order), "lifo" (latest first), "random" (seeded),
// "node0-first" (start order, node 0's tasks before every other node's)
// or "node0-slow" (start order, node 0's tasks only at every tenth step
// while other nodes have some). Each
// completion advances time by one microsecond and reports the task's
// estimated output, as the simulator does without data.
type testBackend struct {
	topo     scheduler.Topology
	now      scheduler.Time
	order    string
	rng      *rand.Rand
	inflight []*scheduler.Task
	started  []*scheduler.Task
	steps    int
	// onStart, when set, sees every start (for property checks).
	onStart func(*scheduler.Task)
}

var _ scheduler.Backend = (*testBackend)(nil)

func newTestBackend(topo scheduler.Topology, order string, seed uint64) *testBackend {
	return &testBackend{topo: topo, order: order, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (b *testBackend) Topology() scheduler.Topology { return b.topo }
func (b *testBackend) Now() scheduler.Time          { return b.now }

func (b *testBackend) Start(t *scheduler.Task) error {
	if b.onStart != nil {
		b.onStart(t)
	}
	b.inflight = append(b.inflight, t)
	b.started = append(b.started, t)
	return nil
}

func (b *testBackend) Next(ctx context.Context) (scheduler.Completion, error) {
	if err := ctx.Err(); err != nil {
		return scheduler.Completion{}, err
	}
	if len(b.inflight) == 0 {
		return scheduler.Completion{}, scheduler.ErrIdle
	}
	i := 0
	switch b.order {
	case "lifo":
		i = len(b.inflight) - 1
	case "random":
		i = b.rng.IntN(len(b.inflight))
	case "node0-first", "node0-slow":
		b.steps++
		first := b.order == "node0-first" || b.steps%10 == 0
		for j, t := range b.inflight {
			if (t.Node == 0) == first {
				i = j
				break
			}
		}
	}
	t := b.inflight[i]
	copy(b.inflight[i:], b.inflight[i+1:])
	b.inflight = b.inflight[:len(b.inflight)-1]
	start := b.now
	b.now += 1000
	return scheduler.Completion{Task: t, Start: start, End: b.now, OutBytes: t.EstBytes, OutRows: t.EstRows}, nil
}

// setRate sets the rate of resource kind kind from "BYTES/DURATION" (bytes
// per second, latency).
func setRate(topo *scheduler.Topology, kind, v string) error {
	bw, lat, ok := strings.Cut(v, "/")
	if !ok {
		return fmt.Errorf("topology rate-%s=%q: want BYTES/DURATION (e.g. 1GiB/100us)", kind, v)
	}
	for k := 0; k < scheduler.NumResourceKinds; k++ {
		if scheduler.ResourceKind(k).String() != kind {
			continue
		}
		b, err := units.ParseBytes(bw)
		if err != nil {
			return fmt.Errorf("topology rate-%s=%q: %w", kind, v, err)
		}
		d, err := time.ParseDuration(lat)
		if err != nil {
			return fmt.Errorf("topology rate-%s=%q: %w", kind, v, err)
		}
		topo.Rates[k] = scheduler.Rate{Bandwidth: float64(b), Latency: scheduler.Time(d.Nanoseconds())}
		return nil
	}
	return fmt.Errorf("topology rate-%s: unknown resource kind", kind)
}
