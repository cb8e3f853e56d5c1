package sim

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gostachio/plan"
	"gostachio/scheduler"
	"gostachio/tpch/queries"
)

// updateGolden rewrites testdata/makespans.golden from the current code:
//
//	go test ./sim/ -run TestGoldenMakespans -update-golden
var updateGolden = flag.Bool("update-golden", false, "rewrite sim/testdata/makespans.golden from the current code")

// goldenAll checks every golden case, the slow ones too: jittered runs on
// 8 and 16 nodes, where no two completions share an instant, take minutes.
var goldenAll = flag.Bool("golden-all", false, "check every golden makespan, the minutes-long jittered 8- and 16-node runs too")

// goldenCase is one simulated run whose makespan is pinned.
type goldenCase struct {
	profile string
	nodes   int
	sf      float64
	rows    int // stored chunk rows the workload is sized at
	query   string
	policy  string
	set     string
	jitter  float64
}

func (g goldenCase) key() string {
	set := g.set
	if set == "" {
		set = "-"
	}
	return fmt.Sprintf("%s %d %g %d %s %s %s %g", g.profile, g.nodes, g.sf, g.rows, g.query, g.policy, set, g.jitter)
}

// goldenCases: every shipped profile on 1 to 16 nodes, every query under
// serial and overlap, and the variants the shipped specs run (the
// ablation's knobs, the sensitivity's chunk and depth, jitter), at small
// scale factors with small stored chunks so that every device gets units
// and exchanges run between every pair of nodes, in seconds.
func goldenCases() []goldenCase {
	var cs []goldenCase
	for _, prof := range ProfileNames() {
		for _, nodes := range []int{1, 2, 4, 16} {
			for _, q := range queries.Names() {
				for _, pol := range []string{"serial", "overlap"} {
					if pol == "serial" && nodes > 4 {
						continue
					}
					cs = append(cs, goldenCase{prof, nodes, 1, 1 << 14, q, pol, "", 0})
				}
			}
		}
	}
	for _, nodes := range []int{1, 8, 16} {
		for _, q := range []string{"q1", "q3", "q6", "q9", "q18"} {
			for _, set := range []string{"", "chunk=0", "dynbuf=off", "defer=off", "combine=off", "metacache=off", "adaptive=off", "multipath=off", "msg=0", "chunk=8MiB,depth=1", "chunk=64MiB,depth=16"} {
				cs = append(cs, goldenCase{"dgx-a100", nodes, 10, 1 << 16, q, "overlap", set, 0})
			}
			cs = append(cs, goldenCase{"dgx-a100", nodes, 10, 1 << 16, q, "overlap", "", 0.05})
			cs = append(cs, goldenCase{"dgx-a100", nodes, 10, 1 << 16, q, "serial", "", 0.05})
		}
	}
	return cs
}

// goldenResult runs one case: "makespan" in ns, or "error" if the run
// fails; err reports a case that cannot be set up.
func goldenResult(g goldenCase, stats map[string][]plan.TableStats) (string, error) {
	sk := fmt.Sprintf("%g/%d", g.sf, g.rows)
	tables, ok := stats[sk]
	if !ok {
		var err error
		if tables, err = queries.Stats(g.sf, g.rows); err != nil {
			return "", err
		}
		stats[sk] = tables
	}
	p, err := queries.Build(g.query, g.sf, tables)
	if err != nil {
		return "", err
	}
	prof, err := LoadProfileLog(g.profile, nopWriter{})
	if err != nil {
		return "", err
	}
	pol, err := scheduler.NewPolicy(g.policy, g.set)
	if err != nil {
		return "", err
	}
	rep, err := Simulate(context.Background(), p, prof, g.nodes, pol, nil, g.jitter, 1)
	if err != nil {
		return "error", nil
	}
	return strconv.FormatInt(rep.MakespanNs, 10), nil
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// TestGoldenMakespans checks that the simulated makespans of the golden
// cases have not moved: each within 0.1% of the one recorded in
// testdata/makespans.golden (by the code before the simulator's scaling
// work), and reports how many are exact.
func TestGoldenMakespans(t *testing.T) {
	path := filepath.Join("testdata", "makespans.golden")
	cs := goldenCases()
	if !*goldenAll && !*updateGolden {
		var fast []goldenCase
		for _, g := range cs {
			if g.jitter == 0 || g.nodes < 8 {
				fast = append(fast, g)
			}
		}
		cs = fast
	}
	if testing.Short() {
		// One case in five, spread over every profile and knob.
		var sub []goldenCase
		for i := 0; i < len(cs); i += 5 {
			sub = append(sub, cs[i])
		}
		cs = sub
	}
	if *updateGolden {
		stats := map[string][]plan.TableStats{}
		var b strings.Builder
		b.WriteString("# profile nodes sf chunk-rows query policy set jitter -> makespan-ns (or error)\n")
		for _, g := range goldenCases() {
			r, err := goldenResult(g, stats)
			if err != nil {
				t.Fatalf("%s: %v", g.key(), err)
			}
			fmt.Fprintf(&b, "%s %s\n", g.key(), r)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		want[line[:i]] = line[i+1:]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, g := range cs {
		if _, ok := want[g.key()]; !ok {
			t.Fatalf("%s: no golden makespan in %s (regenerate with -update-golden)", g.key(), path)
		}
	}
	// The cases are independent runs: one worker per core.
	got := make([]string, len(cs))
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for k := 0; k < workers; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats := map[string][]plan.TableStats{}
			for i := k; i < len(cs); i += workers {
				got[i], errs[i] = goldenResult(cs[i], stats)
			}
		}()
	}
	wg.Wait()
	exact, worst := 0, 0.0
	for i, g := range cs {
		if errs[i] != nil {
			t.Fatalf("%s: %v", g.key(), errs[i])
		}
		w, got := want[g.key()], got[i]
		if got == w {
			exact++
			continue
		}
		wv, err1 := strconv.ParseFloat(w, 64)
		gv, err2 := strconv.ParseFloat(got, 64)
		if err1 != nil || err2 != nil {
			t.Errorf("%s: got %s, golden %s", g.key(), got, w)
			continue
		}
		rel := math.Abs(gv-wv) / wv
		worst = max(worst, rel)
		if rel > 1e-3 {
			t.Errorf("%s: makespan %s ns, golden %s ns (%.4f%% off, more than 0.1%%)", g.key(), got, w, 100*rel)
		}
	}
	t.Logf("%d cases: %d exact, the others within %.6f%% of the golden makespans", len(cs), exact, 100*worst)
}
