package sim

import (
	"math"
	"slices"
	"testing"

	"gostachio/costmodel"
	"gostachio/plan"
	"gostachio/scheduler"
)

// gateRun starts tasks at time 0 on a one-node cluster of p and returns
// each task's [start, end].
func gateRun(t *testing.T, p *Profile, tasks []scheduler.Task) [][2]int64 {
	t.Helper()
	c, err := NewCluster(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range tasks {
		if err := c.Start(&tasks[i]); err != nil {
			t.Fatal(err)
		}
	}
	got := make([][2]int64, len(tasks))
	n := 0
	for _, comp := range drain(t, c) {
		for i := range tasks {
			if comp.Task == &tasks[i] {
				got[i] = [2]int64{int64(comp.Start), int64(comp.End)}
				n++
			}
		}
	}
	if n != len(tasks) {
		t.Fatalf("%d completions for %d tasks", n, len(tasks))
	}
	return got
}

// TestReadsFirstComeFirstServed: with a device queue depth, reads run in
// the order they were started, as many as their requests fit, so the
// first one finishes after its own time; without it they share the
// device and all finish together.
func TestReadsFirstComeFirstServed(t *testing.T) {
	p, err := LoadProfile("testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reads := func() []scheduler.Task {
		ts := make([]scheduler.Task, 4)
		for i := range ts {
			// 4 MiB = 4 requests of 1 MiB (task_qd 4): full bandwidth, 1 B/ns.
			ts[i] = scheduler.Task{Kind: scheduler.TaskRead, Res: scheduler.Resource{Kind: scheduler.ResNVMe}, Bytes: 4 << 20}
		}
		return ts
	}
	const alone = 100_000 + 4<<20 // latency + 4 MiB at 1 B/ns
	fifo := *p
	fifo.NVMe.DeviceQD = 4 // one task's 4 requests at a time
	for i, r := range gateRun(t, &fifo, reads()) {
		if want := [2]int64{int64(i) * alone, int64(i+1) * alone}; r != want {
			t.Errorf("device_qd 4: read %d ran %v, want %v", i, r, want)
		}
	}
	// Two at a time: 8 requests in flight (past the curve: full rate),
	// each pair sharing 1 B/ns.
	fifo.NVMe.DeviceQD = 8
	pair := int64(100_000 + 2*(4<<20))
	for i, r := range gateRun(t, &fifo, reads()) {
		if want := [2]int64{int64(i/2) * pair, int64(i/2+1) * pair}; r != want {
			t.Errorf("device_qd 8: read %d ran %v, want %v", i, r, want)
		}
	}
	// No device queue: all four share the device from the start.
	for i, r := range gateRun(t, p, reads()) {
		if want := [2]int64{0, 100_000 + 4*(4<<20)}; r != want {
			t.Errorf("no device_qd: read %d ran %v, want %v", i, r, want)
		}
	}
	fifo.NVMe.DeviceQD = -1
	if err := fifo.Validate(); err == nil {
		t.Error("negative device_qd accepted")
	}
}

// TestKernelsTakeCPUSlots: with cpu_slots, host kernels beyond the slots
// wait for one instead of slowing the running ones down.
func TestKernelsTakeCPUSlots(t *testing.T) {
	p, err := LoadProfile("testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	host := *p
	host.Node.KernelsOnHost, host.Node.HostCores, host.Node.KernelThreads = true, 2, 1
	agg := []plan.Op{{Kind: plan.OpAggFinal, Selectivity: 0.001, OutWidth: 8}}
	kernels := func() []scheduler.Task {
		ts := make([]scheduler.Task, 5)
		for i := range ts {
			// 1e6 rows at 1 G rows/s: 1 ms on one core, after a 2 µs launch.
			ts[i] = scheduler.Task{Kind: scheduler.TaskKernel, Res: scheduler.Resource{Kind: scheduler.ResGPU}, Device: int32(i % 2),
				Ops: agg, OpKind: plan.OpAggFinal, Rows: 1e6}
		}
		return ts
	}
	const one = 2_000 + 1_000_000
	host.Node.CPUSlots = 2
	for i, r := range gateRun(t, &host, kernels()) {
		if want := [2]int64{int64(i/2) * one, int64(i/2+1) * one}; r != want {
			t.Errorf("cpu_slots 2: kernel %d ran %v, want %v", i, r, want)
		}
	}
	// Processor sharing: five kernels on two cores, 0.4 core each.
	host.Node.CPUSlots = 0
	for i, r := range gateRun(t, &host, kernels()) {
		if want := [2]int64{0, 2_000 + 2_500_000}; r != want {
			t.Errorf("no cpu_slots: kernel %d ran %v, want %v", i, r, want)
		}
	}
	host.Node.CPUSlots, host.Node.KernelsOnHost = 2, false
	if err := host.Validate(); err == nil {
		t.Error("cpu_slots without kernels_on_host accepted")
	}
}

// TestReadsSlowHostKernels: with nvme.cpu_steal, a host kernel runs
// slower while a read streams (costmodel.Storage.CPUSteal), though a core
// is free beside it; the read itself keeps its time.
func TestReadsSlowHostKernels(t *testing.T) {
	p, err := LoadProfile("testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	host := *p
	host.Node.KernelsOnHost, host.Node.HostCores, host.Node.KernelThreads, host.Node.CPUSlots = true, 2, 1, 2
	agg := []plan.Op{{Kind: plan.OpAggFinal, Selectivity: 0.001, OutWidth: 8}}
	tasks := func() []scheduler.Task {
		return []scheduler.Task{
			// 4 MiB at 1 B/ns after 100 µs.
			{Kind: scheduler.TaskRead, Res: scheduler.Resource{Kind: scheduler.ResNVMe}, Bytes: 4 << 20},
			// 1e6 rows at 1 G rows/s: 1 ms of one core, after a 2 µs launch.
			{Kind: scheduler.TaskKernel, Res: scheduler.Resource{Kind: scheduler.ResGPU}, Ops: agg, OpKind: plan.OpAggFinal, Rows: 1e6},
		}
	}
	const read = 100_000 + 4<<20
	got := gateRun(t, &host, tasks())
	if want := [2]int64{0, read}; got[0] != want {
		t.Errorf("no steal: read ran %v, want %v", got[0], want)
	}
	if want := [2]int64{0, 2_000 + 1_000_000}; got[1] != want {
		t.Errorf("no steal: kernel ran %v, want %v", got[1], want)
	}
	// Steal 0.5 ns per byte at 1 B/ns: speed 2/3 once the read streams
	// (t = 100 µs). The kernel has done 98 µs of work by then; its other
	// 902 µs take 1353 µs.
	host.NVMe.CPUSteal = 0.5
	got = gateRun(t, &host, tasks())
	if want := [2]int64{0, read}; got[0] != want {
		t.Errorf("steal 0.5: read ran %v, want %v", got[0], want)
	}
	if want := [2]int64{0, 100_000 + 1_353_000}; got[1] != want {
		t.Errorf("steal 0.5: kernel ran %v, want %v", got[1], want)
	}
	host.NVMe.CPUSteal = -1
	if err := host.Validate(); err == nil {
		t.Error("negative cpu_steal accepted")
	}
}

// TestReadsCompleteInBatches: with nvme.completion batch, a read whose
// bytes are in waits for the device to run out of work, on one node and
// across the nodes of one machine, which share its disk.
func TestReadsCompleteInBatches(t *testing.T) {
	p, err := LoadProfile("testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	run := func(p *Profile, nodes int) [][2]int64 {
		c, err := NewCluster(p, nodes)
		if err != nil {
			t.Fatal(err)
		}
		// 4 MiB (4 requests) on node 0 and 1 MiB on the last node: 5
		// requests, past the curve's knee, 1 B/ns between them.
		ts := []scheduler.Task{
			{Kind: scheduler.TaskRead, Res: scheduler.Resource{Kind: scheduler.ResNVMe}, Bytes: 4 << 20},
			{Kind: scheduler.TaskRead, Node: int32(nodes - 1), Res: scheduler.Resource{Kind: scheduler.ResNVMe}, Bytes: 1 << 20},
		}
		for i := range ts {
			if err := c.Start(&ts[i]); err != nil {
				t.Fatal(err)
			}
		}
		got := make([][2]int64, len(ts))
		for _, comp := range drain(t, c) {
			for i := range ts {
				if comp.Task == &ts[i] {
					got[i] = [2]int64{int64(comp.Start), int64(comp.End)}
				}
			}
		}
		return got
	}
	const lat = 100_000
	// Processor sharing: 0.5 B/ns each until the 1 MiB is in (2 MiB
	// moved), then the 4 MiB read's other 3 MiB alone.
	small := int64(lat + 2<<20)
	all := int64(lat + 5<<20)
	want := [][2]int64{{0, all}, {0, small}}
	if got := run(p, 1); !slices.Equal(got, want) {
		t.Errorf("completion each: reads ran %v, want %v", got, want)
	}
	batch := *p
	batch.NVMe.Completion = costmodel.CompletionBatch
	want = [][2]int64{{0, all}, {0, all}}
	if got := run(&batch, 1); !slices.Equal(got, want) {
		t.Errorf("completion batch: reads ran %v, want %v", got, want)
	}
	// Two workers of one machine: one disk, one busy period.
	batch.Node.SharedMachine = true
	if got := run(&batch, 2); !slices.Equal(got, want) {
		t.Errorf("completion batch, 2 workers of one machine: reads ran %v, want %v", got, want)
	}
	// Two machines: each disk has its own busy period; the 1 MiB read
	// alone keeps one request outstanding, where the curve gives half the
	// bandwidth.
	batch.Node.SharedMachine = false
	want = [][2]int64{{0, lat + 4<<20}, {0, lat + 2<<20}}
	if got := run(&batch, 2); !slices.Equal(got, want) {
		t.Errorf("completion batch, 2 machines: reads ran %v, want %v", got, want)
	}
	batch.NVMe.Completion = "fifo"
	if err := batch.Validate(); err == nil {
		t.Error("nvme.completion fifo accepted")
	}
}

// TestCPUTax: node.cpu_tax takes its cores from a shared machine's host:
// four 1 ms kernels of two workers on 2 cores take 2 ms, on 2 − 0.5 cores
// 4/1.5 ms; a tax outside [0, host_cores) or off a shared machine is
// refused.
func TestCPUTax(t *testing.T) {
	p, err := LoadProfile("testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	host := *p
	host.Node.KernelsOnHost, host.Node.HostCores, host.Node.KernelThreads, host.Node.SharedMachine = true, 2, 1, true
	agg := []plan.Op{{Kind: plan.OpAggFinal, Selectivity: 0.001, OutWidth: 8}}
	run := func(p *Profile) []int64 {
		c, err := NewCluster(p, 2)
		if err != nil {
			t.Fatal(err)
		}
		ts := make([]scheduler.Task, 4)
		for i := range ts {
			// 1e6 rows at 1 G rows/s: 1 ms on one core, after a 2 µs launch.
			ts[i] = scheduler.Task{Kind: scheduler.TaskKernel, Node: int32(i % 2), Res: scheduler.Resource{Kind: scheduler.ResGPU},
				Ops: agg, OpKind: plan.OpAggFinal, Rows: 1e6}
			if err := c.Start(&ts[i]); err != nil {
				t.Fatal(err)
			}
		}
		var ends []int64
		for _, comp := range drain(t, c) {
			ends = append(ends, int64(comp.End))
		}
		return ends
	}
	for _, c := range []struct {
		tax float64
		end int64
	}{{0, 2_000 + 2_000_000}, {0.5, 2_000 + 2_666_667}} {
		host.Node.CPUTax = c.tax
		ends := run(&host)
		if len(ends) != 4 {
			t.Fatalf("tax %v: %d completions", c.tax, len(ends))
		}
		for _, e := range ends {
			if e < c.end-1 || e > c.end+1 {
				t.Errorf("tax %v: kernels ended at %v, want %d", c.tax, ends, c.end)
				break
			}
		}
	}
	for _, c := range []struct {
		tax    float64
		shared bool
	}{{-0.1, true}, {2, true}, {math.NaN(), true}, {0.5, false}} {
		host.Node.CPUTax, host.Node.SharedMachine = c.tax, c.shared
		if err := host.Validate(); err == nil {
			t.Errorf("cpu_tax %v (shared machine %v) accepted", c.tax, c.shared)
		}
	}
}
