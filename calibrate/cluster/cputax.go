package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	ecluster "gostachio/engine/cluster"
	"gostachio/internal/stats"
)

// What the workers take from the machine beside the model (sim
// node.cpu_tax). Four worker processes on this 2-core machine used
// 1.24–1.77x the CPU time one process used for the same queries over the
// same four device groups (q3, q5, q7, q8, q9, q10, q12, q14, q18, q21 at
// 10 and 1 Gbit/s): their collectors, idle threads spinning for work, the
// exchange's encoding, decoding and system calls. Their operators' own
// thread CPU was what one process's was (query --op-times). Per second of
// the cluster's runs that is 0.29–0.61 of a core, which the simulator
// takes from the machine's cores while a query runs.
//
// MeasureCPUTax measures it on queries bench-sim does not validate: each
// runs on the emulated cluster and in one process with as many devices,
// in alternating rounds (so that the machine's drift reaches both alike:
// one round's taxes on 10 Gbit/s ranged from −0.20 to 0.52); per query
//
//	tax = (CPU_cluster − CPU_one) / wall_cluster
//
// over the medians of its timed runs (CPU: every process's user and system
// time during the run, engine.QueryResult.CPUNs), and the launch's tax is
// the median over the queries, in cores.

// DefaultTaxQueries are the queries the tax is measured on: the TPC-H
// queries with exchanges that bench-sim's validation (q3, q5, q9, q18)
// leaves out, from 0.14 to 0.66 s on 4 workers at 10 Gbit/s.
var DefaultTaxQueries = []string{"q7", "q8", "q10", "q12", "q14", "q21"}

// CPUTaxOptions configure MeasureCPUTax.
type CPUTaxOptions struct {
	// Exe is this binary (the workers and the single process run it).
	Exe  string
	Data string
	// Nodes workers of Devices devices each, over Link (network
	// namespaces); the single process runs Nodes·Devices devices.
	Nodes, Devices int
	Link           ecluster.Link
	// Queries (default DefaultTaxQueries), each Warmup untimed and Reps
	// timed runs per round (defaults 1 and 3), in Rounds rounds of the
	// cluster and then the single process (default 2).
	Queries              []string
	Warmup, Reps, Rounds int
}

// CPUTaxQuery is one query's measurement, seconds the medians of its
// timed runs.
type CPUTaxQuery struct {
	Query          string  `json:"query"`
	ClusterSeconds float64 `json:"cluster_s"`
	ClusterCPU     float64 `json:"cluster_cpu_s"`
	OneCPU         float64 `json:"one_process_cpu_s"`
	Tax            float64 `json:"cores"`
}

// CPUTaxResult is the measurement: Tax the median of the queries' taxes,
// in cores, never negative.
type CPUTaxResult struct {
	Tax     float64       `json:"cores"`
	Queries []CPUTaxQuery `json:"queries"`
}

// MeasureCPUTax runs o.Queries on the cluster and in one process and
// returns the tax (root and iproute2 needed for the cluster).
func MeasureCPUTax(ctx context.Context, o CPUTaxOptions, log io.Writer) (CPUTaxResult, error) {
	var res CPUTaxResult
	if len(o.Queries) == 0 {
		o.Queries = DefaultTaxQueries
	}
	if o.Reps < 1 {
		o.Reps = 3
	}
	if o.Rounds < 1 {
		o.Rounds = 2
	}
	if o.Warmup < 0 {
		return res, fmt.Errorf("cluster: cpu tax: %d warm-up runs: want 0 or more", o.Warmup)
	}
	if o.Nodes < 2 || o.Devices < 1 {
		return res, fmt.Errorf("cluster: cpu tax: %d workers of %d devices: need 2 workers or more", o.Nodes, o.Devices)
	}
	var list []string
	for range o.Warmup + o.Reps {
		list = append(list, o.Queries...)
	}
	args := []string{"--data", o.Data, "--query", strings.Join(list, ","), "--format", "json", "--no-verify"}
	cluster, one := map[string]cpuSeries{}, map[string]cpuSeries{}
	for round := range o.Rounds {
		var out bytes.Buffer
		if err := ecluster.Launch(ctx, ecluster.LaunchOptions{Nodes: o.Nodes, Exe: o.Exe, Netns: true, Link: o.Link,
			Args: append(slices.Clone(args), "--devices", strconv.Itoa(o.Devices))}, &out, log); err != nil {
			return res, fmt.Errorf("cluster: cpu tax: the cluster's runs, round %d: %w", round+1, err)
		}
		if err := cpuRuns(out.Bytes(), list, o.Warmup, "the cluster's", cluster); err != nil {
			return res, err
		}
		cmd := exec.CommandContext(ctx, o.Exe, append([]string{"query", "--devices", strconv.Itoa(o.Nodes * o.Devices)}, args...)...)
		var serr bytes.Buffer
		cmd.Stderr = &serr
		stdout, err := cmd.Output()
		if err != nil {
			return res, fmt.Errorf("cluster: cpu tax: the single process's runs, round %d: %v: %s", round+1, err, strings.TrimSpace(serr.String()))
		}
		if err := cpuRuns(stdout, list, o.Warmup, "the single process's", one); err != nil {
			return res, err
		}
	}
	var taxes []float64
	for _, q := range o.Queries {
		c, s := cluster[q], one[q]
		m := CPUTaxQuery{Query: q, ClusterSeconds: stats.Median(c.wall), ClusterCPU: stats.Median(c.cpu), OneCPU: stats.Median(s.cpu)}
		m.Tax = (m.ClusterCPU - m.OneCPU) / m.ClusterSeconds
		res.Queries = append(res.Queries, m)
		taxes = append(taxes, m.Tax)
	}
	res.Tax = max(stats.Median(taxes), 0)
	return res, nil
}

// cpuSeries are one query's timed runs: wall and CPU seconds.
type cpuSeries struct{ wall, cpu []float64 }

// cpuRuns reads a run list's JSON results (engine or cluster: query,
// seconds, cpu_ns) and adds each query's runs after its first warmup to
// out.
func cpuRuns(data []byte, list []string, warmup int, who string, out map[string]cpuSeries) error {
	var rs []struct {
		Query   string  `json:"query"`
		Seconds float64 `json:"seconds"`
		CPUNs   int64   `json:"cpu_ns"`
	}
	if err := json.Unmarshal(data, &rs); err != nil {
		return fmt.Errorf("cluster: cpu tax: %s results are unreadable (%v): %.200s", who, err, data)
	}
	if len(rs) != len(list) {
		return fmt.Errorf("cluster: cpu tax: %d of %s results for %d runs", len(rs), who, len(list))
	}
	seen := map[string]int{}
	for i, q := range list {
		r := rs[i]
		if !strings.EqualFold(r.Query, q) {
			return fmt.Errorf("cluster: cpu tax: %s result %d is of %q, not of %q", who, i+1, r.Query, q)
		}
		if r.CPUNs <= 0 || r.Seconds <= 0 {
			return fmt.Errorf("cluster: cpu tax: %s run %d of %s has no CPU time or wall time", who, i+1, q)
		}
		if seen[q]++; seen[q] <= warmup {
			continue
		}
		s := out[q]
		s.wall, s.cpu = append(s.wall, r.Seconds), append(s.cpu, float64(r.CPUNs)/1e9)
		out[q] = s
	}
	return nil
}

// describe is the one-line report of a measurement.
func (r CPUTaxResult) describe() string {
	parts := make([]string, len(r.Queries))
	for i, q := range r.Queries {
		parts[i] = fmt.Sprintf("%s %.2f", q.Query, q.Tax)
	}
	return fmt.Sprintf("%.3f cores (median of %s)", r.Tax, strings.Join(parts, ", "))
}
