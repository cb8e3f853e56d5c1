// Package rdma is gostachio's thin layer over RDMA verbs: discovery of the
// RDMA devices (pure Go, from sysfs, through github.com/Mellanox/rdmamap),
// the choice of the device nearest a GPU, and, in builds with the rdma tag
// (cgo, libibverbs), reliable-connected queue pairs that send and receive
// between registered buffers. Without the tag the package compiles without
// cgo: Available reports false and Open returns ErrNoRDMA.
package rdma

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/Mellanox/rdmamap"
)

// Sysfs locations (rdmamap's): the RDMA class, the PCI devices and the
// network interfaces. Discovery reads nothing else.
const (
	classDir  = rdmamap.RdmaClassDir // /sys/class/infiniband
	pciDevDir = rdmamap.PciDevDir    // /sys/bus/pci/devices
	netDir    = "/sys/class/net"
)

// ErrNoDevices: the machine has no RDMA device (or no sysfs).
var ErrNoDevices = errors.New("rdma: no RDMA devices in " + classDir)

// Device is one RDMA device as sysfs describes it.
type Device struct {
	// Name is the verbs device name ("mlx5_0").
	Name string
	// Path is the device's resolved sysfs path, its PCI function for a
	// PCI device ("/sys/devices/pci0000:00/0000:00:01.0/0000:05:00.0");
	// empty when the device link is missing.
	Path string
	// PCI is the PCI address of the function ("0000:05:00.0"); empty when
	// the device is not a PCI function.
	PCI string
	// NUMA is the device's NUMA node, -1 when unknown.
	NUMA int
	// Ports by number.
	Ports []Port
	// Netdevs are the network interfaces on the device (RoCE netdevs of
	// the ports' GID tables and the interfaces of the PCI function),
	// sorted.
	Netdevs []string
}

// Port is one port of an RDMA device.
type Port struct {
	Num int
	// State is the state's name ("ACTIVE", "DOWN"); empty when unknown.
	State string
	// LinkLayer is "InfiniBand" or "Ethernet" (RoCE); empty when unknown.
	LinkLayer string
	// Netdevs are the interfaces in the port's GID table (RoCE), sorted.
	Netdevs []string
}

// Active reports whether the port's state is ACTIVE.
func (p Port) Active() bool { return p.State == "ACTIVE" }

// ActivePort returns the device's first active port, or false.
func (d Device) ActivePort() (Port, bool) {
	for _, p := range d.Ports {
		if p.Active() {
			return p, true
		}
	}
	return Port{}, false
}

// Devices lists the RDMA devices, sorted by name. No device is
// ErrNoDevices; unreadable details leave fields empty rather than fail
// (sysfs differs between drivers).
func Devices() ([]Device, error) {
	names := rdmamap.GetRdmaDeviceList()
	if len(names) == 0 {
		return nil, ErrNoDevices
	}
	sort.Strings(names)
	nets := netdevsByPath()
	out := make([]Device, 0, len(names))
	for _, name := range names {
		d := Device{Name: name, NUMA: -1}
		if p, err := filepath.EvalSymlinks(filepath.Join(classDir, name, "device")); err == nil {
			d.Path = p
			d.NUMA = readNUMA(p)
			if isPCIAddr(filepath.Base(p)) {
				d.PCI = filepath.Base(p)
			}
		}
		all := map[string]bool{}
		for _, ps := range rdmamap.GetPorts(name) {
			n, err := strconv.Atoi(ps)
			if err != nil {
				continue
			}
			port := readPort(name, n)
			for _, nd := range port.Netdevs {
				all[nd] = true
			}
			d.Ports = append(d.Ports, port)
		}
		sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Num < d.Ports[j].Num })
		if d.Path != "" {
			for _, nd := range nets[d.Path] {
				all[nd] = true
			}
		}
		d.Netdevs = sortedKeys(all)
		out = append(out, d)
	}
	return out, nil
}

// readPort reads port n of device dev: its state, link layer and the
// netdevs of its GID table (gid_attrs/ndevs/<index>, as rdmamap reads
// them).
func readPort(dev string, n int) Port {
	dir := filepath.Join(classDir, dev, rdmamap.RdmaPortsdir, strconv.Itoa(n))
	p := Port{Num: n, LinkLayer: readTrim(filepath.Join(dir, "link_layer"))}
	// state reads "4: ACTIVE".
	if st := readTrim(filepath.Join(dir, "state")); st != "" {
		if _, name, ok := strings.Cut(st, ":"); ok {
			st = name
		}
		p.State = strings.TrimSpace(st)
	}
	ndevs := filepath.Join(dir, rdmamap.RdmaGidAttrDir, rdmamap.RdmaGidAttrNdevDir)
	ents, _ := os.ReadDir(ndevs)
	set := map[string]bool{}
	for _, e := range ents {
		if nd := readTrim(filepath.Join(ndevs, e.Name())); nd != "" {
			set[nd] = true
		}
	}
	p.Netdevs = sortedKeys(set)
	return p
}

// netdevsByPath maps resolved device paths to the interfaces whose
// /sys/class/net/<if>/device link points at them.
func netdevsByPath() map[string][]string {
	m := map[string][]string{}
	ents, _ := os.ReadDir(netDir)
	for _, e := range ents {
		p, err := filepath.EvalSymlinks(filepath.Join(netDir, e.Name(), "device"))
		if err != nil {
			continue
		}
		m[p] = append(m[p], e.Name())
	}
	return m
}

// Find returns the device named name.
func Find(name string) (Device, error) {
	devs, err := Devices()
	if err != nil {
		return Device{}, err
	}
	for _, d := range devs {
		if d.Name == name {
			return d, nil
		}
	}
	return Device{}, fmt.Errorf("rdma: no RDMA device %q in %s", name, classDir)
}

// NearestTo returns the RDMA device nearest the PCI device at pciAddr (a
// GPU's, "0000:3b:00.0"; nvidia-smi's 8-digit domain "00000000:3b:00.0" is
// accepted): the one whose sysfs path shares the most components with the
// GPU's (same PCIe switch before same root port before same host bridge),
// then one on the GPU's NUMA node, then one with an active port, then the
// first by name. An address that is not in /sys/bus/pci/devices is an
// error.
func NearestTo(pciAddr string) (Device, error) {
	addr, err := NormalizePCI(pciAddr)
	if err != nil {
		return Device{}, err
	}
	gpu, err := filepath.EvalSymlinks(filepath.Join(pciDevDir, addr))
	if err != nil {
		return Device{}, fmt.Errorf("rdma: PCI device %s: %w", addr, err)
	}
	devs, err := Devices()
	if err != nil {
		return Device{}, err
	}
	return nearest(devs, gpu, readNUMA(gpu)), nil
}

// nearest picks from devs (not empty, sorted by name) the device nearest
// the sysfs path gpu on NUMA node numa (-1: unknown), as NearestTo.
func nearest(devs []Device, gpu string, numa int) Device {
	type key struct {
		shared         int
		sameNUMA, live bool
	}
	better := func(a, b key) bool {
		if a.shared != b.shared {
			return a.shared > b.shared
		}
		if a.sameNUMA != b.sameNUMA {
			return a.sameNUMA
		}
		return a.live && !b.live
	}
	best, bestKey := 0, key{shared: -1}
	for i, d := range devs {
		_, live := d.ActivePort()
		k := key{shared: sharedComponents(gpu, d.Path), sameNUMA: numa >= 0 && d.NUMA == numa, live: live}
		if better(k, bestKey) {
			best, bestKey = i, k
		}
	}
	return devs[best]
}

// sharedComponents counts the leading path components a and b share (0
// when either is empty).
func sharedComponents(a, b string) int {
	if a == "" || b == "" {
		return 0
	}
	as := strings.Split(filepath.Clean(a), "/")
	bs := strings.Split(filepath.Clean(b), "/")
	n := 0
	for n < len(as) && n < len(bs) && as[n] == bs[n] {
		n++
	}
	return n
}

// NormalizePCI returns the sysfs form of a PCI address: lower case, a
// 4-digit domain ("0000:3b:00.0"), a missing domain read as 0000.
func NormalizePCI(addr string) (string, error) {
	a := strings.ToLower(strings.TrimSpace(addr))
	parts := strings.Split(a, ":")
	switch len(parts) {
	case 2:
		parts = append([]string{"0000"}, parts...)
	case 3:
		d := strings.TrimLeft(parts[0], "0")
		if len(d) > 4 {
			return "", fmt.Errorf("rdma: PCI address %q: domain out of range", addr)
		}
		parts[0] = strings.Repeat("0", 4-len(d)) + d
	default:
		return "", fmt.Errorf("rdma: %q is not a PCI address (domain:bus:device.function)", addr)
	}
	out := strings.Join(parts, ":")
	if !isPCIAddr(out) {
		return "", fmt.Errorf("rdma: %q is not a PCI address (domain:bus:device.function)", addr)
	}
	return out, nil
}

// isPCIAddr reports whether s has the sysfs form dddd:bb:dd.f (hex).
func isPCIAddr(s string) bool {
	if len(s) != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.' {
		return false
	}
	for i, c := range s {
		if i == 4 || i == 7 || i == 10 {
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// GIDIndex returns the GID table index to address port of device dev
// with: 0 on InfiniBand (routed by LID); on Ethernet (RoCE) the first
// RoCE v2 entry with a non-zero GID, preferring an IPv4-mapped one, as
// RoCE v2 is routable and IPv4 is what the cluster's TCP addresses use.
func GIDIndex(dev string, port int) (int, error) {
	dir := filepath.Join(classDir, dev, rdmamap.RdmaPortsdir, strconv.Itoa(port))
	ll := readTrim(filepath.Join(dir, "link_layer"))
	if ll == "" {
		return 0, fmt.Errorf("rdma: %s port %d: no link layer in %s", dev, port, dir)
	}
	if ll != "Ethernet" {
		return 0, nil
	}
	ents, err := os.ReadDir(filepath.Join(dir, "gids"))
	if err != nil {
		return 0, fmt.Errorf("rdma: %s port %d: GID table: %w", dev, port, err)
	}
	var idx []int
	for _, e := range ents {
		if i, err := strconv.Atoi(e.Name()); err == nil {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	found := -1
	for _, i := range idx {
		typ := readTrim(filepath.Join(dir, rdmamap.RdmaGidAttrDir, "types", strconv.Itoa(i)))
		if !strings.EqualFold(typ, "RoCE v2") {
			continue
		}
		gid := readTrim(filepath.Join(dir, "gids", strconv.Itoa(i)))
		if gid == "" || strings.Trim(gid, "0:") == "" {
			continue
		}
		if strings.HasPrefix(gid, "0000:0000:0000:0000:0000:ffff:") {
			return i, nil
		}
		if found < 0 {
			found = i
		}
	}
	if found < 0 {
		return 0, fmt.Errorf("rdma: %s port %d (Ethernet) has no RoCE v2 GID with an address", dev, port)
	}
	return found, nil
}

// Choose picks the device to use: the one named name when not empty, else
// the one nearest the PCI device gpuPCI when not empty, else the first
// with an active port, else the first. It returns the device and its first
// active port (or its first port).
func Choose(name, gpuPCI string) (Device, Port, error) {
	var d Device
	var err error
	switch {
	case name != "":
		d, err = Find(name)
	case gpuPCI != "":
		d, err = NearestTo(gpuPCI)
	default:
		var devs []Device
		if devs, err = Devices(); err == nil {
			d = devs[0]
			for _, x := range devs {
				if _, ok := x.ActivePort(); ok {
					d = x
					break
				}
			}
		}
	}
	if err != nil {
		return Device{}, Port{}, err
	}
	if p, ok := d.ActivePort(); ok {
		return d, p, nil
	}
	if len(d.Ports) == 0 {
		return Device{}, Port{}, fmt.Errorf("rdma: device %s has no ports in %s", d.Name, classDir)
	}
	return d, d.Ports[0], nil
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readNUMA(devPath string) int {
	n, err := strconv.Atoi(readTrim(filepath.Join(devPath, "numa_node")))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

func sortedKeys(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
