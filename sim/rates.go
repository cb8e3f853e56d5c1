package sim

import (
	"gostachio/plan"
	"gostachio/scheduler"
)

// Rates is what the profile says of each resource's speed, in the form the
// scheduler hands to policies (scheduler.Topology.Rates): one SSD, one
// device's PCIe link per direction, one device's streaming compute (the
// scan operator's byte rate: on the host's cores, times the threads one
// kernel may use, when kernels run there), one NIC port, and the host
// round trip of a sync. The simulator does not read them back: its model
// is the profile itself, these are a policy's summary of it.
func (p *Profile) Rates() [scheduler.NumResourceKinds]scheduler.Rate {
	var r [scheduler.NumResourceKinds]scheduler.Rate
	r[scheduler.ResNVMe] = scheduler.Rate{Bandwidth: float64(p.NVMe.Bandwidth), Latency: scheduler.Time(p.NVMe.Latency.Ns())}
	r[scheduler.ResH2D] = scheduler.Rate{Bandwidth: float64(p.PCIe.H2D), Latency: scheduler.Time(p.PCIe.Latency.Ns())}
	r[scheduler.ResD2H] = scheduler.Rate{Bandwidth: float64(p.PCIe.D2H), Latency: scheduler.Time(p.PCIe.Latency.Ns())}
	if p.Node.KernelsOnHost {
		threads := p.Node.KernelThreads
		if threads <= 0 {
			threads = p.Node.HostCores
		}
		r[scheduler.ResGPU] = scheduler.Rate{Bandwidth: float64(p.Host.Ops[plan.OpScan].ByteRate) * threads, Latency: scheduler.Time(p.Host.Launch.Ns())}
	} else {
		r[scheduler.ResGPU] = scheduler.Rate{Bandwidth: float64(p.GPU.Ops[plan.OpScan].ByteRate), Latency: scheduler.Time(p.GPU.Launch.Ns())}
	}
	nic := scheduler.Rate{Bandwidth: float64(p.NIC.Bandwidth), Latency: scheduler.Time(p.NIC.Latency.Ns())}
	r[scheduler.ResNICOut], r[scheduler.ResNICIn] = nic, nic
	r[scheduler.ResHost] = scheduler.Rate{Latency: scheduler.Time(p.SyncLatency.Ns())}
	return r
}
