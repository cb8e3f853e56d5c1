package experiments

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseSpecErrors checks that bad specs fail with the file, the line
// and what is wrong.
func TestParseSpecErrors(t *testing.T) {
	cases := []struct{ file, want string }{
		{"unknown_key.yaml", `unknown_key.yaml line 7: unknown key "polcy"`},
		{"bad_backend.yaml", `line 2: unknown backend "gpu"`},
		{"bad_profile.yaml", `line 3: sim: unknown profile "cray-1"`},
		{"unknown_policy.yaml", `line 6: scheduler: unknown policy "turbo"`},
		{"unknown_knob.yaml", `line 5: scheduler: policy overlap: scheduler: unknown knob "chnk"`},
		{"bad_sweep_value.yaml", `line 7: scheduler: knob depth="lots"`},
		{"sweep_unknown_axis.yaml", `line 6: sweep: unknown axis "chunks"`},
		{"zero_reps.yaml", `line 5: reps 0 outside [1, 1000000]`},
		{"huge_reps.yaml", `line 5: reps 99999999999 outside [1, 1000000]`},
		{"too_many_runs.yaml", `line 5: the spec expands to 1.8e+06 runs`},
		{"sql_missing_file.yaml", `line 5: sql: read query testdata/sql/no-such-file.sql`},
		{"sql_tpch_name.yaml", `line 4: sql: query name "q6"`},
		{"engine_no_dataset.yaml", `line 3: the engine backend needs a dataset folder`},
		{"engine_sf.yaml", `line 6: sf is for the sim backend`},
		{"unknown_query.yaml", `line 5: unknown query "q23"`},
		{"duplicate_key.yaml", `line 6: key "sf" given twice`},
		{"nodes_twice.yaml", `line 7: nodes given twice (line 3 and under sweep)`},
		{"duplicate_label.yaml", `line 6: policy label "overlap" given twice`},
		{"policy_key.yaml", `line 7: unknown key "sets" in a policy`},
		{"missing_reps.yaml", `line 1: missing key "reps"`},
		{"bad_jitter.yaml", `line 6: jitter 1.5 must be in [0, 1)`},
		{"bad_nodes.yaml", `line 3: nodes 0 must be at least 1`},
		{"bad_yaml.yaml", `bad_yaml.yaml: yaml: line `},
		{"sweep_knob_conflict.yaml", `line 5: with sweep depth=0: scheduler: policy overlap: scheduler: knob depth=0 must be at least 1`},
	}
	for _, c := range cases {
		s, err := ParseSpec(filepath.Join("testdata", c.file))
		if err == nil {
			t.Errorf("%s: parsed (%+v), want error %q", c.file, s, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q\n\twant it to contain %q", c.file, err, c.want)
		}
	}
	if _, err := ParseSpec(filepath.Join("testdata", "missing.yaml")); err == nil {
		t.Error("a missing file parsed")
	}
}

// TestShippedSpecs parses every shipped spec and checks its size against
// the product of its parts, counted independently of Runs.
func TestShippedSpecs(t *testing.T) {
	want := map[string]int{
		"paper-speedup": 21 * 2 * 6,
		"scaling":       5 * 2 * 5 * 3,
		"sensitivity":   3 * 1 * 6 * 5 * 3,
		"ablation":      21 * 9 * 6,
		"engine-small":  3 * 2 * 6,
		// The policies of package scheduler/policies against overlap.
		"policies-littles":  1 * 2 * 5,
		"policies-netfirst": 1 * 2 * 5,
		"policies-engine":   2 * 3 * 8,
	}
	files, err := filepath.Glob("specs/*.yaml")
	if err != nil || len(files) != len(want) {
		t.Fatalf("specs: %v %v, want %d files", files, err, len(want))
	}
	for _, f := range files {
		s, err := ParseSpec(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		runs := s.Runs()
		if len(runs) != want[s.Name] {
			t.Errorf("%s: %d runs, want %d", s.Name, len(runs), want[s.Name])
		}
		checkKeys(t, s.Name, runs)
	}
	s, _ := ParseSpec("specs/ablation.yaml")
	want2 := map[string]string{"overlap": "", "no-chunking": "chunk=0", "no-msg": "msg=0", "no-dynbuf": "dynbuf=off"}
	for _, p := range s.Policies {
		if w, ok := want2[p.Name]; ok && (p.Set != w || p.Policy != "overlap") {
			t.Errorf("ablation %s: policy %s set %q, want overlap %q", p.Name, p.Policy, p.Set, w)
		}
	}
	if s.Profile != "dgx-a100" || s.SF[0] != 1000 || s.Nodes[0] != 1 || s.Jitter != 0.05 {
		t.Errorf("ablation: profile %s sf %v nodes %v jitter %v", s.Profile, s.SF, s.Nodes, s.Jitter)
	}
	e, _ := ParseSpec("specs/engine-small.yaml")
	if e.Backend != "engine" || e.Profile != "devbox" || e.Dataset != "out/data/sf0.01" || e.Warmup != 1 {
		t.Errorf("engine-small: %+v", e)
	}
}

func checkKeys(t *testing.T, name string, runs []Run) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.Key] {
			t.Fatalf("%s: key %q twice", name, r.Key)
		}
		seen[r.Key] = true
		if want := fmt.Sprintf("%s|rep=%d|hw=%s|pol=%s", r.Config, r.Rep, r.ProfileHash, r.PolicyHash); r.Key != want || len(r.ProfileHash) != 12 || len(r.PolicyHash) != 12 {
			t.Fatalf("%s: key %q, want config %q, rep %d and the two hashes: %q", name, r.Key, r.Config, r.Rep, want)
		}
		if KeyID(r.Key) != r.ID() || !KeyHashed(r.Key) {
			t.Fatalf("%s: key %q: ID %q, KeyID %q", name, r.Key, r.ID(), KeyID(r.Key))
		}
	}
}

// TestRunsExpansion checks the cartesian product of a spec with knob axes,
// a nodes list and an sf axis: counts, key format and stability, and
// what each run carries.
func TestRunsExpansion(t *testing.T) {
	s, err := ParseSpec("testdata/sweep.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Axes(); !slices.Equal(got, []string{"chunk", "depth", "sf", "nodes"}) {
		t.Errorf("axes %v", got)
	}
	runs := s.Runs()
	// 2 queries x 2 policies x (3 chunk x 2 depth x 2 sf x 2 nodes) x 2 reps.
	if len(runs) != 2*2*24*2 {
		t.Fatalf("%d runs, want %d", len(runs), 2*2*24*2)
	}
	checkKeys(t, s.Name, runs)
	byKey := map[string]Run{}
	for _, r := range runs {
		byKey[r.ID()] = r
	}
	r, ok := byKey["q3|overlap-d2|chunk=16MiB|depth=4|sf=10|nodes=2|rep=1"]
	if !ok {
		t.Fatalf("no run with the expected key; first keys: %v %v", runs[0].Key, runs[1].Key)
	}
	if r.Query != "q3" || r.Label != "overlap-d2" || r.Policy != "overlap" || r.Nodes != 2 || r.SF != 10 || r.Rep != 1 ||
		r.Set != "depth=4,dynbuf=off,chunk=16MiB" || r.PolicySet != "depth=2,dynbuf=off" || r.Sweep != "chunk=16MiB,depth=4,sf=10,nodes=2" || r.Spec != s.Hash {
		t.Errorf("run %+v", r)
	}
	// Same file, same keys in the same order; another parse of equal bytes
	// has the same hash.
	s2, _ := ParseSpec("testdata/sweep.yaml")
	for i, r2 := range s2.Runs() {
		if r2 != runs[i] {
			t.Fatalf("run %d differs between parses: %+v vs %+v", i, runs[i], r2)
		}
	}
	if len(s.Hash) != 12 {
		t.Errorf("hash %q", s.Hash)
	}
	// Every config appears once per repetition.
	cfgs := s.Configs()
	if len(cfgs)*s.Reps != len(runs) {
		t.Errorf("%d configs x %d reps != %d runs", len(cfgs), s.Reps, len(runs))
	}
}

func TestMergeSet(t *testing.T) {
	cases := []struct {
		set  string
		over [][2]string
		want string
	}{
		{"", nil, ""},
		{"", [][2]string{{"chunk", "8MiB"}}, "chunk=8MiB"},
		{"depth=2, dynbuf=off", [][2]string{{"depth", "8"}, {"chunk", "1MiB"}}, "depth=8,dynbuf=off,chunk=1MiB"},
	}
	for _, c := range cases {
		if got := mergeSet(c.set, c.over); got != c.want {
			t.Errorf("mergeSet(%q, %v) = %q, want %q", c.set, c.over, got, c.want)
		}
	}
}

// TestOrder checks the execution order: a permutation of Runs, repetition
// by repetition, deterministic in the seed, interleaving the alternatives
// (no repetition runs all of one policy before the other), different
// between repetitions and seeds.
func TestOrder(t *testing.T) {
	s, err := ParseSpec("specs/paper-speedup.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ord, runs := s.Order(), s.Runs()
	if len(ord) != len(runs) {
		t.Fatalf("%d ordered, %d runs", len(ord), len(runs))
	}
	n := len(s.Configs())
	for rep := 0; rep < s.Reps; rep++ {
		block := ord[rep*n : (rep+1)*n]
		var keys, want []string
		for _, r := range block {
			if r.Rep != rep {
				t.Fatalf("rep %d block holds %s", rep, r.Key)
			}
			keys = append(keys, r.Key)
		}
		for _, r := range runs[rep*n : (rep+1)*n] {
			want = append(want, r.Key)
		}
		slices.Sort(keys)
		slices.Sort(want)
		if !slices.Equal(keys, want) {
			t.Fatalf("rep %d is not a permutation of its configs", rep)
		}
		// Interleaved: the policy changes often along the block (a blocked
		// order changes once). 42 runs, 2 policies: a random order changes
		// about 21 times.
		changes := 0
		for i := 1; i < len(block); i++ {
			if block[i].Label != block[i-1].Label {
				changes++
			}
		}
		if changes < 8 {
			t.Errorf("rep %d: policy changes only %d times along %d runs", rep, changes, len(block))
		}
	}
	if ord[0].Config == ord[n].Config && ord[1].Config == ord[n+1].Config && ord[2].Config == ord[n+2].Config {
		t.Error("repetitions 0 and 1 start in the same order")
	}
	again := s.Order()
	for i := range ord {
		if ord[i] != again[i] {
			t.Fatal("Order is not deterministic")
		}
	}
	s.Seed++
	other := s.Order()
	same := 0
	for i := range ord {
		if ord[i].Key == other[i].Key {
			same++
		}
	}
	if same > len(ord)/4 {
		t.Errorf("another seed keeps %d of %d positions", same, len(ord))
	}
}

// TestShardPartition checks that n shards cover every run exactly once.
func TestShardPartition(t *testing.T) {
	s, err := ParseSpec("testdata/sweep.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ord := s.Order()
	for n := 1; n <= 7; n++ {
		count := map[string]int{}
		sizes := []int{}
		for i := 0; i < n; i++ {
			sh := Shard(ord, i, n)
			sizes = append(sizes, len(sh))
			for _, r := range sh {
				count[r.Key]++
			}
		}
		if len(count) != len(ord) {
			t.Errorf("%d shards cover %d of %d runs", n, len(count), len(ord))
		}
		for k, c := range count {
			if c != 1 {
				t.Errorf("%d shards: %s in %d shards", n, k, c)
			}
		}
		if slices.Max(sizes)-slices.Min(sizes) > 1 {
			t.Errorf("%d shards: unbalanced sizes %v", n, sizes)
		}
	}
	for _, c := range []struct {
		s    string
		i, n int
		ok   bool
	}{{"", 0, 1, true}, {"2/4", 2, 4, true}, {"4/4", 0, 0, false}, {"-1/2", 0, 0, false}, {"1", 0, 0, false}, {"a/b", 0, 0, false}} {
		i, n, err := ParseShard(c.s)
		if (err == nil) != c.ok || c.ok && (i != c.i || n != c.n) {
			t.Errorf("ParseShard(%q) = %d, %d, %v", c.s, i, n, err)
		}
	}
}
