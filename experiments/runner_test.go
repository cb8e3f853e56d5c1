package experiments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gostachio/sim"
	"gostachio/tpch/queries"
)

// fakeClock returns a clock that advances a second per call.
func fakeClock() func() time.Time {
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

func mustSpec(t *testing.T, path string) *Spec {
	t.Helper()
	s, err := ParseSpec(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func run(t *testing.T, opts RunOptions) error {
	t.Helper()
	if opts.Now == nil {
		opts.Now = fakeClock()
	}
	return RunSpec(context.Background(), opts, io.Discard, io.Discard)
}

// byKey indexes results, failing on a duplicate key.
func byKey(t *testing.T, rs []Result) map[string]Result {
	t.Helper()
	m := map[string]Result{}
	for _, r := range rs {
		if _, dup := m[r.Key]; dup {
			t.Fatalf("key %s stored twice", r.Key)
		}
		m[r.Key] = r
	}
	return m
}

// complete checks that dir holds every run of s exactly once, with the
// fields of its Run, and equal measurements to ref (when given).
func complete(t *testing.T, s *Spec, dir string, ref map[string]Result) map[string]Result {
	t.Helper()
	rs, err := ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := byKey(t, rs)
	runs := s.Runs()
	if len(got) != len(runs) {
		t.Errorf("%s: %d results, want %d", dir, len(got), len(runs))
	}
	for _, r := range runs {
		g, ok := got[r.Key]
		if !ok {
			t.Errorf("%s: run %s missing", dir, r.Key)
			continue
		}
		if g.Spec != s.Hash || g.Backend != "sim" || g.Query != r.Query || g.Policy != r.Label || g.Set != r.PolicySet ||
			g.Sweep != r.Sweep || g.Rep != r.Rep || g.Nodes != r.Nodes || g.SF != r.SF || !(g.Seconds > 0) ||
			!(g.Efficiency > 0 && g.Efficiency <= 1) || g.Bound > g.Seconds || len(g.Util) == 0 || g.Started == "" {
			t.Errorf("%s: result %+v does not match run %+v", dir, g, r)
		}
		if ref != nil && ref[r.Key].Seconds != g.Seconds {
			t.Errorf("%s: %s took %v, %v in the reference run", dir, r.Key, g.Seconds, ref[r.Key].Seconds)
		}
	}
	return got
}

// TestRunSpecResume interrupts an experiment after k runs (through
// OnResult), resumes it, and checks that every run is stored exactly once
// with the same measurements as an uninterrupted run (jitter is seeded per
// run key, not per position), and that meta.json records both invocations.
func TestRunSpecResume(t *testing.T) {
	s := mustSpec(t, "testdata/small.yaml")
	refDir := filepath.Join(t.TempDir(), "ref")
	if err := run(t, RunOptions{Spec: s, Out: refDir}); err != nil {
		t.Fatal(err)
	}
	ref := complete(t, s, refDir, nil)
	// Repetitions differ (jitter), alternatives too.
	byID := map[string]Result{}
	for _, r := range ref {
		byID[KeyID(r.Key)] = r
	}
	if byID["q1|serial|rep=0"].Seconds == byID["q1|serial|rep=1"].Seconds {
		t.Error("jitter: repetitions took the same time")
	}

	dir := filepath.Join(t.TempDir(), "out")
	stop := errors.New("stop")
	n := 0
	err := run(t, RunOptions{Spec: s, Out: dir, OnResult: func(Result) error {
		if n++; n == 7 {
			return stop
		}
		return nil
	}})
	if !errors.Is(err, stop) {
		t.Fatalf("interrupted run: %v, want the hook's error", err)
	}
	rs, err := ReadResults(dir)
	if err != nil || len(rs) != 7 {
		t.Fatalf("after the interruption: %d results, %v; want 7", len(rs), err)
	}
	// The first 7 stored are the first 7 of the order.
	for i, r := range rs {
		if want := s.Order()[i].Key; r.Key != want {
			t.Errorf("result %d is %s, want %s (run order)", i, r.Key, want)
		}
	}
	var calls int
	if err := run(t, RunOptions{Spec: s, Out: dir, OnResult: func(Result) error { calls++; return nil }}); err != nil {
		t.Fatal(err)
	}
	if calls != len(s.Runs())-7 {
		t.Errorf("resumed run did %d runs, want %d", calls, len(s.Runs())-7)
	}
	complete(t, s, dir, ref)
	// Nothing left: a third invocation runs nothing.
	calls = 0
	if err := run(t, RunOptions{Spec: s, Out: dir, OnResult: func(Result) error { calls++; return nil }}); err != nil || calls != 0 {
		t.Errorf("complete experiment re-ran %d runs (%v)", calls, err)
	}
	m, err := ReadMeta(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.SpecHash != s.Hash || m.SpecPath != s.Path || m.Profile != "dgx-a100" || m.Backend != "sim" || m.GitRevision == "" ||
		m.Machine.Hostname == "" || m.Machine.CPUs < 1 || len(m.Sessions) != 3 || m.Sessions[1].Planned != len(s.Runs())-7 ||
		len(m.Policies) != 2 || m.Policies[1] != (PolicySpec{Name: "ovl", Policy: "overlap", Set: "depth=4"}) {
		t.Errorf("meta %+v", m)
	}
	spec, _ := os.ReadFile(filepath.Join(dir, SpecFile))
	orig, _ := os.ReadFile(s.Path)
	if !bytes.Equal(spec, orig) {
		t.Error("spec.yaml is not a copy of the spec")
	}

	// A folder of another spec is refused.
	other := mustSpec(t, "testdata/sweep.yaml")
	if err := run(t, RunOptions{Spec: other, Out: dir}); err == nil || !strings.Contains(err.Error(), "use another --out") {
		t.Errorf("running another spec into the folder: %v", err)
	}
}

// TestRunSpecCancel cancels the context after 4 runs: RunSpec stops with
// the context's error before the next run, and a rerun completes.
func TestRunSpecCancel(t *testing.T) {
	s := mustSpec(t, "testdata/small.yaml")
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := RunSpec(ctx, RunOptions{Spec: s, Out: dir, Now: fakeClock(), OnResult: func(Result) error {
		if n++; n == 4 {
			cancel()
		}
		return nil
	}}, io.Discard, io.Discard)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	if rs, _ := ReadResults(dir); len(rs) != 4 {
		t.Fatalf("%d results after cancelling at 4", len(rs))
	}
	if err := run(t, RunOptions{Spec: s, Out: dir}); err != nil {
		t.Fatal(err)
	}
	complete(t, s, dir, nil)
}

// TestRunSpecChild is the child process of TestRunSpecKill: it runs
// testdata/kill.yaml (runs of tens of milliseconds, most of it simulating)
// into the folder the parent names, until killed.
func TestRunSpecChild(t *testing.T) {
	dir := os.Getenv("GOSTACHIO_RUNSPEC_CHILD")
	if dir == "" {
		t.Skip("child process of TestRunSpecKill")
	}
	run(t, RunOptions{Spec: mustSpec(t, "testdata/kill.yaml"), Out: dir})
}

// TestRunSpecKill kills (SIGKILL) a runner process half-way through an
// experiment, most likely in the middle of a run, then resumes it: the
// store must read back whole rows, and the resumed experiment must hold
// every run exactly once, measured as an uninterrupted run measures it.
func TestRunSpecKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	s := mustSpec(t, "testdata/kill.yaml")
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunSpecChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GOSTACHIO_RUNSPEC_CHILD="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	stored := 0
	for stored < 3 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("child stored %d runs in 20 s", stored)
		}
		select {
		case err := <-exited:
			t.Fatalf("child exited before being killed: %v", err)
		default:
		}
		time.Sleep(time.Millisecond)
		if rs, err := ReadResults(dir); err == nil {
			stored = len(rs)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	rs, err := ReadResults(dir)
	if err != nil {
		t.Fatalf("store after kill: %v", err)
	}
	total := len(s.Runs())
	if len(rs) < 3 || len(rs) >= total {
		t.Fatalf("killed after %d of %d runs; want half-way", len(rs), total)
	}
	byKey(t, rs)
	if err := run(t, RunOptions{Spec: s, Out: dir}); err != nil {
		t.Fatalf("resume after kill: %v", err)
	}
	ref := filepath.Join(t.TempDir(), "ref")
	if err := run(t, RunOptions{Spec: s, Out: ref}); err != nil {
		t.Fatal(err)
	}
	complete(t, s, dir, complete(t, s, ref, nil))
}

// TestShardsMerge runs an experiment in 3 shards into 3 folders, merges
// them, and compares with the unsharded run; merging again changes
// nothing, merging another spec's results fails.
func TestShardsMerge(t *testing.T) {
	s := mustSpec(t, "testdata/small.yaml")
	root := t.TempDir()
	full := filepath.Join(root, "full")
	if err := run(t, RunOptions{Spec: s, Out: full}); err != nil {
		t.Fatal(err)
	}
	ref := complete(t, s, full, nil)
	var shards []string
	total := 0
	for i := 0; i < 3; i++ {
		d := filepath.Join(root, "shard", string(rune('a'+i)))
		if err := run(t, RunOptions{Spec: s, Out: d, Shard: i, NumShards: 3}); err != nil {
			t.Fatal(err)
		}
		rs, _ := ReadResults(d)
		total += len(rs)
		shards = append(shards, d)
	}
	if total != len(s.Runs()) {
		t.Errorf("shards ran %d runs in all, want %d", total, len(s.Runs()))
	}
	merged := filepath.Join(root, "merged")
	if _, err := MergeResults(merged, shards...); err != nil {
		t.Fatal(err)
	}
	complete(t, s, merged, ref)
	// Idempotent, also with overlapping sources.
	sum, err := MergeResults(merged, append(shards, full)...)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Runs != len(s.Runs()) || sum.Added != 0 || sum.Sources != 4 {
		t.Errorf("second merge: %+v, want %d runs, none added, 4 sources", sum, len(s.Runs()))
	}
	complete(t, s, merged, ref)
	m, err := ReadMeta(merged)
	if err != nil || m.SpecHash != s.Hash || len(m.Sessions) != 4 {
		t.Errorf("merged meta: %+v, %v (want the 3 shards' and the full run's sessions)", m, err)
	}
	shardsOf := []string{}
	for _, se := range m.Sessions {
		shardsOf = append(shardsOf, se.Shard)
	}
	slices.Sort(shardsOf)
	if !slices.Equal(shardsOf, []string{"0/1", "0/3", "1/3", "2/3"}) {
		t.Errorf("merged sessions' shards %v", shardsOf)
	}
	if _, err := os.Stat(filepath.Join(merged, SpecFile)); err != nil {
		t.Error("merged folder has no copy of the spec")
	}
	// Another spec's results.
	o := filepath.Join(root, "other")
	if err := WriteResults(o, []Result{{Key: "q1|serial|rep=0", Spec: "000000000000", Backend: "sim", Seconds: 1}}); err == nil {
		t.Fatal("WriteResults into a missing folder succeeded")
	}
	os.MkdirAll(o, 0o755)
	if err := WriteResults(o, []Result{{Key: "q1|serial|rep=0", Spec: "000000000000", Backend: "sim", Seconds: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := MergeResults(merged, o); err == nil || !strings.Contains(err.Error(), "merge only shards of one spec") {
		t.Errorf("merging another spec: %v", err)
	}
	if err := run(t, RunOptions{Spec: s, Out: merged, Shard: 3, NumShards: 3}); err == nil {
		t.Error("shard 3/3 accepted")
	}
}

// TestRunSpecWarmupAndLock checks that warm-up runs are not stored and
// that a second runner on a locked folder is refused.
func TestRunSpecWarmupAndLock(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "w.yaml")
	os.WriteFile(spec, []byte("backend: sim\nsf: 0.2\nqueries: [q6]\npolicies: [serial, overlap]\nreps: 2\nwarmup: 2\n"), 0o644)
	s := mustSpec(t, spec)
	out := filepath.Join(dir, "out")
	if err := run(t, RunOptions{Spec: s, Out: out}); err != nil {
		t.Fatal(err)
	}
	rs, _ := ReadResults(out)
	if len(rs) != 4 {
		t.Errorf("%d results with warm-up, want 4", len(rs))
	}
	unlock, err := lockDir(out)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if err := run(t, RunOptions{Spec: s, Out: out}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("run on a locked folder: %v", err)
	}
}

// TestRunSpecSweep checks that a sweep's knob values and cluster sizes
// reach the simulator: each stored time equals a direct `gostachio sim`
// of the same query, policy, merged knobs and nodes.
func TestRunSpecSweep(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "s.yaml")
	os.WriteFile(spec, []byte("backend: sim\nsf: 2\nqueries: [q6]\npolicies:\n  - {name: ov, policy: overlap, set: \"depth=2,units=0\"}\n"+
		"sweep:\n  chunk: [1MiB, 64MiB]\n  nodes: [1, 2]\nreps: 1\n"), 0o644)
	s := mustSpec(t, spec)
	out := filepath.Join(dir, "out")
	if err := run(t, RunOptions{Spec: s, Out: out}); err != nil {
		t.Fatal(err)
	}
	rs, err := ReadResults(out)
	if err != nil || len(rs) != 4 {
		t.Fatalf("%d results, %v", len(rs), err)
	}
	times := map[float64]bool{}
	for _, r := range rs {
		chunk, nodes := r.SweepValue("chunk"), r.SweepValue("nodes")
		if r.Set != "depth=2,units=0" || r.Policy != "ov" || nodes != strconv.Itoa(r.Nodes) {
			t.Errorf("result %+v", r)
		}
		p, sf, err := queries.Sized("q6", 2, sim.DefaultChunkRows, nil)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := sim.RunReport(context.Background(), sim.SimOptions{Profile: "dgx-a100", Nodes: r.Nodes, SF: sf, Plan: p,
			Policy: "overlap", Set: "depth=2,units=0,chunk=" + chunk})
		if err != nil {
			t.Fatal(err)
		}
		if want := float64(rep.MakespanNs) / 1e9; r.Seconds != want || r.Bound != float64(rep.BoundNs)/1e9 {
			t.Errorf("%s: %v s (bound %v), direct simulation %v s (bound %v)", r.Key, r.Seconds, r.Bound, want, float64(rep.BoundNs)/1e9)
		}
		times[r.Seconds] = true
	}
	if len(times) < 3 {
		t.Errorf("the sweep's 4 points took only %d distinct times", len(times))
	}
}

// TestRunSpecJSONSummary: with JSON the closing summary is one object
// saying how many runs this call ran and how many are stored.
func TestRunSpecJSONSummary(t *testing.T) {
	s := mustSpec(t, "testdata/small.yaml")
	dir := filepath.Join(t.TempDir(), "out")
	for _, wantRan := range []int{len(s.Runs()), 0} {
		var out bytes.Buffer
		if err := RunSpec(context.Background(), RunOptions{Spec: s, Out: dir, Now: fakeClock(), JSON: true}, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		var sum RunSummary
		if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
			t.Fatalf("summary %q: %v", out.String(), err)
		}
		if sum.Ran != wantRan || sum.Done != len(s.Runs()) || sum.Total != len(s.Runs()) || sum.Spec != s.Hash || sum.Shard != "0/1" {
			t.Errorf("summary %+v, want %d ran, %d of %d done, spec %s", sum, wantRan, len(s.Runs()), len(s.Runs()), s.Hash)
		}
	}
}
