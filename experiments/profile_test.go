package experiments

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gostachio/costmodel"
	"gostachio/sim"
)

// writeProfileCopy writes the shipped profile name to path with its NVMe
// bandwidth scaled by nvme.
func writeProfileCopy(t *testing.T, name, path string, nvme float64) {
	t.Helper()
	p, err := sim.LoadProfileLog(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.NVMe.Bandwidth = costmodel.Rate(float64(p.NVMe.Bandwidth) * nvme)
	if err := sim.WriteProfile(path, p, "a copy for the tests"); err != nil {
		t.Fatal(err)
	}
}

// runLog runs the spec at path into out and returns what it said on
// stderr.
func runLog(t *testing.T, path, out string) string {
	t.Helper()
	s := mustSpec(t, path)
	var log bytes.Buffer
	if err := RunSpec(context.Background(), RunOptions{Spec: s, Out: out, Now: fakeClock()}, &bytes.Buffer{}, &log); err != nil {
		t.Fatal(err)
	}
	return log.String()
}

// TestEditedProfileReruns writes a spec and a profile in a folder, runs
// the spec, halves the profile's NVMe bandwidth and runs it again: every
// run must run again (their keys hash the profile's content), on the new
// hardware model, with the old results kept aside in superseded.csv and
// meta.json recording the new profile's content. Unchanged, a third run
// has nothing to do.
func TestEditedProfileReruns(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "hw.yaml")
	writeProfileCopy(t, "dgx-a100", prof, 1)
	spec := filepath.Join(dir, "exp.yaml")
	// An absolute profile path: what was already resolved before relative
	// paths were read from the spec's folder.
	if err := os.WriteFile(spec, []byte("backend: sim\nsf: 0.5\nprofile: "+prof+"\nqueries: [q6, q1]\npolicies: [serial, overlap]\nreps: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if log := runLog(t, spec, out); !strings.Contains(log, "8 runs in shard 0/1, 0 already stored, 8 to run") {
		t.Fatalf("first run said %q", log)
	}
	before, err := ReadResults(out)
	if err != nil {
		t.Fatal(err)
	}

	writeProfileCopy(t, "dgx-a100", prof, 0.5)
	log := runLog(t, spec, out)
	if !strings.Contains(log, "0 already stored, 8 to run") || !strings.Contains(log, "8 stored results are of another profile content") {
		t.Fatalf("after editing the profile's NVMe bandwidth, run said %q; want all 8 runs to run again", log)
	}
	after, err := ReadResults(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 8 {
		t.Fatalf("%d results after the re-run, want 8 (the old ones moved aside)", len(after))
	}
	old := map[string]float64{}
	for _, r := range before {
		old[KeyID(r.Key)] = r.Seconds
	}
	slower := 0
	for _, r := range after {
		if r.Seconds > old[KeyID(r.Key)] {
			slower++
		}
	}
	if slower == 0 {
		t.Error("no run is slower on half the NVMe bandwidth: the old model was reused")
	}
	sup, err := ReadResults(filepath.Join(out, SupersededFile))
	if err != nil || len(sup) != 8 {
		t.Fatalf("superseded.csv: %d results, %v; want the 8 first ones", len(sup), err)
	}
	m, err := ReadMeta(out)
	if err != nil {
		t.Fatal(err)
	}
	edited, _ := sim.LoadProfileLog(prof, nil)
	if want, _ := ProfileHash(edited); m.ProfileHash != want || !strings.Contains(m.ProfileContent, "bandwidth: 3.2GiB/s") || m.Superseded != 8 {
		t.Errorf("meta.json: profile hash %s (want %s), superseded %d, content:\n%s", m.ProfileHash, want, m.Superseded, m.ProfileContent)
	}
	if log := runLog(t, spec, out); !strings.Contains(log, "8 already stored, 0 to run") {
		t.Errorf("unchanged, the third run said %q", log)
	}
}

// TestUnhashedResultsRerun stores results under keys without hashes (as
// stored before keys carried them): they still read, and run again.
func TestUnhashedResultsRerun(t *testing.T) {
	dir := t.TempDir()
	s := mustSpec(t, "testdata/small.yaml")
	var old []Result
	for _, r := range s.Runs() {
		old = append(old, Result{Key: r.ID(), Spec: s.Hash, Backend: "sim", Profile: s.Profile, Nodes: 1, SF: 0.5,
			Query: r.Query, Policy: r.Label, Set: r.PolicySet, Rep: r.Rep, Seconds: 1})
	}
	if err := WriteResults(dir, old); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadResults(dir); err != nil {
		t.Fatalf("a results table with unhashed keys does not read: %v", err)
	}
	var log bytes.Buffer
	if err := RunSpec(context.Background(), RunOptions{Spec: s, Out: dir}, &bytes.Buffer{}, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "18 stored results have keys without the profile and policy hashes") ||
		!strings.Contains(log.String(), "0 already stored, 18 to run") {
		t.Errorf("run said %q", log.String())
	}
	rs, _ := ReadResults(dir)
	for _, r := range rs {
		if !KeyHashed(r.Key) || r.Seconds == 1 {
			t.Fatalf("result %s (%v s) kept from the unhashed table", r.Key, r.Seconds)
		}
	}
}

// TestProfileSet sweeps the NVMe bandwidth of a profile given by a path
// relative to the spec's folder: every point simulates its own profile
// (a scan-bound query is faster on faster disks) under its own hash.
func TestProfileSet(t *testing.T) {
	dir := t.TempDir()
	writeProfileCopy(t, "dgx-a100", filepath.Join(dir, "hw.yaml"), 1)
	spec := filepath.Join(dir, "exp.yaml")
	if err := os.WriteFile(spec, []byte(`backend: sim
sf: 0.5
profile: hw.yaml
queries: [q6]
policies: [overlap]
profile_set:
  nvme.bandwidth: [1GB/s, 4GB/s]
  node.device_memory: 40GiB
reps: 1
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := mustSpec(t, spec)
	if s.ProfilePath != filepath.Join(dir, "hw.yaml") {
		t.Errorf("profile path %q, want it resolved from the spec's folder", s.ProfilePath)
	}
	runs := s.Runs()
	if len(runs) != 2 || runs[0].ProfileSet != "nvme.bandwidth=1GB/s,node.device_memory=40GiB" || runs[0].ProfileHash == runs[1].ProfileHash {
		t.Fatalf("runs %+v", runs)
	}
	p, _, err := s.ResolvedProfile(runs[1].ProfileSet)
	if err != nil || p.NVMe.Bandwidth != 4e9 || p.Node.DeviceMemory != 40<<30 {
		t.Fatalf("profile of %s: nvme %v, device memory %v (%v)", runs[1].ProfileSet, p.NVMe.Bandwidth, p.Node.DeviceMemory, err)
	}
	out := filepath.Join(dir, "out")
	runLog(t, spec, out)
	rs, _ := ReadResults(out)
	sec := map[string]float64{}
	for _, r := range rs {
		sec[r.SweepValue("nvme.bandwidth")] = r.Seconds
	}
	if !(sec["1GB/s"] > sec["4GB/s"]) {
		t.Errorf("q6 took %v s on 1 GB/s disks, %v s on 4 GB/s", sec["1GB/s"], sec["4GB/s"])
	}
	m, _ := ReadMeta(out)
	if len(m.ProfilePoints) != 2 {
		t.Errorf("meta.json profile points %v", m.ProfilePoints)
	}
}

// TestProfileSetErrors checks that bad profile axes fail naming the line.
func TestProfileSetErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ set, want string }{
		{"  nvme.bandwith: [7GB/s]", `line 7: no such profile field "nvme.bandwith"`},
		{"  nvme.bandwidth: [7GB/s, fast]", `line 7: sim: profile`},
		{"  nvme.bandwidth: [-1GB/s]", `line 7: sim: profile`},
		{"  nvme: [7GB/s]", `line 7: no such profile field "nvme"`},
		{"  depth: [1]", `line 7: profile_set "depth": the name of a knob`},
	} {
		spec := filepath.Join(dir, "bad.yaml")
		data := "backend: sim\nsf: 1\nqueries: [q6]\npolicies: [overlap]\nreps: 1\nprofile_set:\n" + c.set + "\n"
		if err := os.WriteFile(spec, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ParseSpec(spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.set, err, c.want)
		}
	}
}
