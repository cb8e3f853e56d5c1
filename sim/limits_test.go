package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gostachio/plan"
	"gostachio/scheduler"
	"gostachio/tpch/queries"
)

// TestProfileRanges: figures no device has are refused with their field
// and the range (a bandwidth of 0.01 B/s gave a negative bound, 249.6%
// efficiency and +Inf% utilisation).
func TestProfileRanges(t *testing.T) {
	src, err := profileFS.ReadFile("profiles/dgx-a100.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ from, to, want string }{
		{"bandwidth: 6.4GiB/s", "bandwidth: 0.01B/s", "nvme.bandwidth 0.01B/s outside [1B/s,"},
		{"bandwidth: 6.4GiB/s", "bandwidth: 2000000GB/s", "nvme.bandwidth 2000TB/s outside"},
		{"latency: 90us", "latency: 1000h", "nvme.latency"},
	} {
		data := strings.Replace(string(src), tc.from, tc.to, 1)
		if data == string(src) {
			t.Fatalf("%q not in dgx-a100.yaml", tc.from)
		}
		if _, err := ParseProfile("p.yaml", []byte(data)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.to, err, tc.want)
		}
	}
}

// TestClockRange: a profile whose prices put a task past the simulated
// clock's range fails with ErrTimeRange (the int64 clock wrapped, and a
// slower disk gave a shorter makespan).
func TestClockRange(t *testing.T) {
	src, err := profileFS.ReadFile("profiles/dgx-a100.yaml")
	if err != nil {
		t.Fatal(err)
	}
	slow := strings.Replace(string(src), "bandwidth: 6.4GiB/s", "bandwidth: 1B/s", 1)
	path := filepath.Join(t.TempDir(), "slow.yaml")
	if err := os.WriteFile(path, []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	prof, err := LoadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := queries.Stats(1000, DefaultChunkRows)
	if err != nil {
		t.Fatal(err)
	}
	p, err := queries.Build("q6", 1000, tables)
	if err != nil {
		t.Fatal(err)
	}
	pol, _ := scheduler.NewPolicy("serial", "")
	if _, err := Simulate(context.Background(), p, prof, 1, pol, nil, 0, 0); !errors.Is(err, ErrTimeRange) {
		t.Fatalf("1 B/s at SF1000: %v, want ErrTimeRange", err)
	}
	if ceilNs(1e300) != MaxTime || ceilNs(float64(MaxTime)*2) != MaxTime {
		t.Error("ceilNs does not saturate at MaxTime")
	}
}

// TestSizeLimits: what cannot fit in memory is refused before the work
// with the limit in the message (it ran the machine out of memory).
func TestSizeLimits(t *testing.T) {
	if _, err := queries.Stats(1e7, DefaultChunkRows); err == nil || !strings.Contains(err.Error(), "scale factor 1e+07 above") {
		t.Errorf("SF 1e7: %v", err)
	}
	_, err := queries.Stats(1, 1)
	if err == nil || !strings.Contains(err.Error(), "more than the 2000000 a plan may hold: use chunks of at least 5 rows") {
		t.Errorf("1-row chunks: %v", err)
	}
	prof, err := LoadProfile("dgx-a100")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewCluster(prof, MaxNodes+1); err == nil || !strings.Contains(err.Error(), "1 to 16384 nodes") {
		t.Errorf("%d nodes: %v", MaxNodes+1, err)
	}
	c, err := NewCluster(prof, 2)
	if err != nil {
		t.Fatal(err)
	}
	c.net.inFlight = MaxInFlight
	task := scheduler.Task{Kind: scheduler.TaskRead, Node: 0, Device: 0, Bytes: 1 << 20,
		Res: scheduler.Resource{Kind: scheduler.ResNVMe, Node: 0, Index: 0}, OpKind: plan.OpScan}
	if err := c.Start(&task); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a task past MaxInFlight: %v, want ErrTooLarge", err)
	}
}
