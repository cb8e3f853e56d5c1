package costmodel

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// EngineVersion names the cost behaviour of the CPU engine and its
// kernels: a profile calibrated against one engine version predicts
// another only by luck. Bump it when kernels, the engine's task execution
// or its storage path change what tasks cost.
const EngineVersion = "gostachio-cpu-engine/1"

// Provenance says where a calibrated profile's numbers come from: the
// hardware, the engine version, when, and from what (micro-benchmarks or
// traces). Hostname, CPU model, core count and engine version are
// compared by Mismatch; the rest is informational.
type Provenance struct {
	Hostname string `yaml:"hostname"`
	CPU      string `yaml:"cpu"`
	Cores    int    `yaml:"cores"`
	OS       string `yaml:"os"`
	Engine   string `yaml:"engine"`
	// Revision is the VCS revision of the binary that calibrated (not
	// compared: every commit changes it).
	Revision string `yaml:"revision"`
	Date     string `yaml:"date"`
	// Source is "micro-benchmarks" or "traces DIR".
	Source string `yaml:"source"`
	// GPU names the device a GPU profile was measured on (not compared:
	// finding it needs the driver).
	GPU string `yaml:"gpu,omitempty"`
}

// HostProvenance describes this machine and engine (Date and Source left
// empty for the caller).
func HostProvenance() Provenance {
	host, _ := os.Hostname()
	p := Provenance{Hostname: host, CPU: cpuModel(), Cores: runtime.NumCPU(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, Engine: EngineVersion}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				p.Revision = s.Value
			}
		}
	}
	return p
}

// cpuModel is /proc/cpuinfo's first "model name" ("" where unreadable).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Mismatch lists how p (a profile's provenance) differs from cur (this
// machine's) in what matters for its numbers: hostname, CPU model, core
// count, engine version. Empty fields of p are not compared.
func (p Provenance) Mismatch(cur Provenance) []string {
	var out []string
	cmp := func(what, have, want string) {
		if have != "" && have != want {
			out = append(out, fmt.Sprintf("%s %q (this machine: %q)", what, have, want))
		}
	}
	cmp("hostname", p.Hostname, cur.Hostname)
	cmp("cpu", p.CPU, cur.CPU)
	if p.Cores != 0 && p.Cores != cur.Cores {
		out = append(out, fmt.Sprintf("cores %d (this machine: %d)", p.Cores, cur.Cores))
	}
	cmp("engine", p.Engine, cur.Engine)
	return out
}
