package sim

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gostachio/costmodel"
	"gostachio/plan"
	"gostachio/scheduler"
	"gostachio/tpch/queries"
	"gostachio/traces"
)

func tinyCluster(t *testing.T, nodes int) *Cluster {
	t.Helper()
	p, err := LoadProfile("testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCluster(p, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// drain returns every completion until the cluster is idle.
func drain(t *testing.T, c *Cluster) []scheduler.Completion {
	t.Helper()
	var out []scheduler.Completion
	for {
		comp, err := c.Next(context.Background())
		if errors.Is(err, scheduler.ErrIdle) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, comp)
	}
}

// TestClusterTaskTimes: one task alone on the tiny profile takes the time
// computed by hand from the profile's numbers (comments give the formula).
func TestClusterTaskTimes(t *testing.T) {
	scan := []plan.Op{{Kind: plan.OpScan, Selectivity: 1, OutWidth: 8}}
	agg := []plan.Op{{Kind: plan.OpAggFinal, Selectivity: 0.001, OutWidth: 8}}
	for _, tc := range []struct {
		name  string
		nodes int
		task  scheduler.Task
		want  int64
	}{
		// 4 MiB = 4 requests of 1 MiB: q=4, full 1 B/ns: 100us + 4194304 ns.
		{"read qd4", 1, scheduler.Task{Kind: scheduler.TaskRead, Res: scheduler.Resource{Kind: scheduler.ResNVMe, Index: 1}, Device: 1, Bytes: 4 << 20}, 100_000 + 4194304},
		// 1 MiB = 1 request: f(1) = 0.5 B/ns: 100us + 2097152 ns.
		{"read qd1", 1, scheduler.Task{Kind: scheduler.TaskRead, Res: scheduler.Resource{Kind: scheduler.ResNVMe}, Bytes: 1 << 20}, 100_000 + 2097152},
		// 2e6 B at 2 B/ns + 10us.
		{"h2d", 1, scheduler.Task{Kind: scheduler.TaskH2D, Res: scheduler.Resource{Kind: scheduler.ResH2D, Index: 1}, Device: 1, Bytes: 2e6}, 10_000 + 1_000_000},
		{"d2h", 1, scheduler.Task{Kind: scheduler.TaskD2H, Res: scheduler.Resource{Kind: scheduler.ResD2H}, Bytes: 2e6}, 10_000 + 1_000_000},
		// launch 5us + fixed 10us + 1e9 B at 1 TB/s (1 ms).
		{"kernel", 1, scheduler.Task{Kind: scheduler.TaskKernel, Res: scheduler.Resource{Kind: scheduler.ResGPU}, Ops: scan, OpKind: plan.OpScan, Bytes: 1e9, Rows: 1.25e8, EstBytes: 77, EstRows: 7}, 5_000 + 10_000 + 1_000_000},
		// launch 2us + 1e6 rows at 1 G rows/s on one core (merge_threads 1 of 4).
		{"merge", 1, scheduler.Task{Kind: scheduler.TaskMerge, Res: scheduler.Resource{Kind: scheduler.ResHost}, Device: -1, Ops: agg, OpKind: plan.OpAggFinal, Rows: 1e6, EstRows: 1000}, 2_000 + 1_000_000},
		{"sync", 1, scheduler.Task{Kind: scheduler.TaskSync, Res: scheduler.Resource{Kind: scheduler.ResHost}}, 20_000},
		// same node, NVLink 4 B/ns + 1us.
		{"send nvlink", 1, scheduler.Task{Kind: scheduler.TaskSend, Res: scheduler.Resource{Kind: scheduler.ResNICOut}, Peer: scheduler.Resource{Kind: scheduler.ResNICIn}, PeerDevice: 1, Bytes: 4e6, Tag: 1}, 1_000 + 1_000_000},
		// other node, NIC 1 B/ns + 5us.
		{"send nic", 2, scheduler.Task{Kind: scheduler.TaskSend, Res: scheduler.Resource{Kind: scheduler.ResNICOut}, Peer: scheduler.Resource{Kind: scheduler.ResNICIn, Node: 1}, PeerDevice: 0, Bytes: 1e6, Tag: 2}, 5_000 + 1_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tinyCluster(t, tc.nodes)
			task := tc.task
			if err := c.Start(&task); err != nil {
				t.Fatal(err)
			}
			got := drain(t, c)
			if len(got) != 1 || got[0].Task != &task {
				t.Fatalf("completions %+v", got)
			}
			if got[0].Start != 0 || int64(got[0].End) != tc.want {
				t.Fatalf("ran [%d, %d], want [0, %d]", got[0].Start, got[0].End, tc.want)
			}
			if got[0].OutBytes != task.EstBytes || got[0].OutRows != task.EstRows {
				t.Fatalf("output %d B %d rows, want the estimates %d, %d", got[0].OutBytes, got[0].OutRows, task.EstBytes, task.EstRows)
			}
		})
	}
}

// TestClusterBound: on a hand-built load the bound is max(work/capacity)
// computed by hand, and the makespan follows from fair sharing.
func TestClusterBound(t *testing.T) {
	c := tinyCluster(t, 1)
	var tasks []scheduler.Task
	for i := 0; i < 3; i++ { // SSD 0: 3 x 4 MiB
		tasks = append(tasks, scheduler.Task{Kind: scheduler.TaskRead, Res: scheduler.Resource{Kind: scheduler.ResNVMe}, Bytes: 4 << 20})
	}
	tasks = append(tasks,
		scheduler.Task{Kind: scheduler.TaskRead, Res: scheduler.Resource{Kind: scheduler.ResNVMe, Index: 1}, Bytes: 4 << 20},
		scheduler.Task{Kind: scheduler.TaskH2D, Res: scheduler.Resource{Kind: scheduler.ResH2D}, Bytes: 16e6})
	for i := range tasks {
		if err := c.Start(&tasks[i]); err != nil {
			t.Fatal(err)
		}
	}
	comps := drain(t, c)
	var makespan int64
	for _, x := range comps {
		makespan = max(makespan, int64(x.End))
	}
	// SSD 0: 12 MiB / 1 B/ns = 12582912 ns; SSD 1: 4194304; H2D: 16e6/2 = 8e6.
	b, at := c.Bound()
	if b != 12582912 || at != (LinkInfo{Kind: LinkNVMe, Node: 0, Index: 0}) {
		t.Fatalf("bound %v at %+v, want 12582912 at nvme[0.0]", b, at)
	}
	// SSD 0's three reads share q=12 (f=1) and end together: 100us + 12582912.
	if makespan != 100_000+12582912 {
		t.Fatalf("makespan %d, want %d", makespan, 100_000+12582912)
	}
	var nvme ResourceReport
	for _, r := range c.Resources(makespan) {
		if r.Kind == "nvme" {
			nvme = r
		}
	}
	if nvme.Count != 2 || nvme.Work != 16<<20 || nvme.BoundNs != 12582912 {
		t.Fatalf("nvme report %+v", nvme)
	}
}

func TestClusterRejectsBadTasks(t *testing.T) {
	c := tinyCluster(t, 1)
	for _, task := range []scheduler.Task{
		{Kind: scheduler.TaskRead, Res: scheduler.Resource{Kind: scheduler.ResNVMe, Index: 5}, Bytes: 1},
		{Kind: scheduler.TaskH2D, Device: 2, Bytes: 1},
		{Kind: scheduler.TaskSend, Peer: scheduler.Resource{Node: 3}, Bytes: 1},
		{Kind: scheduler.TaskInvalid},
	} {
		if err := c.Start(&task); err == nil {
			t.Errorf("Start(%+v) accepted", task)
		}
	}
}

func simulateQuery(t *testing.T, q, policy string, sf float64, nodes int, jitter float64, seed uint64) (*Report, []traces.Event) {
	t.Helper()
	prof, err := LoadProfile("dgx-a100")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := queries.Stats(sf, DefaultChunkRows)
	if err != nil {
		t.Fatal(err)
	}
	p, err := queries.Build(q, sf, tables)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := scheduler.NewPolicy(policy, "")
	if err != nil {
		t.Fatal(err)
	}
	tr := &traces.Recorder{}
	rep, err := Simulate(context.Background(), p, prof, nodes, pol, tr, jitter, seed)
	if err != nil {
		t.Fatal(err)
	}
	return rep, tr.Events
}

// TestSameSeedSameRun compares the full event sequences of runs with
// latency jitter: the same seed gives the same run, another seed another.
func TestSameSeedSameRun(t *testing.T) {
	_, a := simulateQuery(t, "q3", "overlap", 10, 2, 0.3, 7)
	_, b := simulateQuery(t, "q3", "overlap", 10, 2, 0.3, 7)
	_, c := simulateQuery(t, "q3", "overlap", 10, 2, 0.3, 8)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("event counts %d vs %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("event %d differs with the same seed:\n%+v\n%+v", i, a[i], b[i])
		}
	}
	same := len(a) == len(c)
	for i := 0; same && i < len(a); i++ {
		same = a[i] == c[i]
	}
	if same {
		t.Fatal("seeds 7 and 8 gave identical runs: jitter has no effect")
	}
}

// TestOverlapBeatsSerial: on the paper's node, the full overlap policy has
// a shorter makespan than the naive serial loop on the scan-heavy queries,
// and no makespan is below its bound.
func TestOverlapBeatsSerial(t *testing.T) {
	for _, q := range []string{"q1", "q3", "q6"} {
		ser, _ := simulateQuery(t, q, "serial", 100, 2, 0, 0)
		ovl, _ := simulateQuery(t, q, "overlap", 100, 2, 0, 0)
		t.Logf("%s SF100 x2 dgx-a100: serial %.1f ms, overlap %.1f ms, speedup %.2fx, overlap efficiency %.1f%%",
			q, float64(ser.MakespanNs)/1e6, float64(ovl.MakespanNs)/1e6, float64(ser.MakespanNs)/float64(ovl.MakespanNs), 100*ovl.Efficiency)
		if ovl.MakespanNs >= ser.MakespanNs {
			t.Errorf("%s: overlap %d ns is not faster than serial %d ns", q, ovl.MakespanNs, ser.MakespanNs)
		}
		for _, r := range []*Report{ser, ovl} {
			if r.BoundNs > r.MakespanNs || r.BoundNs <= 0 {
				t.Errorf("%s %s: bound %d ns vs makespan %d ns", q, r.Policy, r.BoundNs, r.MakespanNs)
			}
		}
	}
}

func TestProfiles(t *testing.T) {
	names := ProfileNames()
	if strings.Join(names, ",") != "devbox,devbox-calibrated,devbox-xeon,dgx-a100,h100-gpu-calibrated,h100-node,h200-gpu-calibrated" {
		t.Fatalf("shipped profiles %v", names)
	}
	for _, n := range names {
		p, err := LoadProfile(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if p.Name != n {
			t.Errorf("profile %s names itself %q", n, p.Name)
		}
		if _, err := NewCluster(p, 2); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	a, _ := LoadProfile("dgx-a100")
	if a.Node.GPUs != 8 || a.Node.SSDs != 8 || a.NVMe.Bandwidth != 6.4*(1<<30) || a.NIC.Bandwidth != 24e9 {
		t.Errorf("dgx-a100 decoded as %+v", a)
	}
	// The GPU backend's profiles (calibrate --micro --gpu on an H200 and
	// an H100).
	for _, n := range []string{"h200-gpu-calibrated", "h100-gpu-calibrated"} {
		g, _ := LoadProfile(n)
		if !g.Node.GPUScansOnly || g.Node.KernelsOnHost || g.GPU.Fused == nil || g.PCIe.H2D < 10e9 {
			t.Errorf("%s decoded as %+v", n, g)
		}
	}
	_, err := LoadProfile("testdata/profiles/bad-key.yaml")
	if err == nil || !strings.Contains(err.Error(), "line 9") || !strings.Contains(err.Error(), "gpu_count") {
		t.Errorf("unknown key: error %v, want one naming line 9 and gpu_count", err)
	}
	if _, err := LoadProfile("dgx-z9"); !errors.Is(err, ErrUnknownProfile) {
		t.Errorf("unknown profile: %v", err)
	}
}

// TestClusterSharedMachine: with node.shared_machine the nodes' merges and
// reads share one host CPU and one set of SSDs. 8 one-core merges (2 per
// node on 4 nodes) on the machine's 4 cores take twice as long as alone
// (launch 2us + 2 x 1 ms); two 4-request reads on SSD 0 of nodes 0 and 1
// (q 8, full 1 B/ns) take 100us + 2 x 4 MiB ns. Without sharing every node
// has its own 4 cores and SSDs: no slowdown.
func TestClusterSharedMachine(t *testing.T) {
	agg := []plan.Op{{Kind: plan.OpAggFinal, Selectivity: 0.001, OutWidth: 8}}
	for _, shared := range []bool{false, true} {
		p, err := LoadProfile("testdata/profiles/tiny.yaml")
		if err != nil {
			t.Fatal(err)
		}
		p.Node.SharedMachine = shared
		c, err := NewCluster(p, 4)
		if err != nil {
			t.Fatal(err)
		}
		var tasks []*scheduler.Task
		for nd := int32(0); nd < 4; nd++ {
			for range 2 {
				tasks = append(tasks, &scheduler.Task{Kind: scheduler.TaskMerge, Node: nd, Res: scheduler.Resource{Kind: scheduler.ResHost, Node: nd}, Device: -1, Ops: agg, OpKind: plan.OpAggFinal, Rows: 1e6, EstRows: 1000})
			}
		}
		for nd := int32(0); nd < 2; nd++ {
			tasks = append(tasks, &scheduler.Task{Kind: scheduler.TaskRead, Node: nd, Res: scheduler.Resource{Kind: scheduler.ResNVMe, Node: nd}, Bytes: 4 << 20})
		}
		for _, task := range tasks {
			if err := c.Start(task); err != nil {
				t.Fatal(err)
			}
		}
		mergeWant, readWant := int64(2_000+1_000_000), int64(100_000+4194304)
		if shared {
			mergeWant, readWant = 2_000+2_000_000, 100_000+2*4194304
		}
		for _, comp := range drain(t, c) {
			want := mergeWant
			if comp.Task.Kind == scheduler.TaskRead {
				want = readWant
			}
			if d := int64(comp.End - comp.Start); d < want-1 || d > want+1 {
				t.Errorf("shared %v: %s on node %d took %d ns, want %d", shared, comp.Task.Kind, comp.Task.Node, d, want)
			}
		}
		wantHost := 4
		if shared {
			wantHost = 1
		}
		hosts := 0
		for _, li := range c.Links() {
			if li.Kind == LinkHost {
				hosts++
			}
		}
		if hosts != wantHost {
			t.Errorf("shared %v: %d host links, want %d", shared, hosts, wantHost)
		}
	}
}

// TestClusterGPUScansOnly: with node.gpu_scans_only (the engine's GPU
// backend) a scan unit's kernel runs on the GPU, priced as one fused pass
// (gpu.fused), and its h2d crosses PCIe; a kernel of exchanged data runs on
// the host, and the other copies take no time.
func TestClusterGPUScansOnly(t *testing.T) {
	p, err := LoadProfile("testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Node.GPUScansOnly, p.Node.KernelThreads = true, 1
	p.GPU.Fused = &costmodel.OpCost{Fixed: 10_000, ByteRate: 1e12, TermRate: 1e9}
	p.Host.Ops[plan.OpFilter] = costmodel.OpCost{RowRate: 1e9}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	// Two ops of 1 + 2 terms: Σ terms 3 on every row (a fused pass
	// computes them whether or not the filter keeps the row).
	ops := []plan.Op{
		{Kind: plan.OpFilter, Selectivity: 0.5, Expr: plan.Lt(plan.Col("a"), plan.Int(3))},
		{Kind: plan.OpProject, Selectivity: 1, Expr: plan.Projection{{Name: "x", E: plan.Add(plan.Col("a"), plan.Col("b"))}, {Name: "y", E: plan.Mul(plan.Col("a"), plan.Col("b"))}}},
	}
	terms := ops[0].Terms() + ops[1].Terms()
	scan := func(kind scheduler.TaskKind, res scheduler.ResourceKind) scheduler.Task {
		return scheduler.Task{Kind: kind, Res: scheduler.Resource{Kind: res}, Table: 0, Unit: 3, Bytes: 1e9, Rows: 1e6, Ops: ops, OpKind: plan.OpProject}
	}
	exchanged := func(kind scheduler.TaskKind, res scheduler.ResourceKind) scheduler.Task {
		t := scan(kind, res)
		t.Table = -1
		return t
	}
	for _, tc := range []struct {
		name string
		task scheduler.Task
		want int64
	}{
		// launch 5us + fixed 10us + 1e9 B at 1 TB/s + 1e6 rows x terms at 1 G/s.
		{"scan kernel on the GPU", scan(scheduler.TaskKernel, scheduler.ResGPU), 5_000 + 10_000 + 1_000_000 + int64(terms*1e6)},
		// launch 2us + 1e6 rows at 1 G rows/s (the filter; project unpriced).
		{"exchanged kernel on the host", exchanged(scheduler.TaskKernel, scheduler.ResGPU), 2_000 + 1_000_000},
		// 1e9 B at 2 B/ns + 10us.
		{"scan h2d on PCIe", scan(scheduler.TaskH2D, scheduler.ResH2D), 10_000 + 500_000_000},
		{"exchanged h2d free", exchanged(scheduler.TaskH2D, scheduler.ResH2D), 0},
		{"d2h free", scan(scheduler.TaskD2H, scheduler.ResD2H), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCluster(p, 1)
			if err != nil {
				t.Fatal(err)
			}
			task := tc.task
			if err := c.Start(&task); err != nil {
				t.Fatal(err)
			}
			got := drain(t, c)
			if len(got) != 1 || int64(got[0].End-got[0].Start) != tc.want {
				t.Fatalf("ran %+v, want %d ns", got, tc.want)
			}
		})
	}
	p.Node.KernelsOnHost = true
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "gpu_scans_only") {
		t.Fatalf("gpu_scans_only with kernels_on_host: %v", err)
	}
}

// TestClusterOrderedSends: with node.ordered_sends, two sends from node 0
// to node 1 go one after the other (the second starts moving when the
// first has arrived), while a send from node 0 to node 2 shares node 0's
// NIC with whichever is moving; without it all three share the NIC from
// the start. Tiny profile: NIC 1 B/ns per direction, latency 5 us.
func TestClusterOrderedSends(t *testing.T) {
	for _, tc := range []struct {
		ordered      bool
		wantA, wantB int64 // node 0 -> 1: 4e6 B, then 1e6 B
		wantC        int64 // node 0 -> 2: 1e6 B
	}{
		// Three flows at 1/3 B/ns: B and C move 1e6 B by 3 ms, A its last
		// 3e6 B alone at 1 B/ns.
		{false, 5_000 + 6_000_000, 5_000 + 3_000_000, 5_000 + 3_000_000},
		// A and C at 1/2 B/ns: C done at 2 ms, A's last 3e6 B alone by
		// 5 ms; B starts then, alone: its latency and 1 ms.
		{true, 5_000 + 5_000_000, 5_000 + 5_000_000 + 5_000 + 1_000_000, 5_000 + 2_000_000},
	} {
		p, err := LoadProfile("testdata/profiles/tiny.yaml")
		if err != nil {
			t.Fatal(err)
		}
		p.Node.OrderedSends = tc.ordered
		c, err := NewCluster(p, 3)
		if err != nil {
			t.Fatal(err)
		}
		send := func(id, peer int32, bytes int64) *scheduler.Task {
			return &scheduler.Task{ID: scheduler.TaskID(id), Kind: scheduler.TaskSend, Res: scheduler.Resource{Kind: scheduler.ResNICOut},
				Peer: scheduler.Resource{Kind: scheduler.ResNICIn, Node: peer}, Bytes: bytes, Tag: uint64(id)}
		}
		a, b, cc := send(1, 1, 4e6), send(2, 1, 1e6), send(3, 2, 1e6)
		for _, x := range []*scheduler.Task{a, b, cc} {
			if err := c.Start(x); err != nil {
				t.Fatal(err)
			}
		}
		ends := map[*scheduler.Task]int64{}
		for _, comp := range drain(t, c) {
			ends[comp.Task] = int64(comp.End)
		}
		if ends[a] != tc.wantA || ends[b] != tc.wantB || ends[cc] != tc.wantC {
			t.Errorf("ordered %v: ends A %d B %d C %d, want %d %d %d", tc.ordered, ends[a], ends[b], ends[cc], tc.wantA, tc.wantB, tc.wantC)
		}
	}
}

// TestClusterNetCPUCost: with node.net_cpu_cost a send takes that many ns
// of its hosts' cores per byte at each end and shares them with the
// kernels and merges there (weighted max-min, FlowSpec.Weights). A merge
// of 1e6 busy-ns (host latency 2 µs, one core) and a send of 2e6 B from
// node 0 to 1 (NIC 1 B/ns, latency 5 µs) on hosts of 1 core; cost 2 ns/B.
func TestClusterNetCPUCost(t *testing.T) {
	for _, tc := range []struct {
		name             string
		cost             float64
		shared           bool
		wantMerge, wantS int64
	}{
		// No cost: the merge alone on its core from 2 µs, the send alone
		// on the NIC from 5 µs.
		{"free network", 0, false, 2_000 + 1_000_000, 5_000 + 2_000_000},
		// Host 0 from 5 µs: merge (weight 1) and send (weight 2) get 1/3
		// each; the merge has 997000 busy-ns left: 2.991e6 ns, ends at
		// 2.996e6. The send moved 997000 B by then; its last 1003000 B go
		// at 1/2 (each host's core over weight 2): 2.006e6 ns more.
		{"own hosts", 2, false, 2_996_000, 5_002_000},
		// One host for both nodes: the send weighs 2·2 on it. From 5 µs
		// 1/5 each: the merge's 997000 take 4.985e6 ns (end 4.99e6); the
		// send's last 1003000 B go at 1/4: 4.012e6 ns more.
		{"shared machine", 2, true, 4_990_000, 9_002_000},
	} {
		p, err := LoadProfile("testdata/profiles/tiny.yaml")
		if err != nil {
			t.Fatal(err)
		}
		p.Node.HostCores = 1
		p.Node.SharedMachine = tc.shared
		p.Node.NetCPUCost = tc.cost
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		c, err := NewCluster(p, 2)
		if err != nil {
			t.Fatal(err)
		}
		merge := &scheduler.Task{ID: 1, Kind: scheduler.TaskMerge, OpKind: plan.OpAggFinal, Rows: 1e6}
		send := &scheduler.Task{ID: 2, Kind: scheduler.TaskSend, Res: scheduler.Resource{Kind: scheduler.ResNICOut},
			Peer: scheduler.Resource{Kind: scheduler.ResNICIn, Node: 1}, Bytes: 2e6, Tag: 2}
		for _, x := range []*scheduler.Task{merge, send} {
			if err := c.Start(x); err != nil {
				t.Fatal(err)
			}
		}
		ends := map[*scheduler.Task]int64{}
		for _, comp := range drain(t, c) {
			ends[comp.Task] = int64(comp.End)
		}
		if ends[merge] != tc.wantMerge || ends[send] != tc.wantS {
			t.Errorf("%s: merge ends %d, send %d; want %d, %d", tc.name, ends[merge], ends[send], tc.wantMerge, tc.wantS)
		}
	}
}

// TestPlacementOnHost: on a GPU-backend profile (gpu_scans_only) a scan
// pipeline marked plan.Pipeline.OnHost uploads nothing and runs its
// kernels on the host, as the engine's hybrid GPU runs do; unmarked, the
// same pipeline's units go over PCIe to the GPU; split (HostFrom), they
// are uploaded and the host runs the ops after the GPU's share.
func TestPlacementOnHost(t *testing.T) {
	prof, err := LoadProfile("h200-gpu-calibrated")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := queries.Stats(1, 131072)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := scheduler.NewPolicy("overlap", "")
	if err != nil {
		t.Fatal(err)
	}
	work := func(onHost bool, hostFrom int) (h2d, gpu, host float64) {
		pl, err := queries.Build("q6", 1, tables)
		if err != nil {
			t.Fatal(err)
		}
		pl.Pipelines[0].OnHost, pl.Pipelines[0].HostFrom = onHost, hostFrom
		rep, err := Simulate(context.Background(), pl, prof, 1, pol, nil, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Resources {
			switch r.Kind {
			case "h2d":
				h2d = r.Work
			case "gpu":
				gpu = r.Work
			case "host":
				host = r.Work
			}
		}
		return
	}
	h2d, gpu, host := work(false, 0)
	if h2d < 100<<20 || gpu <= 0 {
		t.Errorf("on the GPU: h2d %.0f B, gpu work %.0f ns: want the scan's columns uploaded and its kernels on the GPU", h2d, gpu)
	}
	h2dHost, gpuHost, hostHost := work(true, 0)
	if h2dHost != 0 || gpuHost != 0 || hostHost <= host {
		t.Errorf("on the host: h2d %.0f B, gpu %.0f ns, host %.0f ns (GPU placement: host %.0f ns): want no upload, no GPU work, more host work",
			h2dHost, gpuHost, hostHost, host)
	}
	// Split (scan and filter on the GPU): uploaded; the host runs the
	// rest over the rows the filter leaves (Q6 keeps about 2% of them), so
	// it does more than with the pipeline on the GPU (only the merges) and
	// far less than with all of it on the host; the GPU's share is the
	// kernel's latency, not work on the GPU resource.
	h2dSplit, gpuSplit, hostSplit := work(false, 2)
	if h2dSplit != h2d || gpuSplit != 0 || hostSplit <= host || hostSplit > hostHost/5 {
		t.Errorf("split: h2d %.0f B, gpu %.0f ns, host %.0f ns: want the upload (%.0f B), no GPU work, host work above the GPU placement's %.0f ns and below a fifth of the host placement's %.0f ns",
			h2dSplit, gpuSplit, hostSplit, h2d, host, hostHost)
	}
	t.Logf("host work: GPU placement %.0f ns, split %.0f ns, host placement %.0f ns", host, hostSplit, hostHost)
}

// TestClusterFoldsOneAtATime: host kernels of one device and pipeline fold
// their rows into the device's partial aggregate state one at a time (the
// engine holds the state's lock to fold), while the ops before the
// aggregate run side by side; other devices and pipelines fold at once,
// and a kernel keeps its CPU slot while it waits. Tiny profile, kernels on
// the host, one core each: launch 2 us; the filter prices 1e6 rows at 1 G
// rows/s (1 ms), the partial aggregate the half it keeps (0.5 ms).
func TestClusterFoldsOneAtATime(t *testing.T) {
	p, err := LoadProfile("testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Node.KernelsOnHost, p.Node.KernelThreads = true, 1
	p.Host.Ops[plan.OpFilter] = costmodel.OpCost{RowRate: 1e9}
	p.Host.Ops[plan.OpAggPartial] = costmodel.OpCost{RowRate: 1e9}
	ops := []plan.Op{{Kind: plan.OpScan, Selectivity: 1}, {Kind: plan.OpFilter, Selectivity: 0.5}, {Kind: plan.OpAggPartial, Keys: []string{"k"}, Selectivity: 0.01}}
	unit := func(dev, pipe, u int32) scheduler.Task {
		return scheduler.Task{Kind: scheduler.TaskKernel, Res: scheduler.Resource{Kind: scheduler.ResGPU}, Device: dev, Pipeline: pipe,
			Table: 0, Unit: u, Rows: 1e6, Ops: ops, OpKind: plan.OpAggPartial}
	}
	const first, fold = 2_000 + 1_000_000, 500_000
	for _, tc := range []struct {
		name  string
		slots int
		a, b  scheduler.Task
		want  [2][2]int64 // [start, end] of a and b
	}{
		{"same device and pipeline", 0, unit(0, 1, 0), unit(0, 1, 1), [2][2]int64{{0, first + fold}, {0, first + 2*fold}}},
		{"other devices", 0, unit(0, 1, 0), unit(1, 1, 1), [2][2]int64{{0, first + fold}, {0, first + fold}}},
		{"other pipelines", 0, unit(0, 1, 0), unit(0, 2, 1), [2][2]int64{{0, first + fold}, {0, first + fold}}},
		{"one CPU slot", 1, unit(0, 1, 0), unit(1, 1, 1), [2][2]int64{{0, first + fold}, {first + fold, 2 * (first + fold)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.Node.CPUSlots = tc.slots
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			c, err := NewCluster(p, 1)
			if err != nil {
				t.Fatal(err)
			}
			a, b := tc.a, tc.b
			for _, task := range []*scheduler.Task{&a, &b} {
				if err := c.Start(task); err != nil {
					t.Fatal(err)
				}
			}
			got := map[*scheduler.Task][2]int64{}
			for _, comp := range drain(t, c) {
				got[comp.Task] = [2]int64{int64(comp.Start), int64(comp.End)}
			}
			if got[&a] != tc.want[0] || got[&b] != tc.want[1] {
				t.Fatalf("a ran %v, b %v; want %v and %v", got[&a], got[&b], tc.want[0], tc.want[1])
			}
		})
	}
}

// TestLocalProfile: the profile LocalProfile picks is a shipped CPU-engine
// profile calibrated on a machine like this one; the fallback only where
// no shipped CPU-engine profile is.
func TestLocalProfile(t *testing.T) {
	here := costmodel.HostProvenance()
	got := LocalProfile("none")
	matching := 0
	for _, name := range ProfileNames() {
		p, err := LoadProfileLog(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.Provenance != nil && p.Node.KernelsOnHost && len(p.Provenance.Mismatch(here)) == 0 {
			matching++
			if got == "none" {
				t.Errorf("%s matches this machine, LocalProfile gave the fallback", name)
			}
		}
	}
	if got != "none" {
		p, err := LoadProfileLog(got, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := p.Provenance.Mismatch(here); len(d) > 0 || !p.Node.KernelsOnHost {
			t.Errorf("LocalProfile gave %s: mismatches %v, kernels on host %v", got, d, p.Node.KernelsOnHost)
		}
	}
	t.Logf("%s (%d shipped CPU-engine profiles match this machine)", got, matching)
}

// TestClusterColocationExempt: on a shared machine of 4 cores losing half
// its throughput at 8 kernels (node.colocation 0.5), 8 kernels of 1 ms of
// work each (2 per node on 4 nodes) take 1 ms / (4·0.5/8) = 4 ms; a kind
// in node.colocation_exempt is priced at half, so it takes the 2 ms the 8
// kernels take on 4 cores that lose nothing; the others still take 4.
func TestClusterColocationExempt(t *testing.T) {
	for _, tc := range []struct {
		kind   plan.OpKind
		exempt []string
		want   int64
	}{
		{plan.OpAggPartial, nil, 2_000 + 4_000_000},
		{plan.OpAggPartial, []string{"agg-partial", "agg-final"}, 2_000 + 2_000_000},
		{plan.OpFilter, []string{"agg-partial", "agg-final"}, 2_000 + 4_000_000},
	} {
		p, err := LoadProfile("testdata/profiles/tiny.yaml")
		if err != nil {
			t.Fatal(err)
		}
		p.Node.KernelsOnHost, p.Node.KernelThreads = true, 1
		p.Node.SharedMachine, p.Node.Colocation, p.Node.ColocationKernels = true, 0.5, 8
		p.Node.ColocationExempt = tc.exempt
		p.Host.Ops[plan.OpFilter] = costmodel.OpCost{RowRate: 1e9}
		p.Host.Ops[plan.OpAggPartial] = costmodel.OpCost{RowRate: 1e9}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		c, err := NewCluster(p, 4)
		if err != nil {
			t.Fatal(err)
		}
		ops := []plan.Op{{Kind: tc.kind, Keys: []string{"k"}, Selectivity: 0.01}}
		for nd := int32(0); nd < 4; nd++ {
			for dev := int32(0); dev < 2; dev++ {
				task := &scheduler.Task{Kind: scheduler.TaskKernel, Res: scheduler.Resource{Kind: scheduler.ResGPU, Node: nd}, Node: nd, Device: dev,
					Pipeline: 1, Table: -1, Unit: -1, Rows: 1e6, Ops: ops, OpKind: tc.kind}
				if err := c.Start(task); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, comp := range drain(t, c) {
			if d := int64(comp.End - comp.Start); d < tc.want-1 || d > tc.want+1 {
				t.Errorf("%s, exempt %v: a kernel took %d ns, want %d", tc.kind, tc.exempt, d, tc.want)
			}
		}
	}
}

// TestClusterCorun: on 2 host cores that lose a quarter with both busy
// (node.corun 0.25), a kernel of 1 ms of work alone takes 1 ms; two at
// once take 1.25 ms each.
func TestClusterCorun(t *testing.T) {
	for _, kernels := range []int32{1, 2} {
		p, err := LoadProfile("testdata/profiles/tiny.yaml")
		if err != nil {
			t.Fatal(err)
		}
		p.Node.KernelsOnHost, p.Node.KernelThreads, p.Node.HostCores, p.Node.Corun = true, 1, 2, 0.25
		p.Host.Ops[plan.OpFilter] = costmodel.OpCost{RowRate: 1e9}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		c, err := NewCluster(p, 1)
		if err != nil {
			t.Fatal(err)
		}
		ops := []plan.Op{{Kind: plan.OpFilter, Selectivity: 0.01}}
		for dev := range kernels {
			task := &scheduler.Task{Kind: scheduler.TaskKernel, Res: scheduler.Resource{Kind: scheduler.ResGPU}, Device: dev,
				Pipeline: 1, Table: -1, Unit: -1, Rows: 1e6, Ops: ops, OpKind: plan.OpFilter}
			if err := c.Start(task); err != nil {
				t.Fatal(err)
			}
		}
		want := int64(2_000 + 1_000_000)
		if kernels == 2 {
			want = 2_000 + 1_250_000
		}
		for _, comp := range drain(t, c) {
			if d := int64(comp.End - comp.Start); d < want-1 || d > want+1 {
				t.Errorf("%d kernels at once: one took %d ns, want %d", kernels, d, want)
			}
		}
	}
}

// node.corun is a loss between cores: not negative, and only with cores to
// share.
func TestProfileCorunInvalid(t *testing.T) {
	p, err := LoadProfile("testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Node.HostCores, p.Node.Corun = 2, -0.1
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "node.corun") {
		t.Errorf("negative corun: error %v", err)
	}
	p.Node.HostCores, p.Node.Corun = 1, 0.1
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "host_cores above 1") {
		t.Errorf("corun on one core: error %v", err)
	}
}

// A co-location exemption names operator kinds, and needs a co-location.
func TestProfileColocationExemptInvalid(t *testing.T) {
	p, err := LoadProfile("testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Node.SharedMachine, p.Node.Colocation, p.Node.ColocationKernels = true, 0.5, 8
	p.Node.ColocationExempt = []string{"agg-partial", "aggregate"}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "colocation_exempt") {
		t.Errorf("unknown kind: error %v", err)
	}
	p.Node.ColocationExempt, p.Node.Colocation = []string{"agg-final"}, 0
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "needs node.colocation") {
		t.Errorf("no co-location: error %v", err)
	}
}
