package sim

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"gostachio/costmodel"
)

// ResourceReport aggregates the links of one kind over the cluster.
// Definitions (per link l of the kind, makespan M):
//
//	work_l   units that crossed l (bytes; busy-ns for gpu and host)
//	cap_l    peak capacity (units/s; the top of the NVMe queue-depth curve)
//	util_l   = work_l / (cap_l · M)          (share of capacity used)
//	busy_l   = time with at least one flow on l / M
//	achieved = Σ work_l / Σ busy time_l        (rate while busy)
//	bound_l  = work_l / cap_l                  (time l alone needs)
type ResourceReport struct {
	Kind  string `json:"kind"`
	Count int    `json:"count"`
	// Unit of Work: "B" or "ns" (busy device/core time).
	Unit string `json:"unit"`
	// Capacity per link, units per second (cores for host: core-ns per ns
	// times 1e9).
	Capacity float64 `json:"capacity_per_s"`
	Work     float64 `json:"work"`
	// Util and Busy are means over the kind's links; UtilMax the largest.
	Util    float64 `json:"util"`
	UtilMax float64 `json:"util_max"`
	Busy    float64 `json:"busy"`
	// Achieved is the mean rate while busy (units/s).
	Achieved float64 `json:"achieved_per_s"`
	// BoundNs is the largest bound_l of the kind.
	BoundNs int64 `json:"bound_ns"`
}

// Report is what a simulated run measured.
type Report struct {
	Profile string  `json:"profile"`
	Nodes   int     `json:"nodes"`
	Query   string  `json:"query,omitempty"`
	SF      float64 `json:"sf,omitempty"`
	Policy  string  `json:"policy,omitempty"`
	// Net is the network model of sends (NetModels).
	Net        string `json:"net,omitempty"`
	MakespanNs int64  `json:"makespan_ns"`
	// BoundNs = max over links of work/capacity; BoundBy names that link.
	BoundNs int64  `json:"bound_ns"`
	BoundBy string `json:"bound_by"`
	// Efficiency is the overlap efficiency BoundNs / MakespanNs.
	Efficiency  float64          `json:"overlap_efficiency"`
	Tasks       int64            `json:"tasks"`
	Events      int64            `json:"events"`
	ResultRows  int64            `json:"result_rows"`
	PeakPinned  int64            `json:"peak_pinned_bytes"`
	PeakDevice  int64            `json:"peak_device_bytes"`
	Resources   []ResourceReport `json:"resources"`
	TasksByKind map[string]int64 `json:"tasks_by_kind"`
}

// Bound returns max over links of work/peak capacity in ns (the analytic
// lower bound of the makespan when every resource is perfectly overlapped,
// latencies ignored) and the link that attains it.
func (c *Cluster) Bound() (ns float64, at LinkInfo) {
	for i := range c.info {
		_, work, peak := c.net.LinkStats(LinkID(i))
		if peak <= 0 {
			continue
		}
		if b := work / peak; b > ns {
			ns, at = b, c.info[i]
		}
	}
	return ns, at
}

// Resources aggregates link statistics by kind for a run of makespan ns.
func (c *Cluster) Resources(makespan int64) []ResourceReport {
	var out []ResourceReport
	for k := LinkKind(0); k < numLinkKinds; k++ {
		var r ResourceReport
		var busyNs float64
		for i, li := range c.info {
			if li.Kind != k {
				continue
			}
			busy, work, peak := c.net.LinkStats(LinkID(i))
			r.Count++
			r.Capacity = peak * 1e9
			r.Work += work
			busyNs += float64(busy)
			if makespan > 0 && peak > 0 {
				u := work / (peak * float64(makespan))
				r.Util += u
				r.UtilMax = max(r.UtilMax, u)
				r.Busy += float64(busy) / float64(makespan)
			}
			if peak > 0 {
				r.BoundNs = max(r.BoundNs, int64(work/peak))
			}
		}
		if r.Count == 0 {
			continue
		}
		r.Kind, r.Unit = k.String(), k.Unit()
		r.Util /= float64(r.Count)
		r.Busy /= float64(r.Count)
		if busyNs > 0 {
			r.Achieved = r.Work / busyNs * 1e9
		}
		out = append(out, r)
	}
	return out
}

// WriteText prints r for people.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "profile %s x %d nodes", r.Profile, r.Nodes)
	if r.Query != "" {
		fmt.Fprintf(w, ", %s at SF%g", r.Query, r.SF)
	}
	if r.Policy != "" {
		fmt.Fprintf(w, ", policy %s", r.Policy)
	}
	if r.Net != "" && r.Net != NetFluid {
		fmt.Fprintf(w, ", %s network (approximate)", r.Net)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "makespan   %v\n", time.Duration(r.MakespanNs))
	fmt.Fprintf(w, "bound      %v (%s)\n", time.Duration(r.BoundNs), r.BoundBy)
	fmt.Fprintf(w, "efficiency %.1f%% (bound / makespan)\n", 100*r.Efficiency)
	fmt.Fprintf(w, "tasks      %d (%d events); result rows %d; peak pinned %s, peak device %s\n\n",
		r.Tasks, r.Events, r.ResultRows, fmtBytes(float64(r.PeakPinned)), fmtBytes(float64(r.PeakDevice)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "resource\tn\tcapacity each\twork\tutil\tutil max\tbusy\tachieved\tbound\t")
	for _, x := range r.Resources {
		capS, workS, achS := fmtBytes(x.Capacity)+"/s", fmtBytes(x.Work), fmtBytes(x.Achieved)+"/s"
		if x.Unit == "ns" {
			capS = fmt.Sprintf("%g cores", x.Capacity/1e9)
			if x.Kind == LinkGPU.String() {
				capS = "1 device"
			}
			workS = time.Duration(int64(x.Work)).Round(time.Microsecond).String()
			achS = fmt.Sprintf("%.2f cores", x.Achieved/1e9)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.1f%%\t%.1f%%\t%.1f%%\t%s\t%v\t\n", x.Kind, x.Count, capS, workS,
			100*x.Util, 100*x.UtilMax, 100*x.Busy, achS, time.Duration(x.BoundNs).Round(time.Microsecond))
	}
	return tw.Flush()
}

// fmtBytes formats a byte count with a decimal (SI) prefix, 4 digits.
func fmtBytes(v float64) string {
	s := costmodel.Rate(v).String()
	return s[:len(s)-len("/s")]
}
