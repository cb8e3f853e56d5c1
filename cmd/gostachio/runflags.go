package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"gostachio/engine"
	"gostachio/internal/units"
	"gostachio/sim"
)

// runFlags are the query-run flags `query` and `worker` share; worker
// changes the wording where a cluster differs.
type runFlags struct {
	o            *engine.RunOptions
	mem          string
	gpuMem       string
	gpu          int
	ratesProfile string
}

func addRunFlags(f *pflag.FlagSet, o *engine.RunOptions, worker bool) *runFlags {
	rf := &runFlags{o: o}
	data, trace, mem, devices := "dataset directory (from gostachio gen)",
		"write a Perfetto/Chrome JSON trace to this file", "memory budget (I/O buffers + intermediate data)",
		"worker groups (default: one per CPU)"
	if worker {
		data = "dataset directory (the same path on every worker)"
		trace = "rank 0 writes every worker's tasks as one Perfetto/Chrome JSON trace here, one process per worker (several queries: one file each, the query name before the extension)"
		mem = "memory budget of each worker"
		devices = "worker groups per worker (default: rank 0's CPUs)"
	}
	f.StringVar(&o.Data, "data", "", data)
	f.StringVar(&o.Query, "query", "all", "q1..q22, a comma-separated list, or all")
	f.StringVar(&o.Policy, "policy", "overlap", "scheduling policy (see `gostachio policies`)")
	f.StringVar(&o.Set, "set", "", "policy knob overrides, e.g. chunk=8MiB,depth=4")
	f.StringVar(&o.Format, "format", "table", "result format: table, csv, json")
	f.StringVar(&o.Trace, "trace", "", trace)
	f.StringVar(&rf.mem, "mem", "4GiB", mem)
	f.IntVar(&o.Devices, "devices", 0, devices)
	f.BoolVar(&o.Buffered, "buffered", false, "read through the page cache instead of O_DIRECT")
	f.BoolVar(&o.NoVerify, "no-verify", false, "skip checking every buffer read against the CRC-32C the dataset's manifest recorded")
	f.StringVar(&o.IO, "io", "auto", "storage backend: auto, uring, pread")
	rf.gpu = -1
	if !worker {
		f.IntVar(&rf.gpu, "gpu", -1, "run the scan pipelines on this CUDA device (scan, filter, project and partial aggregates: all of Q1 and Q6; with --gpu-hybrid every query; --devices defaults to 1, with --gpu-hybrid to one per core; -1: the CPU engine)")
		f.StringVar(&rf.gpuMem, "gpu-mem", "", "device memory budget of --gpu (default: 90% of the free memory)")
		f.BoolVar(&o.GPUHybrid, "gpu-hybrid", false, "with --gpu: run the scan pipelines the GPU path cannot run on the host instead of refusing the query (stderr says which ran where)")
	}
	opTimes := "write the wall and thread CPU time and the input and output sizes of every operator the host runs, and each query run's process CPU time, to this CSV (for validate-ops)"
	if worker {
		opTimes = "every worker writes the times and sizes of every operator its host runs, and its process CPU time per query run, to this CSV path, with -rankK before the extension (for validate-ops)"
	}
	f.StringVar(&o.OpTimes, "op-times", "", opTimes)
	if !worker {
		f.StringVar(&rf.ratesProfile, "rates-profile", "", "hardware profile (name or .yaml) whose bandwidths and latencies the policy is told this machine has, e.g. a calibrated one (default: none; policies that size by rates learn them from completions)")
	}
	return rf
}

// resolve applies --json and parses --mem.
func (rf *runFlags) resolve(g *globals) error {
	if g.json {
		rf.o.Format = "json"
	}
	if rf.mem != "" {
		n, err := units.ParseBytes(rf.mem)
		if err != nil {
			return err
		}
		rf.o.Mem = n
	}
	if rf.o.Devices < 0 {
		return fmt.Errorf("--devices %d: want a positive number of worker groups (0 or no flag: the default)", rf.o.Devices)
	}
	rf.o.UseGPU, rf.o.GPUOrdinal = rf.gpu >= 0, rf.gpu
	if rf.o.GPUHybrid && !rf.o.UseGPU {
		return fmt.Errorf("--gpu-hybrid needs --gpu N")
	}
	if rf.gpuMem != "" {
		n, err := units.ParseBytes(rf.gpuMem)
		if err != nil {
			return err
		}
		rf.o.GPUMem = n
	}
	if rf.ratesProfile != "" {
		p, err := sim.LoadProfile(rf.ratesProfile)
		if err != nil {
			return fmt.Errorf("--rates-profile: %w", err)
		}
		rf.o.Rates = p.Rates()
	}
	return nil
}
