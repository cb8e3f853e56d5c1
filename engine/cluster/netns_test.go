package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"gostachio/internal/testfixture"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gostachio/traces"
)

// TestIsGone: what `ip` prints for a namespace or link already removed
// counts as gone (the last case once failed a cluster launch's clean-up:
// the host veth went with its namespace); other failures do not.
func TestIsGone(t *testing.T) {
	for msg, gone := range map[string]bool{
		`ip link del gst-1-0h: exit status 1: Cannot find device "gst-1-0h"`:                           true,
		`ip netns del gst-1-0: exit status 1: Cannot remove namespace file: No such file or directory`: true,
		`ip link del gst-90832b-3h: exit status 2: RTNETLINK answers: No such device`:                  true,
		`ip link del gst-1-0h: exit status 2: RTNETLINK answers: Operation not permitted`:              false,
	} {
		if got := isGone(errors.New(msg)); got != gone {
			t.Errorf("isGone(%q) = %v, want %v", msg, got, gone)
		}
	}
}

func TestParseLink(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Link
		str  string
	}{
		{"", Link{}, "unshaped"},
		{"10Gbit,50us", Link{Rate: 10e9, Delay: 50 * time.Microsecond}, "10Gbit,50µs"},
		{"1gbit", Link{Rate: 1e9}, "1Gbit"},
		{"500Mbit, 1ms", Link{Rate: 500e6, Delay: time.Millisecond}, "500Mbit,1ms"},
		{"2.5G", Link{Rate: 2.5e9}, "2500Mbit"},
		{"100kbps", Link{Rate: 100e3}, "100Kbit"},
		{"100Mbit,queue=2.5MB", Link{Rate: 100e6, Queue: 2500000}, "100Mbit,queue=2.384MiB"},
		{"1Gbit, QUEUE=4MiB, 50us", Link{Rate: 1e9, Delay: 50 * time.Microsecond, Queue: 4 << 20}, "1Gbit,50µs,queue=4MiB"},
	} {
		got, err := ParseLink(c.in)
		if err != nil || got != c.want || got.String() != c.str {
			t.Errorf("ParseLink(%q) = %+v (%q), %v; want %+v (%q)", c.in, got, got.String(), err, c.want, c.str)
		}
	}
	for _, bad := range []string{"fast", "0Gbit", "1Gbit,soon", "1Gbit,-1ms", "7bit",
		"1Gbit,queue=64KiB", "1Gbit,queue=lots", "1Gbit,1ms,2ms", "1Gbit,queue=1MiB,queue=2MiB"} {
		if _, err := ParseLink(bad); err == nil {
			t.Errorf("ParseLink(%q): no error", bad)
		}
	}
}

// TestClusterTrace gathers every worker's tasks on rank 0: one event per
// task the scheduler counted, every worker present, times within the
// query's wall time.
func TestClusterTrace(t *testing.T) {
	dir := testData(t)
	var mu sync.Mutex
	got := map[string][]traces.Event{}
	const world = 3
	tc := runCluster(t, world, Job{Data: dir, Queries: []string{"q3", "q9"}, Policy: "overlap", Devices: 1, Trace: true},
		5*time.Second, func(o *Options) {
			o.OnTrace = func(q string, evs []traces.Event) error {
				mu.Lock()
				got[q] = evs
				mu.Unlock()
				return nil
			}
		})
	for r, err := range tc.errs {
		if err != nil {
			t.Fatalf("worker %d: %v", r, err)
		}
	}
	for _, res := range tc.results {
		evs := got[res.Query]
		if int64(len(evs)) != res.Sched.Tasks {
			t.Errorf("%s: %d trace events, the scheduler counted %d tasks", res.Query, len(evs), res.Sched.Tasks)
		}
		perNode := make([]int, world)
		for _, e := range evs {
			if e.Node < 0 || int(e.Node) >= world || e.Res.Node != e.Node {
				t.Fatalf("%s: event on node %d, resource %v", res.Query, e.Node, e.Res)
			}
			perNode[e.Node]++
			if e.Start < 0 || e.End < e.Start || e.End > res.Wall.Nanoseconds() {
				t.Errorf("%s: event %v..%v ns outside the query's %v", res.Query, e.Start, e.End, res.Wall)
			}
			if e.Run != res.Query+"/overlap" {
				t.Errorf("%s: event of run %q", res.Query, e.Run)
			}
		}
		for n, c := range perNode {
			if c == 0 {
				t.Errorf("%s: no event of worker %d", res.Query, n)
			}
		}
		var buf bytes.Buffer
		if err := traces.WriteChrome(&buf, evs, traces.Meta{Backend: "engine"}); err != nil {
			t.Errorf("%s: %v", res.Query, err)
		}
	}
	if len(tc.results) != 2 {
		t.Fatalf("%d results, want 2", len(tc.results))
	}
}

func gostachioBin(t *testing.T) string { return fixture.Binary(t) }

// needNetns skips a test that cannot make network namespaces here.
func needNetns(t *testing.T) { testfixture.NeedNetns(t, CheckNetns, NetnsPrefix) }

// launched is a `gostachio cluster` process under test.
type launched struct {
	cmd    *exec.Cmd
	stderr *lockedBuf
	lines  chan string
	done   chan error
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func launch(t *testing.T, args ...string) *launched {
	t.Helper()
	cmd := exec.Command(gostachioBin(t), args...)
	cmd.Stdout = io.Discard
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	l := &launched{cmd: cmd, stderr: &lockedBuf{}, lines: make(chan string, 1024), done: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintln(l.stderr, sc.Text())
			select {
			case l.lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, pr)
		l.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
	})
	return l
}

// waitLine waits for a stderr line containing s.
func (l *launched) waitLine(t *testing.T, s string, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case line := <-l.lines:
			if strings.Contains(line, s) {
				return
			}
		case err := <-l.done:
			t.Fatalf("launcher exited (%v) before printing %q:\n%s", err, s, l.stderr)
		case <-deadline:
			t.Fatalf("no %q within %v:\n%s", s, limit, l.stderr)
		}
	}
}

// wait waits for the launcher to exit and returns its error and how long
// that took.
func (l *launched) wait(t *testing.T, limit time.Duration) (error, time.Duration) {
	t.Helper()
	start := time.Now()
	select {
	case err := <-l.done:
		return err, time.Since(start)
	case <-time.After(limit):
		t.Fatalf("launcher still running %v later (a hang):\n%s", limit, l.stderr)
	}
	return nil, 0
}

// children returns the pids whose parent is pid, and their environment
// variable RANK (-1: none).
func children(pid int) map[int]int {
	out := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after ')'.
		i := bytes.LastIndexByte(st, ')')
		f := strings.Fields(string(st[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		rank := -1
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("RANK=")); ok {
				rank, _ = strconv.Atoi(string(v))
			}
		}
		out[p] = rank
	}
	return out
}

// workersOf waits until the launcher has n children and returns rank ->
// pid.
func workersOf(t *testing.T, pid, n int) map[int]int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		byRank := map[int]int{}
		for p, r := range children(pid) {
			byRank[r] = p
		}
		if len(byRank) == n {
			return byRank
		}
		if time.Now().After(deadline) {
			t.Fatalf("launcher %d has workers %v, want %d", pid, byRank, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkGone fails if a process of pids still exists.
func checkGone(t *testing.T, pids map[int]int) {
	t.Helper()
	for rank, p := range pids {
		if err := syscall.Kill(p, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("worker %d (pid %d) left behind (kill 0: %v)", rank, p, err)
		}
	}
}

// checkNoNetns fails if a resource of run id is left.
func checkNoNetns(t *testing.T, id string) {
	t.Helper()
	out, _ := exec.Command("ip", "netns", "list").Output()
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	for _, l := range strings.Split(string(out)+string(links), "\n") {
		if strings.Contains(l, NetnsPrefix+id) || strings.Contains(l, NetnsPrefix+"br"+id) {
			t.Errorf("left behind: %s", l)
		}
	}
}

// longJob is a query list that runs for seconds on a slow link.
func longJob() string {
	var qs []string
	for range 20 {
		qs = append(qs, "q9", "q18", "q3", "q5")
	}
	return strings.Join(qs, ",")
}

// TestNetnsLinkCut cuts worker 2's link (its veth down) mid-query on a
// 3-node namespace cluster: the run must fail within the timeout naming
// worker 2 and leave no namespace, veth or process.
func TestNetnsLinkCut(t *testing.T) {
	needNetns(t)
	dir := testData(t)
	id, err := NewNetnsID()
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 2 * time.Second
	l := launch(t, "cluster", "--nodes", "3", "--netns", "--netns-id", id, "--link", "20Mbit", "--",
		"query", "--data", dir, "--query", longJob(), "--devices", "1", "--timeout", timeout.String())
	l.waitLine(t, "q18: ", 60*time.Second)
	workers := workersOf(t, l.cmd.Process.Pid, 3)
	host := fmt.Sprintf("%s%s-2h", NetnsPrefix, id)
	if out, err := exec.Command("ip", "link", "set", host, "down").CombinedOutput(); err != nil {
		t.Fatalf("cut %s: %v: %s", host, err, out)
	}
	err, took := l.wait(t, 30*time.Second)
	if err == nil {
		t.Fatalf("the run succeeded with worker 2 cut off:\n%s", l.stderr)
	}
	// Detection takes the timeout (a silent control connection or an
	// unacknowledged frame); the rest is exit and cleanup.
	if took > 4*timeout+5*time.Second {
		t.Errorf("failed %v after the cut; timeout %v", took, timeout)
	}
	if !strings.Contains(l.stderr.String(), fmt.Sprintf("worker 2 (pid %d", workers[2])) {
		t.Errorf("the error does not name worker 2 (pid %d):\n%s", workers[2], l.stderr)
	}
	checkGone(t, workers)
	checkNoNetns(t, id)
	t.Logf("failed %v after the cut: %s", took.Round(time.Millisecond), lastLines(l.stderr.String(), 3))
}

// TestLauncherKillWorker kills worker 1 with SIGKILL mid-run, on loopback
// and (where possible) in namespaces: the run fails naming worker 1 and
// leaves nothing behind.
func TestLauncherKillWorker(t *testing.T) {
	for _, netns := range []bool{false, true} {
		t.Run(map[bool]string{false: "loopback", true: "netns"}[netns], func(t *testing.T) {
			dir := testData(t)
			args := []string{"cluster", "--nodes", "3"}
			id := ""
			if netns {
				needNetns(t)
				var err error
				if id, err = NewNetnsID(); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--netns", "--netns-id", id, "--link", "20Mbit")
			}
			const timeout = 2 * time.Second
			args = append(args, "--", "query", "--data", dir, "--query", longJob(), "--devices", "1", "--timeout", timeout.String())
			l := launch(t, args...)
			l.waitLine(t, "q18: ", 60*time.Second)
			workers := workersOf(t, l.cmd.Process.Pid, 3)
			if err := syscall.Kill(workers[1], syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			err, took := l.wait(t, 30*time.Second)
			if err == nil {
				t.Fatalf("the run succeeded with worker 1 killed:\n%s", l.stderr)
			}
			if took > 4*timeout+5*time.Second {
				t.Errorf("failed %v after the kill; timeout %v", took, timeout)
			}
			if !strings.Contains(l.stderr.String(), fmt.Sprintf("worker 1 (pid %d", workers[1])) {
				t.Errorf("the error does not name worker 1 (pid %d):\n%s", workers[1], l.stderr)
			}
			checkGone(t, workers)
			if netns {
				checkNoNetns(t, id)
			}
			t.Logf("failed %v after the kill: %s", took.Round(time.Millisecond), lastLines(l.stderr.String(), 3))
		})
	}
}

// TestNetnsLauncherKilled kills the launcher itself with SIGKILL: its
// workers die with it (parent-death signal), its network stays, and
// `gostachio cluster --cleanup` removes it.
func TestNetnsLauncherKilled(t *testing.T) {
	needNetns(t)
	dir := testData(t)
	id, err := NewNetnsID()
	if err != nil {
		t.Fatal(err)
	}
	l := launch(t, "cluster", "--nodes", "2", "--netns", "--netns-id", id, "--link", "20Mbit", "--",
		"query", "--data", dir, "--query", longJob(), "--devices", "1")
	l.waitLine(t, "q18: ", 60*time.Second)
	workers := workersOf(t, l.cmd.Process.Pid, 2)
	l.cmd.Process.Kill()
	l.wait(t, 10*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && syscall.Kill(workers[0], 0) == nil {
		time.Sleep(20 * time.Millisecond)
	}
	checkGone(t, workers)
	// A --netns launch running beside this test may remove the leftovers
	// first (it removes those of dead launchers): then there is nothing
	// to check but that they are gone.
	_, err = os.Stat("/sys/class/net/" + NetnsPrefix + "br" + id)
	left := err == nil
	out, err := exec.Command(gostachioBin(t), "cluster", "--cleanup").CombinedOutput()
	if err != nil {
		t.Fatalf("cluster --cleanup: %v\n%s", err, out)
	}
	if left && !strings.Contains(string(out), NetnsPrefix+"br"+id) {
		t.Errorf("cluster --cleanup did not report the bridge:\n%s", out)
	}
	if !left {
		t.Logf("the network was removed before --cleanup ran (a launch beside this test)")
	}
	checkNoNetns(t, id)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// TestNetnsTCPSettings: every namespace of an emulated cluster restarts
// no idle connection from TCP's initial window (NetnsTCPSysctl), and the
// root namespace keeps its own setting.
func TestNetnsTCPSettings(t *testing.T) {
	needNetns(t)
	id, err := NewNetnsID()
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.ReadFile("/proc/sys/net/ipv4/tcp_slow_start_after_idle")
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	n, err := NewNetns(id, 2, Link{Rate: 100e6})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if strings.Contains(n.Warning, NetnsTCPSysctl) {
		t.Fatalf("not set: %s", n.Warning)
	}
	for _, ns := range n.Names {
		out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/proc/sys/net/ipv4/tcp_slow_start_after_idle").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "0" {
			t.Errorf("%s: tcp_slow_start_after_idle %q (%v), want 0", ns, out, err)
		}
	}
	if now, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_slow_start_after_idle"); string(now) != string(root) {
		t.Errorf("the root namespace's setting changed: %q → %q", root, now)
	}
}

// TestNetnsQueue: a link's queue= sets each shaped veth's tbf limit (tc
// shows it as the latency it adds at the rate: 4 MiB less the 128 KiB
// bucket at 100 Mbit/s is 325 ms), and without it the queue holds 20 ms.
func TestNetnsQueue(t *testing.T) {
	needNetns(t)
	for _, c := range []struct {
		link Link
		want string
	}{
		{Link{Rate: 100e6, Queue: 4 << 20}, "lat 325ms"},
		{Link{Rate: 100e6}, "lat 20ms"},
	} {
		id, err := NewNetnsID()
		if err != nil {
			t.Fatal(err)
		}
		n, err := NewNetns(id, 2, c.link)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("tc", "qdisc", "show", "dev", n.HostVeths[0]).CombinedOutput()
		n.Close()
		if err != nil || !strings.Contains(string(out), "tbf") || !strings.Contains(string(out), c.want) {
			t.Errorf("%v: host veth's qdisc %q (%v), want a tbf with %q", c.link, out, err, c.want)
		}
	}
}
