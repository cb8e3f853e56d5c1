package engine

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// anonHugeKiB is the process's AnonHugePages (KiB) from smaps_rollup.
func anonHugeKiB(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		t.Skipf("no smaps_rollup: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "AnonHugePages:" {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("smaps_rollup has no AnonHugePages")
	return 0
}

// TestAdviseHeapChild is the process TestAdviseHeapHugePages inspects.
func TestAdviseHeapChild(t *testing.T) {
	if os.Getenv("GOSTACHIO_THP_CHILD") == "" {
		t.Skip("run by TestAdviseHeapHugePages")
	}
	before := anonHugeKiB(t)
	AdviseHeap(256 << 20)
	b := make([]byte, 64<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	fmt.Printf("anon-huge-kib %d\n", anonHugeKiB(t)-before)
}

// A heap advised by AdviseHeap faults a fresh 64 MiB slice in as huge
// pages; with GOSTACHIO_THP=0 it does not (a kernel whose THP mode is
// "always" would back both: skipped there, as where THP is missing).
func TestAdviseHeapHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(mode), "[madvise]") {
		t.Skipf("transparent huge pages not in madvise mode (%q, %v)", mode, err)
	}
	huge := func(thp string) int64 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAdviseHeapChild$", "-test.v")
		cmd.Env = append(os.Environ(), "GOSTACHIO_THP_CHILD=1", "GOSTACHIO_THP="+thp, "GOGC=100")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if rest, ok := strings.CutPrefix(l, "anon-huge-kib "); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
		t.Skipf("child measured nothing:\n%s", out)
		return 0
	}
	on, off := huge("1"), huge("0")
	t.Logf("AnonHugePages grew by %d KiB advised, %d KiB not", on, off)
	if on < 32<<10 {
		t.Errorf("advised heap: %d KiB of the 64 MiB on huge pages, want at least half", on)
	}
	if off >= on {
		t.Errorf("GOSTACHIO_THP=0 still got %d KiB of huge pages (advised: %d)", off, on)
	}
}
