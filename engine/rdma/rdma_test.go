package rdma

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestEndpointRoundTrip(t *testing.T) {
	e := Endpoint{QPN: 0x1234, PSN: 0xabcdef, LID: 7, MTU: 5}
	for i := range e.GID {
		e.GID[i] = byte(i * 17)
	}
	b, err := e.MarshalBinary()
	if err != nil || len(b) != EndpointBytes {
		t.Fatalf("marshal: %d bytes, %v", len(b), err)
	}
	var got Endpoint
	if err := got.UnmarshalBinary(b); err != nil || got != e {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, e)
	}
	bad := func(name string, f func([]byte) []byte) {
		c := f(bytes.Clone(b))
		var x Endpoint
		if err := x.UnmarshalBinary(c); err == nil {
			t.Errorf("%s: decoded %+v", name, x)
		}
	}
	bad("short", func(b []byte) []byte { return b[:EndpointBytes-1] })
	bad("magic", func(b []byte) []byte { b[0] ^= 1; return b })
	bad("psn", func(b []byte) []byte { b[11] = 1; return b })
	bad("mtu", func(b []byte) []byte { b[30] = 6; return b })
	if PathMTU(Endpoint{MTU: 3}, Endpoint{MTU: 5}) != 3 {
		t.Error("PathMTU is not the smaller")
	}
}

func TestNormalizePCI(t *testing.T) {
	for in, want := range map[string]string{
		"0000:3b:00.0":     "0000:3b:00.0",
		"00000000:3B:00.0": "0000:3b:00.0", // nvidia-smi
		"3b:00.1":          "0000:3b:00.1",
		"0001:00:02.0":     "0001:00:02.0",
	} {
		got, err := NormalizePCI(in)
		if err != nil || got != want {
			t.Errorf("NormalizePCI(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "3b", "0000:3b:00", "0000:3g:00.0", "100000:3b:00.0", "0000:3b:00.0:1"} {
		if got, err := NormalizePCI(in); err == nil {
			t.Errorf("NormalizePCI(%q) = %q, want an error", in, got)
		}
	}
}

func TestNearestPure(t *testing.T) {
	up := []Port{{Num: 1, State: "ACTIVE"}}
	devs := []Device{
		{Name: "a", Path: "/sys/devices/pci0000:00/0000:00:02.0/0000:03:00.0", NUMA: 0},
		{Name: "b", Path: "/sys/devices/pci0000:00/0000:00:01.0/0000:02:00.0", NUMA: 0, Ports: up},
		{Name: "c", Path: "/sys/devices/pci0000:80/0000:80:01.0/0000:82:00.0", NUMA: 1, Ports: up},
		{Name: "d", Path: "/sys/devices/pci0000:c0/0000:c0:01.0/0000:c2:00.0", NUMA: 1},
	}
	for _, tc := range []struct {
		gpu  string
		numa int
		want string
	}{
		{"/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0", 0, "b"}, // same root port
		{"/sys/devices/pci0000:00/0000:00:02.0/0000:04:00.0", 0, "a"}, // same root port, port down
		{"/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0", 1, "c"},
		{"/sys/devices/pci0000:40/0000:40:01.0/0000:41:00.0", 1, "c"}, // no shared bridge: NUMA, then active
		{"/sys/devices/pci0000:40/0000:40:01.0/0000:41:00.0", -1, "b"},
	} {
		if got := nearest(devs, tc.gpu, tc.numa); got.Name != tc.want {
			t.Errorf("nearest(%s, numa %d) = %s, want %s", tc.gpu, tc.numa, got.Name, tc.want)
		}
	}
}

// fakeSysEnv, set, makes TestFakeSysfs build its tree: the test is then
// running under unshare -m, in its own mount namespace.
const fakeSysEnv = "GOSTACHIO_RDMA_FAKE_SYSFS"

// TestFakeSysfs runs discovery on a fake sysfs: it re-runs itself under
// `unshare -m` (root only), where tmpfs mounts over /sys/class, /sys/bus
// and /sys/devices hold two PCI root complexes with GPUs and RDMA devices
// laid out as the kernel does (class entries are symlinks into
// /sys/devices), invisible outside the namespace.
func TestFakeSysfs(t *testing.T) {
	if os.Getenv(fakeSysEnv) == "" {
		if os.Geteuid() != 0 {
			t.Skip("needs root for a private mount namespace (unshare -m)")
		}
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("needs unshare(1) (util-linux)")
		}
		if out, err := exec.Command("unshare", "-m", "--propagation", "private", "true").CombinedOutput(); err != nil {
			t.Skipf("cannot make a mount namespace here: %v %s", err, out)
		}
		cmd := exec.Command("unshare", "-m", "--propagation", "private",
			os.Args[0], "-test.run=^TestFakeSysfs$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), fakeSysEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("in the namespace:\n%s", out)
		if err != nil || !strings.Contains(string(out), "--- PASS: TestFakeSysfs") {
			t.Fatalf("discovery on the fake sysfs failed: %v", err)
		}
		return
	}
	for _, d := range []string{"/sys/class", "/sys/bus", "/sys/devices"} {
		if err := unix.Mount("tmpfs", d, "tmpfs", 0, "size=8m"); err != nil {
			t.Fatalf("mount tmpfs on %s: %v", d, err)
		}
	}
	buildFakeSysfs(t)

	devs, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	want := []Device{
		{Name: "mlx5_0", Path: "/sys/devices/pci0000:00/0000:00:01.0/0000:02:00.0", PCI: "0000:02:00.0", NUMA: 0,
			Ports:   []Port{{Num: 1, State: "ACTIVE", LinkLayer: "Ethernet", Netdevs: []string{"eth0"}}},
			Netdevs: []string{"eth0"}},
		{Name: "mlx5_1", Path: "/sys/devices/pci0000:80/0000:80:01.0/0000:82:00.0", PCI: "0000:82:00.0", NUMA: 1,
			Ports: []Port{{Num: 1, State: "ACTIVE", LinkLayer: "InfiniBand"},
				{Num: 2, State: "DOWN", LinkLayer: "InfiniBand"}},
			Netdevs: []string{"ib0"}},
		{Name: "mlx5_2", Path: "/sys/devices/pci0000:00/0000:00:03.0/0000:05:00.0", PCI: "0000:05:00.0", NUMA: 0,
			Ports:   []Port{{Num: 1, State: "DOWN", LinkLayer: "Ethernet", Netdevs: []string{"eth1"}}},
			Netdevs: []string{"eth1"}},
	}
	if !reflect.DeepEqual(devs, want) {
		t.Fatalf("Devices() =\n%+v\nwant\n%+v", devs, want)
	}
	for gpu, name := range map[string]string{
		"0000:01:00.0":     "mlx5_0", // behind the same root port
		"00000000:81:00.0": "mlx5_1", // nvidia-smi's form
		"0000:06:00.0":     "mlx5_2", // behind mlx5_2's root port (its port is down)
		"0000:41:00.0":     "mlx5_1", // own root complex: the device on its NUMA node
	} {
		d, err := NearestTo(gpu)
		if err != nil || d.Name != name {
			t.Errorf("NearestTo(%s) = %s, %v; want %s", gpu, d.Name, err, name)
		}
	}
	if _, err := NearestTo("0000:99:00.0"); err == nil {
		t.Error("NearestTo a missing PCI device succeeded")
	}
	for _, tc := range []struct {
		dev  string
		port int
		want int
	}{{"mlx5_0", 1, 3}, {"mlx5_1", 1, 0}} {
		if got, err := GIDIndex(tc.dev, tc.port); err != nil || got != tc.want {
			t.Errorf("GIDIndex(%s, %d) = %d, %v; want %d", tc.dev, tc.port, got, err, tc.want)
		}
	}
	if _, err := GIDIndex("mlx5_2", 1); err == nil {
		t.Error("GIDIndex of a port with no RoCE v2 address succeeded")
	}
	if d, p, err := Choose("", ""); err != nil || d.Name != "mlx5_0" || p.Num != 1 {
		t.Errorf("Choose() = %s port %d, %v; want mlx5_0 port 1", d.Name, p.Num, err)
	}
	if d, p, err := Choose("", "0000:81:00.0"); err != nil || d.Name != "mlx5_1" || p.Num != 1 {
		t.Errorf("Choose(gpu 81:00.0) = %s port %d, %v; want mlx5_1 port 1", d.Name, p.Num, err)
	}
	if _, _, err := Choose("mlx9_9", ""); err == nil {
		t.Error("Choose of a missing device succeeded")
	}
	// No devices at all.
	if err := os.RemoveAll("/sys/class/infiniband"); err != nil {
		t.Fatal(err)
	}
	if _, err := Devices(); !errors.Is(err, ErrNoDevices) {
		t.Errorf("Devices() without devices: %v, want ErrNoDevices", err)
	}
}

// buildFakeSysfs lays out (under the tmpfs mounts):
//
//	pci0000:00 (NUMA 0): 00:01.0 -> GPU 01:00.0, mlx5_0 02:00.0 (RoCE, eth0)
//	                     00:03.0 -> mlx5_2 05:00.0 (RoCE, port down, eth1), GPU 06:00.0
//	pci0000:80 (NUMA 1): 80:01.0 -> GPU 81:00.0, mlx5_1 82:00.0 (IB, ib0, 2 ports)
//	pci0000:40 (NUMA 1): 40:01.0 -> GPU 41:00.0
func buildFakeSysfs(t *testing.T) {
	t.Helper()
	write := func(path, data string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, path string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
	pci := func(root, bridge, fn string, numa int) string {
		dir := filepath.Join("/sys/devices", "pci"+root, bridge, fn)
		write(filepath.Join(dir, "numa_node"), string(rune('0'+numa)))
		link(filepath.Join("../../../devices", "pci"+root, bridge, fn), filepath.Join("/sys/bus/pci/devices", fn))
		return dir
	}
	rdmaDev := func(dir, name string) string {
		ib := filepath.Join(dir, "infiniband", name)
		if err := os.MkdirAll(ib, 0o755); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel("/sys/class/infiniband", ib)
		link(rel, filepath.Join("/sys/class/infiniband", name))
		rel, _ = filepath.Rel(ib, dir)
		link(rel, filepath.Join(ib, "device"))
		return ib
	}
	netDev := func(dir, name string) {
		nd := filepath.Join(dir, "net", name)
		if err := os.MkdirAll(nd, 0o755); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel("/sys/class/net", nd)
		link(rel, filepath.Join("/sys/class/net", name))
		rel, _ = filepath.Rel(nd, dir)
		link(rel, filepath.Join(nd, "device"))
	}
	port := func(ib string, n, state string, ll string) string {
		p := filepath.Join(ib, "ports", n)
		write(filepath.Join(p, "state"), state)
		write(filepath.Join(p, "link_layer"), ll)
		return p
	}
	gid := func(p, idx, typ, gid, ndev string) {
		write(filepath.Join(p, "gids", idx), gid)
		write(filepath.Join(p, "gid_attrs", "types", idx), typ)
		if ndev != "" {
			write(filepath.Join(p, "gid_attrs", "ndevs", idx), ndev)
		}
	}

	pci("0000:00", "0000:00:01.0", "0000:01:00.0", 0)
	nic := pci("0000:00", "0000:00:01.0", "0000:02:00.0", 0)
	ib := rdmaDev(nic, "mlx5_0")
	netDev(nic, "eth0")
	p := port(ib, "1", "4: ACTIVE", "Ethernet")
	gid(p, "0", "IB/RoCE v1", "fe80:0000:0000:0000:0202:c9ff:fe00:0001", "eth0")
	gid(p, "1", "RoCE v2", "fe80:0000:0000:0000:0202:c9ff:fe00:0001", "eth0")
	gid(p, "2", "IB/RoCE v1", "0000:0000:0000:0000:0000:ffff:0a00:0001", "eth0")
	gid(p, "3", "RoCE v2", "0000:0000:0000:0000:0000:ffff:0a00:0001", "eth0")
	gid(p, "4", "RoCE v2", "0000:0000:0000:0000:0000:0000:0000:0000", "")

	nic = pci("0000:00", "0000:00:03.0", "0000:05:00.0", 0)
	ib = rdmaDev(nic, "mlx5_2")
	netDev(nic, "eth1")
	p = port(ib, "1", "1: DOWN", "Ethernet")
	gid(p, "0", "IB/RoCE v1", "fe80:0000:0000:0000:0202:c9ff:fe00:0002", "eth1")
	pci("0000:00", "0000:00:03.0", "0000:06:00.0", 0)

	pci("0000:80", "0000:80:01.0", "0000:81:00.0", 1)
	nic = pci("0000:80", "0000:80:01.0", "0000:82:00.0", 1)
	ib = rdmaDev(nic, "mlx5_1")
	netDev(nic, "ib0")
	p = port(ib, "1", "4: ACTIVE", "InfiniBand")
	gid(p, "0", "IB/RoCE v1", "fe80:0000:0000:0000:0002:c903:0000:0001", "")
	port(ib, "2", "1: DOWN", "InfiniBand")

	pci("0000:40", "0000:40:01.0", "0000:41:00.0", 1)
	// An interface on no RDMA device, and a non-PCI class entry.
	netDev("/sys/devices/virtual", "lo")
}
