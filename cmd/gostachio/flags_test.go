package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestFlagsRejected runs the command tree on flags that are out of range
// and checks each is refused with an error naming the flag, before any
// work starts (no dataset is opened: the paths do not exist).
func TestFlagsRejected(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--nodes", "0", "--query", "q1"}, "--nodes 0 must be at least 1"},
		{[]string{"tune", "--nodes", "0", "--query", "q1"}, "--nodes 0 must be at least 1"},
		{[]string{"tune", "--validate", "--query", "q1"}, "--validate runs the engine: give its dataset with --data"},
		{[]string{"tune", "--range", "depth"}, `--range "depth"`},
		{[]string{"tune", "--knobs", "chunk", "--range", "depth=1:4"}, "--range depth: the knob is not searched"},
		{[]string{"demo", "--rounds", "0"}, "--rounds 0 must be at least 1"},
		{[]string{"sim", "--nodes", "-2", "--query", "q1"}, "--nodes -2 must be at least 1"},
		{[]string{"query", "--data", "/nonexistent", "--devices", "-3"}, "--devices -3"},
		{[]string{"query", "--data", "/nonexistent", "--gpu-hybrid"}, "--gpu-hybrid needs --gpu"},
		{[]string{"query", "--data", "/nonexistent", "--mem", "lots"}, `"lots" is not a byte size`},
		{[]string{"bench", "tpch", "--data", "/nonexistent", "--devices", "-1"}, "--devices -1"},
		{[]string{"gen", "--sf", "0", "--out", "/nonexistent/x"}, "scale factor 0"},
		{[]string{"partition", "/nonexistent", "--partitions", "0", "--out", "/nonexistent/y"}, "--partitions 0"},
		{[]string{"cluster", "bench-fabric", "--link", "1Gbit", "--frames", "0"}, "--frames 0 must be at least 1"},
		{[]string{"cluster", "bench-fabric", "--link", "1Gbit", "--nodes", "1"}, "--nodes 1 must be at least 2"},
		{[]string{"cluster", "bench-fabric", "--link", "1Gbit", "--rounds", "-1"}, "--rounds -1 must be at least 1"},
		{[]string{"cluster", "bench-fabric", "--link", "1Gbit", "--frame", "4B"}, "--frame 4 must be at least 8"},
		{[]string{"cluster", "bench-fabric"}, "--link needs a rate"},
		{[]string{"cluster", "bench-fabric", "--from", "saved.json"}, "--from refits saved bursts: it needs --profile"},
		{[]string{"cluster", "bench-fabric", "--link", "1Gbit", "--pair-bytes", "64KiB,0"}, `--pair-bytes "0": want a positive size`},
		{[]string{"cluster", "bench-fabric", "--link", "1Gbit", "--pair-bytes", "64KiB,lots"}, `--pair-bytes "lots"`},
		{[]string{"validate-reference", "--data", "/nonexistent", "--seconds", "0"}, "--seconds 0"},
		{[]string{"validate-reference", "--data", "/nonexistent", "--block", "-1s"}, "--block -1"},
		{[]string{"validate-reference", "--data", "/nonexistent", "--warmup", "-1"}, "--warmup -1"},
		{[]string{"cluster", "bench-sim", "--data", "/nonexistent", "--link", "1Gbit", "--net-cpu-from", "x"}, "--net-cpu-from \"x\""},
		{[]string{"validate-reprice", "--data", "/nonexistent", "/nonexistent-out"}, "profiles"},
		{[]string{"validate-reprice", "--data", "/nonexistent", "--profiles", "devbox", "/nonexistent-out"}, "/nonexistent-out/validations.jsonl: not found"},
	} {
		root := newRoot()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(tc.args)
		err := root.ExecuteContext(context.Background())
		if err == nil {
			t.Errorf("%s: accepted (stdout %q)", strings.Join(tc.args, " "), out.String())
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q, want it to contain %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// TestWorkerArgs: `gostachio --json cluster -- query ...` hands --json to
// the workers, whose rank 0 prints the results.
func TestWorkerArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		json bool
		want string
	}{
		{[]string{"query", "--data", "d"}, false, "--data d"},
		{[]string{"--data", "d"}, true, "--json --data d"},
		{[]string{"query", "--json", "--data", "d"}, true, "--json --data d"},
	} {
		if got := strings.Join(workerArgs(tc.args, tc.json), " "); got != tc.want {
			t.Errorf("workerArgs(%q, %v) = %q, want %q", tc.args, tc.json, got, tc.want)
		}
	}
}
