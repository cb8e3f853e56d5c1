package cluster

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	ecluster "gostachio/engine/cluster"
)

// TestParseBusyNs: busy time is user + nice + system + irq + softirq of
// the "cpu" line, in USER_HZ ticks of 10 ms; idle, iowait and steal are
// not busy. A file without the line, or with a short or garbled one, is
// an error naming it.
func TestParseBusyNs(t *testing.T) {
	stat := "cpu  10 2 30 400 50 6 7 8 0 0\ncpu0 5 1 15 200 25 3 3 4 0 0\nintr 1\n"
	ct, err := parseCPUTimes([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	got := ct.busy
	if want := int64(10+2+30+6+7) * 10_000_000; got != want {
		t.Errorf("busy %d ns, want %d", got, want)
	}
	// The interrupt time alone: irq and softirq.
	if ct.irq != int64(6+7)*10_000_000 {
		t.Errorf("cpu times %+v, want irq %d", ct, int64(6+7)*10_000_000)
	}
	for _, bad := range []struct{ stat, msg string }{
		{"cpu0 1 2 3 4 5 6 7\n", "no cpu line"},
		{"cpu 1 2 3 4 5\n", "5 fields"},
		{"cpu 1 2 x 4 5 6 7 8\n", "field 3"},
	} {
		if _, err := parseCPUTimes([]byte(bad.stat)); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%q: err %v, want one saying %q", bad.stat, err, bad.msg)
		}
	}
}

// TestNetCPUCost: (busy − idle·wall) / (2·bytes), never negative.
func TestNetCPUCost(t *testing.T) {
	// 3 s of busy CPU over 2 s more wall, the machine busy 0.1 core on its
	// own: 2.8 s for 1 GB crossing two stacks = 1.4 ns a byte at each end.
	if got := netCPUCost(3e9, 2e9, 0.1, 1e9); math.Abs(got-1.4) > 1e-12 {
		t.Errorf("cost %g, want 1.4", got)
	}
	if got := netCPUCost(1e8, 2e9, 0.1, 1e9); got != 0 {
		t.Errorf("less busy than idle: cost %g, want 0", got)
	}
}

// TestMeasureNetCPU streams the data plane between two namespaces at
// 1 Gbit/s: the rate is the link's (its TCP payload, within what a busy
// test machine reaches) and the cost positive and of the order the
// development VM measured (1.2 ns a byte, 2026-11).
func TestMeasureNetCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two namespaces' data plane for seconds")
	}
	needNetns(t)
	exe := gostachioBin(t)
	link, err := ecluster.ParseLink("1Gbit")
	if err != nil {
		t.Fatal(err)
	}
	res, err := MeasureNetCPU(context.Background(), NetCPUOptions{Exe: exe, Link: link, Duration: 1500 * time.Millisecond, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if payload := 1e9 / 8 * TCPPayloadShare; res.Rate < 0.5*payload || res.Rate > 1.02*payload {
		t.Errorf("rate %.1f MB/s over a 1 Gbit/s link (payload %.1f MB/s)", res.Rate/1e6, payload/1e6)
	}
	if len(res.Rounds) != 1 || !(res.Cost > 0.05 && res.Cost < 50) {
		t.Errorf("cost %g ns/B (rounds %v), want one round between 0.05 and 50", res.Cost, res.Rounds)
	}
}
