package cluster

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gostachio/internal/units"
)

// An emulated cluster network (`gostachio cluster --netns`): one Linux
// network namespace per worker, each with a veth pair whose other end is
// on a bridge of the root namespace, every veth shaped with tc. Traffic
// between workers crosses two veths and the bridge and stays on this
// machine. Every resource is named after a run id (6 hex digits):
//
//	bridge      gst-br<id>
//	namespace   gst-<id>-<rank>
//	veths       gst-<id>-<rank>h (bridge side), gst-<id>-<rank>n (in the namespace)
//
// and the launcher's pid is kept in netnsStateDir/<id>, so that
// CleanupNetns can tell a crashed launcher's leftovers from a live run.

// Link is the shaping of every worker's link.
type Link struct {
	// Rate in bits per second (0: unshaped).
	Rate int64
	// Delay is added once per direction of each veth (0: none); a message
	// between two workers crosses two veths, so its one-way latency grows
	// by 2*Delay.
	Delay time.Duration
	// Queue is the bytes each shaped veth end holds waiting for the rate
	// (tbf's limit): the emulated switch port's buffer. 0: 20 ms at the
	// rate (250 KB at 100 Mbit/s, 2.5 MB at 1 Gbit/s). A queue smaller
	// than the windows of the flows converging on a port drops packets,
	// and TCP then shares the port unevenly: three streams into one
	// 100 Mbit/s port under the 250 KB default moved 9.7, 1.5 and 1.0 MB/s
	// with 400–1100 retransmissions each, under 2.5 MB 3.5, 3.5 and 5.0
	// MB/s with none (the 2-core development VM, 2026-11). The simulator prices what a queue
	// this small does to the exchange (nic_port: the transfers that find
	// it full wait for TCP's probe timer; nic_line_rate), as bench-sim
	// derives from the link; without those its links share max-min fairly
	// and lose nothing, as the paper's RDMA fabric does.
	Queue int64
}

// ParseLink parses "RATE[,DELAY][,queue=SIZE]": "10Gbit,50us", "1Gbit",
// "100Mbit,1ms", "100Mbit,queue=2.5MB" (rates in bit/s with k, M, G, T
// prefixes of 1000 and an optional "bit"/"bps" suffix; a delay as
// time.ParseDuration reads it; a queue as units.ParseBytes does, at least
// the tbf bucket's 128 KiB). "" is an unshaped link.
func ParseLink(s string) (Link, error) {
	var l Link
	s = strings.TrimSpace(s)
	if s == "" {
		return l, nil
	}
	fields := strings.Split(s, ",")
	rate := fields[0]
	var delay string
	hasDelay := false
	for _, f := range fields[1:] {
		f = strings.TrimSpace(f)
		if q, ok := strings.CutPrefix(strings.ToLower(f), "queue="); ok {
			if l.Queue != 0 {
				return l, fmt.Errorf("cluster: --link %q: more than one queue", s)
			}
			n, err := units.ParseBytes(q)
			if err != nil || n < minQueue {
				return l, fmt.Errorf("cluster: --link %q: queue %q is not a byte size of at least 128KiB (e.g. queue=2.5MB)", s, q)
			}
			l.Queue = n
			continue
		}
		if hasDelay {
			return l, fmt.Errorf("cluster: --link %q: more than one delay (want RATE[,DELAY][,queue=SIZE])", s)
		}
		delay, hasDelay = f, true
	}
	r := strings.ToLower(strings.TrimSpace(rate))
	r = strings.TrimSuffix(strings.TrimSuffix(r, "bit"), "bps")
	mult := int64(1)
	if n := len(r); n > 0 {
		switch r[n-1] {
		case 'k':
			mult, r = 1e3, r[:n-1]
		case 'm':
			mult, r = 1e6, r[:n-1]
		case 'g':
			mult, r = 1e9, r[:n-1]
		case 't':
			mult, r = 1e12, r[:n-1]
		}
	}
	f, err := strconv.ParseFloat(r, 64)
	if err != nil || f <= 0 || f*float64(mult) < 8000 {
		return l, fmt.Errorf("cluster: --link %q: rate %q is not a bit rate of at least 8kbit (e.g. 10Gbit, 500Mbit)", s, rate)
	}
	l.Rate = int64(f * float64(mult))
	if hasDelay {
		d, err := time.ParseDuration(strings.TrimSpace(delay))
		if err != nil || d < 0 {
			return l, fmt.Errorf("cluster: --link %q: delay %q is not a duration (e.g. 50us, 1ms)", s, delay)
		}
		l.Delay = d
	}
	return l, nil
}

func (l Link) String() string {
	if l.Rate == 0 && l.Delay == 0 {
		return "unshaped"
	}
	s := formatRate(l.Rate)
	if l.Delay > 0 {
		s += "," + l.Delay.String()
	}
	if l.Queue > 0 {
		s += ",queue=" + units.FormatBytes(l.Queue)
	}
	return s
}

// formatRate writes bits per second as tc and --link read them.
func formatRate(bps int64) string {
	switch {
	case bps == 0:
		return "unlimited"
	case bps%1e9 == 0:
		return strconv.FormatInt(bps/1e9, 10) + "Gbit"
	case bps%1e6 == 0:
		return strconv.FormatInt(bps/1e6, 10) + "Mbit"
	case bps%1e3 == 0:
		return strconv.FormatInt(bps/1e3, 10) + "Kbit"
	}
	return strconv.FormatInt(bps, 10) + "bit"
}

// Netns is an emulated cluster network set up by NewNetns. Close removes
// it.
type Netns struct {
	ID     string
	Bridge string
	// Names, HostVeths, Addrs: per rank, the namespace, the bridge-side
	// veth (in the root namespace: `ip link set H down` cuts the worker
	// off) and the worker's IPv4 address (no mask; the subnet is a /24).
	Names     []string
	HostVeths []string
	Addrs     []string
	Link      Link
	// DelayShaped is false when Link.Delay was asked for but this kernel
	// has no netem qdisc: only the rate is shaped (see Warning).
	DelayShaped bool
	Warning     string
	noNetem     bool // netem was refused: shape only the rate from then on
}

// NetnsPrefix starts the name of every resource an emulated cluster makes.
const NetnsPrefix = "gst-"

// netnsStateDir holds one file per live run, named by its id, with the
// launcher's pid.
var netnsStateDir = "/run/gostachio-netns"

var (
	netnsName = regexp.MustCompile(`^gst-([0-9a-f]{6})-[0-9]+$`)
	linkName  = regexp.MustCompile(`^gst-(?:br([0-9a-f]{6})|([0-9a-f]{6})-[0-9]+[hn])$`)
)

// CheckNetns reports why this process cannot make network namespaces:
// not root, or `ip` / `tc` (iproute2) missing.
func CheckNetns() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("--netns needs root and iproute2: running as uid %d (try sudo)", os.Geteuid())
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("--netns needs root and iproute2: %s not found (apt-get install -y iproute2): %w", tool, err)
		}
	}
	return nil
}

// NewNetnsID returns a fresh run id (6 hex digits) no resource uses.
func NewNetnsID() (string, error) {
	for range 16 {
		var b [3]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("cluster: netns run id: %w", err)
		}
		id := hex.EncodeToString(b[:])
		if _, err := os.Stat("/var/run/netns/" + NetnsPrefix + id + "-0"); errors.Is(err, os.ErrNotExist) {
			if _, err := os.Stat("/sys/class/net/" + NetnsPrefix + "br" + id); errors.Is(err, os.ErrNotExist) {
				return id, nil
			}
		}
	}
	return "", errors.New("cluster: netns run id: no free id after 16 tries")
}

// NewNetns makes the network of a `nodes`-worker cluster with run id id
// (NewNetnsID): the bridge, a namespace per worker with lo up and address
// 10.X.Y.rank+1/24 (X.Y from the id), and the veths, shaped with tc on
// both ends (tbf for the rate; netem for the delay where the kernel has
// it). On failure it removes what it made. The caller must Close the
// result (also on a signal: the resources outlive this process).
func NewNetns(id string, nodes int, link Link) (*Netns, error) {
	if err := CheckNetns(); err != nil {
		return nil, err
	}
	if nodes < 1 || nodes > 99 {
		return nil, fmt.Errorf("cluster: --netns supports 1 to 99 workers, not %d", nodes)
	}
	if len(id) != 6 {
		return nil, fmt.Errorf("cluster: netns run id %q: want 6 hex digits", id)
	}
	raw, err := hex.DecodeString(id)
	if err != nil {
		return nil, fmt.Errorf("cluster: netns run id %q: want 6 hex digits", id)
	}
	n := &Netns{ID: id, Bridge: NetnsPrefix + "br" + id, Link: link, DelayShaped: link.Delay == 0}
	if err := writeNetnsState(id); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			n.Close()
		}
	}()
	if err := ipCmd("link", "add", n.Bridge, "type", "bridge"); err != nil {
		return nil, err
	}
	if err := ipCmd("link", "set", n.Bridge, "up"); err != nil {
		return nil, err
	}
	for r := range nodes {
		ns := fmt.Sprintf("%s%s-%d", NetnsPrefix, id, r)
		h, in := ns+"h", ns+"n"
		addr := fmt.Sprintf("10.%d.%d.%d", raw[0], raw[1], r+1)
		n.Names = append(n.Names, ns)
		n.HostVeths = append(n.HostVeths, h)
		n.Addrs = append(n.Addrs, addr)
		steps := [][]string{
			{"netns", "add", ns},
			{"-n", ns, "link", "set", "lo", "up"},
			{"link", "add", h, "type", "veth", "peer", "name", in, "netns", ns},
			{"link", "set", h, "master", n.Bridge},
			{"link", "set", h, "up"},
			{"-n", ns, "addr", "add", addr + "/24", "dev", in},
			{"-n", ns, "link", "set", in, "up"},
		}
		for _, s := range steps {
			if err := ipCmd(s...); err != nil {
				return nil, err
			}
		}
		if err := ipCmd("netns", "exec", ns, "sh", "-c", "echo 0 > /proc/sys/net/ipv4/tcp_slow_start_after_idle"); err != nil && !strings.Contains(n.Warning, NetnsTCPSysctl) {
			n.Warning = joinWarning(n.Warning, fmt.Sprintf("%s not set in the namespaces (%v): a connection idle for a retransmission timeout starts again from TCP's initial window", NetnsTCPSysctl, err))
		}
		if err := n.shape("", h); err != nil {
			return nil, err
		}
		if err := n.shape(ns, in); err != nil {
			return nil, err
		}
	}
	ok = true
	return n, nil
}

// shape puts the link's qdisc on dev's egress (in namespace ns, "" the
// root one).
func (n *Netns) shape(ns, dev string) error {
	l := n.Link
	if l.Rate == 0 && l.Delay == 0 {
		return nil
	}
	tc := func(args ...string) error {
		if ns != "" {
			args = append([]string{"-n", ns}, args...)
		}
		return run("tc", args...)
	}
	if l.Delay > 0 && !n.noNetem {
		args := []string{"qdisc", "add", "dev", dev, "root", "netem", "delay", fmt.Sprintf("%dus", l.Delay.Microseconds()), "limit", "100000"}
		if l.Rate > 0 {
			args = append(args, "rate", formatRate(l.Rate))
		}
		err := tc(args...)
		if err == nil {
			n.DelayShaped = true
			return nil
		}
		if !strings.Contains(err.Error(), "qdisc kind is unknown") {
			return err
		}
		n.noNetem = true
		n.Warning = joinWarning(n.Warning, fmt.Sprintf("this kernel has no netem qdisc (sch_netem): the delay %v is not emulated, only the rate", l.Delay))
	}
	if l.Rate == 0 {
		return nil
	}
	// The bucket holds 1 ms at the rate, and at least two 64 KiB GSO
	// segments (veths pass segments of up to 64 KiB: a smaller bucket would
	// make tbf split or drop them); the queue holds 20 ms, or l.Queue.
	args := []string{"qdisc", "add", "dev", dev, "root", "tbf", "rate", formatRate(l.Rate), "burst", strconv.FormatInt(tbfBurst(l), 10)}
	if l.Queue > 0 {
		return tc(append(args, "limit", strconv.FormatInt(l.Queue, 10))...)
	}
	return tc(append(args, "latency", "20ms")...)
}

// minQueue is the least tbf bucket, and so the least queue a link may
// ask for: two 64 KiB GSO segments.
const minQueue = 128 << 10

// tbfBurst is the bucket of a shaped veth end (shapeLink): 1 ms at the
// rate, at least minQueue.
func tbfBurst(l Link) int64 { return max(l.Rate/8/1000, minQueue) }

// QueueBytes is the bytes a veth end shaped as l holds waiting for the
// rate (tbf's limit): l.Queue, or what tc makes of "latency 20ms", the
// rate times 20 ms plus the bucket. Only meaningful for a shaped link
// (Rate > 0).
func (l Link) QueueBytes() int64 {
	if l.Queue > 0 {
		return l.Queue
	}
	return l.Rate/8*20/1000 + tbfBurst(l)
}

// NetnsTCPSysctl is set in every namespace of an emulated cluster. By
// default Linux restarts a TCP connection that was idle for a
// retransmission timeout from its initial window (10 segments), a rule for
// paths whose capacity may have changed meanwhile. The data plane keeps
// one connection per pair of workers for the whole run and sends bursts
// between idle phases of a query, so with the rule each burst re-probed
// the link: on 100 Mbit/s links, under the shaper's 20 ms queues, a 1.3
// MB frame after a pause took 550 ms, a quarter of the link's rate. Links
// of a cluster do not change between bursts, and the simulator (which
// moves bytes at the link's rate from the first one) and RDMA (no window)
// have no such restart. Measured: bench-sim at 100 Mbit/s, two launches
// each way alternating, q3 1.18–1.24 s → 1.13 s, q18 0.73–0.82 → 0.71 s
// (the 2-core development VM, 2026-11).
const NetnsTCPSysctl = "net.ipv4.tcp_slow_start_after_idle=0"

// joinWarning appends warning w to the ones in ws.
func joinWarning(ws, w string) string {
	if ws == "" {
		return w
	}
	return ws + "; " + w
}

// Exec returns the command that runs name args in rank's namespace.
func (n *Netns) Exec(rank int, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.Names[rank], name}, args...)...)
}

// Close kills what still runs in the namespaces and removes them, the
// veths and the bridge. It reports the first failure but tries
// everything; resources already gone are not an error.
func (n *Netns) Close() error {
	var first error
	for _, ns := range n.Names {
		if err := removeNetns(ns); err != nil && first == nil {
			first = err
		}
	}
	for _, h := range n.HostVeths {
		if err := removeLink(h); err != nil && first == nil {
			first = err
		}
	}
	if err := removeLink(n.Bridge); err != nil && first == nil {
		first = err
	}
	os.Remove(filepath.Join(netnsStateDir, n.ID))
	return first
}

// CleanupNetns removes the namespaces, veths and bridges of emulated
// clusters (names starting with NetnsPrefix) whose launcher is gone (all
// of them with all set, live runs included) and kills what runs in those
// namespaces. It returns the names removed.
func CleanupNetns(all bool) ([]string, error) {
	if err := CheckNetns(); err != nil {
		return nil, err
	}
	stale := func(id string) bool { return all || !netnsLive(id) }
	var removed []string
	var first error
	out, err := output("ip", "netns", "list")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		m := netnsName.FindStringSubmatch(f[0])
		if m == nil || !stale(m[1]) {
			continue
		}
		if err := removeNetns(f[0]); err != nil && first == nil {
			first = err
		}
		removed = append(removed, f[0])
	}
	out, err = output("ip", "-o", "link", "show")
	if err != nil {
		return removed, err
	}
	ids := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		// "7: gst-0a1b2c-0h@if6: <...>"
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		m := linkName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		id := m[1] + m[2]
		if !stale(id) {
			continue
		}
		ids[id] = true
		if err := removeLink(name); err != nil && first == nil {
			first = err
		}
		removed = append(removed, name)
	}
	for id := range ids {
		os.Remove(filepath.Join(netnsStateDir, id))
	}
	return removed, first
}

// netnsLive reports whether run id's launcher still runs.
func netnsLive(id string) bool {
	b, err := os.ReadFile(filepath.Join(netnsStateDir, id))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

func writeNetnsState(id string) error {
	if err := os.MkdirAll(netnsStateDir, 0o755); err != nil {
		return fmt.Errorf("cluster: netns state: %w", err)
	}
	if err := os.WriteFile(filepath.Join(netnsStateDir, id), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return fmt.Errorf("cluster: netns state: %w", err)
	}
	return nil
}

// removeNetns kills the processes in namespace ns and deletes it (gone
// already: nil).
func removeNetns(ns string) error {
	if _, err := os.Stat("/var/run/netns/" + ns); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if out, err := output("ip", "netns", "pids", ns); err == nil {
		for _, f := range strings.Fields(out) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	err := ipCmd("netns", "del", ns)
	if err != nil && isGone(err) {
		return nil
	}
	return err
}

// removeLink deletes a network device (gone already: nil).
func removeLink(name string) error {
	if _, err := os.Stat("/sys/class/net/" + name); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	err := ipCmd("link", "del", name)
	if err != nil && isGone(err) {
		return nil
	}
	return err
}

// isGone is whether err from `ip` says the namespace or link was not
// there to remove.
func isGone(err error) bool {
	s := err.Error()
	// "No such device": a host veth whose namespace end went with its
	// namespace between the check and the delete (the kernel removes the
	// pair after `ip netns del` returns).
	return strings.Contains(s, "Cannot find device") || strings.Contains(s, "No such device") ||
		strings.Contains(s, "No such file") || strings.Contains(s, "does not exist")
}

func ipCmd(args ...string) error { return run("ip", args...) }

func run(name string, args ...string) error {
	_, err := output(name, args...)
	return err
}

// output runs a tool and returns its stdout; the error quotes the command
// line and its stderr.
func output(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("cluster: %s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// describe is the launcher's notice about the network.
func (n *Netns) describe(w io.Writer) {
	fmt.Fprintf(w, "cluster: netns run %s: bridge %s, namespaces %s..%s, workers at %s..%s/24, links %s (each veth, both directions)\n",
		n.ID, n.Bridge, n.Names[0], n.Names[len(n.Names)-1], n.Addrs[0], n.Addrs[len(n.Addrs)-1], n.Link)
	if n.Warning != "" {
		fmt.Fprintf(w, "cluster: warning: %s\n", n.Warning)
	}
}
