package scheduler

import "gostachio/plan"

// View is what a policy's hooks see of one node's scheduler: the topology
// with every resource's rates, the knobs, the plan, and the live state
// (queues, units in flight, memory, bytes in flight and rates observed per
// resource). It is read-only; its methods are cheap (no allocation).
type View struct {
	s *Scheduler
}

// Topology is the cluster, with the rates the backend knows.
func (v *View) Topology() *Topology { return &v.s.topo }

// Config is the policy's resolved knobs.
func (v *View) Config() *Config { return &v.s.cfg }

// Plan is the plan being run (read-only).
func (v *View) Plan() *plan.Plan { return v.s.plan }

// Node is this scheduler's node.
func (v *View) Node() int { return int(v.s.node) }

// Devices is the devices of the node; Workers the devices of the cluster.
func (v *View) Devices() int { return v.s.topo.Devices }

// Workers: see Devices.
func (v *View) Workers() int { return v.s.workers() }

// InFlight is the units of device d in stage st now (their tasks or the
// stage's sync in flight).
func (v *View) InFlight(d int, st Stage) int { return int(v.s.devs[d].inflight[st]) }

// Waiting is the units of device d waiting to start stage st: not yet
// started for StageRead, done with the previous stage otherwise.
func (v *View) Waiting(d int, st Stage) int {
	dv := &v.s.devs[d]
	if st == StageRead {
		return len(dv.pending) - dv.head
	}
	return dv.qlen(int(st) - 1)
}

// Window is the scan units of device d between their first read and their
// end.
func (v *View) Window(d int) int { return int(v.s.devs[d].window) }

// Memory returns the node's pinned budget and its use now, and device d's
// budget and use now.
func (v *View) Memory(d int) (pinBudget, pinUsed, devBudget, devUsed int64) {
	return v.s.pinBud, v.s.pinUsed, v.s.devBud, v.s.devs[d].used
}

// Pipelines is the number of pipelines of the plan.
func (v *View) Pipelines() int { return len(v.s.pipes) }

// Pipe describes pipeline p on the node.
func (v *View) Pipe(p int) PipeInfo {
	ps := &v.s.pipes[p]
	left := 0
	for d := range ps.devs {
		left += int(ps.devs[d].units)
	}
	return PipeInfo{Scan: ps.p.Source.Kind == plan.SourceScan, Sink: ps.sink, PerUnitOut: ps.perUnitOut,
		DataDep: ps.dataDep, Started: ps.active, Done: ps.localDone, Units: int(ps.unitN), Left: left,
		Dependents: len(ps.dependents)}
}

// ScanBytes is the projected bytes of the chunks of scan pipeline p that
// survive pruning (over the whole table, every node's share).
func (v *View) ScanBytes(p int) int64 {
	ps := &v.s.pipes[p]
	if ps.p.Source.Kind != plan.SourceScan {
		return 0
	}
	t := &v.s.plan.Tables[ps.p.Source.Table]
	prune := ps.p.Ops[0].Prune
	var total int64
	for c := range t.Chunks {
		if t.Survives(c, prune) {
			for _, col := range ps.cols {
				total += t.Chunks[c].Bytes[col]
			}
		}
	}
	return total
}

// InFlightBytes is the bytes of the node's tasks on resource r that were
// started and have not completed (a send counts on its NIC egress). The
// scheduler keeps the per-resource state (InFlightBytes, InFlightTasks,
// Observed) for every policy but KnobHooks itself, which reads none of it.
func (v *View) InFlightBytes(r Resource) int64 {
	i := v.s.slot(r)
	if i < 0 {
		return 0
	}
	return v.s.resBytes[i]
}

// InFlightTasks is the node's tasks in flight on resource r.
func (v *View) InFlightTasks(r Resource) int {
	i := v.s.slot(r)
	if i < 0 {
		return 0
	}
	return int(v.s.resTasks[i])
}

// Observed is what the node's completions on resource r showed.
func (v *View) Observed(r Resource) Observed {
	i := v.s.slot(r)
	if i < 0 {
		return Observed{}
	}
	return v.s.resObs[i]
}

// slot is the index of resource r of this node in the per-resource
// arrays, or -1 for a resource the node does not track (another node's, a
// receiving NIC).
func (s *Scheduler) slot(r Resource) int {
	if r.Node != s.node || int(r.Kind) >= NumResourceKinds || r.Index < 0 {
		return -1
	}
	k := r.Kind
	if int(r.Index) >= int(s.resBase[k+1]-s.resBase[k]) {
		return -1
	}
	return int(s.resBase[k]) + int(r.Index)
}

// initResources lays out the per-resource live state of the node.
func (s *Scheduler) initResources() {
	n := int32(0)
	for k := ResourceKind(0); int(k) < NumResourceKinds; k++ {
		s.resBase[k] = n
		switch k {
		case ResNVMe:
			n += int32(s.topo.SSDs)
		case ResH2D, ResD2H, ResGPU:
			n += int32(s.topo.Devices)
		case ResNICOut:
			n += int32(s.topo.NICs)
		case ResHost:
			n++
		}
	}
	s.resBase[NumResourceKinds] = n
	s.resBytes = make([]int64, n)
	s.resTasks = make([]int32, n)
	s.resObs = make([]Observed, n)
	s.resEnd = make([]Time, n)
}

// startedTask adds a task handed to the backend to its resource's load.
func (s *Scheduler) startedTask(t *Task) {
	if i := s.slot(t.Res); i >= 0 {
		s.resBytes[i] += t.Bytes
		s.resTasks[i]++
	}
}

// observe removes a completed task from its resource's load and adds it
// to what the resource showed.
func (s *Scheduler) observe(c *Completion) {
	t := c.Task
	i := s.slot(t.Res)
	if i < 0 {
		return
	}
	s.resBytes[i] -= t.Bytes
	s.resTasks[i]--
	o := &s.resObs[i]
	o.Tasks++
	o.Bytes += t.Bytes
	if d := c.End - c.Start; d > 0 {
		o.Time += d
	}
	from := max(c.Start, s.resEnd[i])
	if c.End > from {
		o.Busy += c.End - from
	}
	s.resEnd[i] = max(s.resEnd[i], c.End)
}
