package repocheck

import (
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "gostachio"

// rule forbids the packages matching from to depend, directly or through
// others, on any package matching one of not. Patterns are module-relative:
// "engine" is that package alone, "engine/..." it and everything below it.
type rule struct {
	from []string
	not  []string
	why  string
}

// rules is the layering of docs/design.md.
var rules = []rule{
	{from: []string{"engine/..."}, not: []string{"sim/...", "costmodel/...", "calibrate/...", "experiments/...", "plots/...", "cmd/..."},
		why: "the engine is production code: the simulator and the fitting apparatus sit above it"},
	{from: []string{"sim/..."}, not: []string{"engine/...", "kernels/...", "dataset/...", "calibrate/...", "experiments/...", "plots/...", "cmd/..."},
		why: "the two backends never import each other; the simulator runs without data"},
	{from: []string{"sim/...", "engine/..."}, not: []string{"tpch", "tpch/queries/..."},
		why: "a backend runs the plan it is handed; TPC-H plans are built above it"},
	{from: []string{"sim/...", "engine/..."}, not: []string{"sqlplan/..."},
		why: "a backend runs the plan it is handed; plans from SQL are made above it"},
	{from: []string{"sqlplan/..."}, not: []string{"tpch/...", "scheduler/...", "engine/...", "sim/...", "costmodel/...", "kernels/...", "dataset/...", "traces/...", "calibrate/...", "experiments/..."},
		why: "the SQL planner sees tables only through plan.TableStats, whatever their source"},
	{from: []string{"traces/..."}, not: []string{"scheduler/...", "sim/...", "engine/...", "costmodel/...", "calibrate/...", "experiments/..."},
		why: "the event model and the metrics sit below the scheduler and both backends"},
	{from: []string{"scheduler/..."}, not: []string{"engine/...", "sim/...", "costmodel/...", "kernels/...", "dataset/...", "tpch/...", "calibrate/...", "experiments/..."},
		why: "the scheduler is a pure state machine over plans"},
	{from: []string{"plan/..."}, not: []string{"tpch/...", "scheduler/...", "engine/...", "sim/...", "costmodel/...", "kernels/...", "dataset/...", "traces/..."},
		why: "plans are backend- and benchmark-neutral"},
	{from: []string{"kernels/...", "dataset/...", "tpch/dbgen/...", "tpch/schema/..."}, not: []string{"scheduler/...", "engine/...", "sim/...", "calibrate/...", "experiments/..."},
		why: "kernels and the data format know nothing of scheduling"},
	{from: []string{"..."}, not: []string{"cmd/..."},
		why: "the CLI is the top: nothing imports it"},
}

// match reports whether module-relative package pkg matches pattern.
func match(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

func matchAny(patterns []string, pkg string) bool {
	for _, p := range patterns {
		if match(p, pkg) {
			return true
		}
	}
	return false
}

// moduleDeps maps every package of the module to the module's packages it
// depends on, directly or not (go list's Deps).
func moduleDeps(t *testing.T, root string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, ok := strings.CutPrefix(f[0], module+"/")
		if !ok {
			continue
		}
		var own []string
		for _, d := range f[1:] {
			if d, ok := strings.CutPrefix(d, module+"/"); ok {
				own = append(own, d)
			}
		}
		deps[pkg] = own
	}
	return deps
}

// violations lists every dependency that breaks a rule, sorted.
func violations(deps map[string][]string, rules []rule) []string {
	var out []string
	for pkg, ds := range deps {
		for _, r := range rules {
			if !matchAny(r.from, pkg) {
				continue
			}
			for _, d := range ds {
				if matchAny(r.not, d) && !matchAny(r.not, pkg) {
					out = append(out, fmt.Sprintf("%s depends on %s: %s", pkg, d, r.why))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestLayering fails when a package depends on one its layer forbids.
func TestLayering(t *testing.T) {
	deps := moduleDeps(t, repoRoot(t))
	for _, want := range []string{"engine", "sim", "scheduler", "plan", "cmd/gostachio"} {
		if _, ok := deps[want]; !ok {
			t.Fatalf("go list did not list %s (found %d packages)", want, len(deps))
		}
	}
	for _, v := range violations(deps, rules) {
		t.Error(v)
	}
}

// TestViolations checks the checker on a made-up graph.
func TestViolations(t *testing.T) {
	deps := map[string][]string{
		"engine/cluster": {"engine", "sim", "scheduler"},
		"engine":         {"plan"},
		"sim":            {"scheduler", "plan"},
		"cmd/gostachio":  {"engine", "sim"},
	}
	got := violations(deps, rules)
	if len(got) != 1 || !strings.HasPrefix(got[0], "engine/cluster depends on sim:") {
		t.Errorf("violations = %q, want one: engine/cluster depends on sim", got)
	}
}
