package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gostachio/scheduler"
	"gostachio/tpch/queries"
)

// TestAnalyticTransferAlone: an analytic transfer alone takes its latency
// plus its size over the slowest link it crosses, as a fluid flow does, and
// transfers through one link queue behind each other.
func TestAnalyticTransferAlone(t *testing.T) {
	for _, analytic := range []bool{false, true} {
		n := NewNet()
		a, b := n.AddLink(2), n.AddLink(1) // bytes/ns
		n.Start(FlowSpec{Links: []LinkID{a, b}, Size: 1000, Latency: 50, Analytic: analytic, Tag: 1})
		tag, start, end, ok := n.Step()
		if !ok || tag != 1 || start != 0 || end != 1050 {
			t.Fatalf("analytic %v: tag %d, %d..%d, ok %v; want tag 1, 0..1050", analytic, tag, start, end, ok)
		}
		_, work, _ := n.LinkStats(b)
		if work != 1000 {
			t.Fatalf("analytic %v: link work %v, want 1000", analytic, work)
		}
	}
	// Two transfers at once on one link of 1 B/ns: fluid, both end at
	// 2000 (fair shares); analytic, the first at 1000 and the second at
	// 2000 (first come first served).
	n := NewNet()
	l := n.AddLink(1)
	n.Start(FlowSpec{Links: []LinkID{l}, Size: 1000, Analytic: true, Tag: 1})
	n.Start(FlowSpec{Links: []LinkID{l}, Size: 1000, Analytic: true, Tag: 2})
	for _, want := range [][2]int64{{1, 1000}, {2, 2000}} {
		tag, _, end, ok := n.Step()
		if !ok || int64(tag) != want[0] || end != want[1] {
			t.Fatalf("tag %d ends at %d, want tag %d at %d", tag, end, want[0], want[1])
		}
	}
	busy, _, _ := n.LinkStats(l)
	if busy != 2000 {
		t.Fatalf("busy %d, want 2000", busy)
	}
}

// TestNetAnalyticError measures the analytic network model (NetAnalytic)
// against the exact fluid one on every query at 1 to 16 DGX A100 nodes
// under overlap, prints the errors of the makespan, and fails if they grow
// past what docs/model.md states.
func TestNetAnalyticError(t *testing.T) {
	prof, err := LoadProfileLog("dgx-a100", nopWriter{})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := scheduler.NewPolicy("overlap", "")
	if err != nil {
		t.Fatal(err)
	}
	const sf = 10
	tables, err := queries.Stats(sf, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	nodeCounts := []int{1, 4, 16}
	if testing.Short() {
		nodeCounts = []int{4}
	}
	var errs []float64
	perNodes := make([][]float64, len(nodeCounts))
	var b strings.Builder
	fmt.Fprintf(&b, "analytic network vs fluid, makespan error (%%), dgx-a100 SF%d overlap\nquery", sf)
	for _, nodes := range nodeCounts {
		fmt.Fprintf(&b, "\t%d nodes", nodes)
	}
	b.WriteString("\n")
	for _, q := range queries.Names() {
		p, err := queries.Build(q, sf, tables)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s", q)
		for k, nodes := range nodeCounts {
			var ms [2]int64
			for i, net := range []string{NetFluid, NetAnalytic} {
				rep, err := SimulateWith(context.Background(), p, prof, nodes, pol, nil, RunConfig{Net: net})
				if err != nil {
					t.Fatalf("%s on %d nodes, %s network: %v", q, nodes, net, err)
				}
				ms[i] = rep.MakespanNs
			}
			e := 100 * float64(ms[1]-ms[0]) / float64(ms[0])
			errs = append(errs, math.Abs(e))
			perNodes[k] = append(perNodes[k], math.Abs(e))
			fmt.Fprintf(&b, "\t%+.2f", e)
		}
		b.WriteString("\n")
	}
	b.WriteString("median |error|")
	for _, pn := range perNodes {
		slices.Sort(pn)
		fmt.Fprintf(&b, "\t%.2f", (pn[(len(pn)-1)/2]+pn[len(pn)/2])/2)
	}
	b.WriteString("\n")
	slices.Sort(errs)
	med, worst := errs[len(errs)/2], errs[len(errs)-1]
	fmt.Fprintf(&b, "median |error| %.2f%%, worst %.2f%%", med, worst)
	t.Log(b.String())
	if med > 2 || worst > 10 {
		t.Errorf("analytic network's error grew: median %.2f%%, worst %.2f%% (docs/model.md states at most 2%% and 10%%)", med, worst)
	}
}

// TestAnalyticLongTransfer: a transfer longer than 2³² ns reports its
// start and end as a short one does.
func TestAnalyticLongTransfer(t *testing.T) {
	n := NewNet()
	l := n.AddLink(1)
	n.Start(FlowSpec{Links: []LinkID{l}, Size: 1e3, Latency: 7, Analytic: true, Tag: 1})
	n.Step()
	n.Start(FlowSpec{Links: []LinkID{l}, Size: 5e9, Latency: 3, Analytic: true, Tag: 2})
	tag, start, end, ok := n.Step()
	if !ok || tag != 2 || start != 1007 || end != 1007+3+5e9 {
		t.Fatalf("tag %d, %d..%d, ok %v; want tag 2, 1007..%d", tag, start, end, ok, int64(1007+3+5e9))
	}
}
