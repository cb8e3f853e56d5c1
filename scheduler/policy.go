package scheduler

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gostachio/internal/units"
)

// Config is the full set of knobs the state machine follows. Every paper
// optimization is one knob, so each can be switched on its own (ablation);
// every registered policy is a set of defaults for the same knobs. The knob
// names (in --set strings) and meanings are in the knobs table (Knobs).
type Config struct {
	// Chunk is the target input bytes of one unit: consecutive stored
	// chunks of a table are grouped into units of about Chunk projected
	// bytes (a unit never splits a stored chunk). 0: one stored chunk per
	// unit. (knob "chunk"; chunking)
	Chunk int64
	// Depth is the most tasks of one stage (read, h2d, kernel, out) in
	// flight per device, and the bound of the queue behind each stage
	// (back-pressure). (knob "depth")
	Depth int
	// Window is the most units in flight per device between their first
	// read and their last task; 0: no bound besides Depth and memory.
	// (knob "window")
	Window int
	// DynBuf sizes each in-flight buffer to its unit (dynamic buffering);
	// off, every buffer is a fixed slot sized for the pipeline's largest
	// unit, so fewer fit in the budget. (knob "dynbuf")
	DynBuf bool
	// Defer defers synchronization: no host round trip per unit to learn
	// output sizes (buffers are sized from estimates, sizes learned late,
	// one sync per pipeline). Off: a TaskSync after every kernel whose
	// output size is data-dependent. (knob "defer")
	Defer bool
	// StageSync puts a host sync after every stage of every unit (the
	// naive synchronous loop). (knob "stagesync")
	StageSync bool
	// Combine merges the reads of adjacent projected columns of a stored
	// chunk into one read (reader combining); CombineGap is the largest
	// unprojected gap read through to merge two runs.
	// (knobs "combine", "gap")
	Combine    bool
	CombineGap int64
	// MetaCache reads each table's metadata once per node (metadata
	// caching); off, every unit first reads MetaBytes of metadata of each
	// stored chunk it covers. (knobs "metacache", "meta")
	MetaCache bool
	MetaBytes int64
	// Adaptive regulates each stage's in-flight limit between 1 and Depth
	// from its queues: a stage whose consumer starves grows, a stage whose
	// output queue backs up shrinks (queue-based scheduling with adaptive
	// regulation). Off: every stage uses Depth. (knob "adaptive")
	Adaptive bool
	// Multipath spreads a device's reads over all SSDs of the node, each to
	// the SSD with the fewest bytes assigned so far (data striped or
	// replicated over them); off, a device reads only from its paired SSD.
	// (knob "multipath")
	Multipath bool
	// Msg coalesces exchange output: each device buffers what its units
	// shuffle or gather per destination worker and sends a buffer once it
	// holds at least Msg bytes; what is left goes at the pipeline's end (or
	// earlier, when the node would otherwise stall on memory). Fewer,
	// larger messages, as real engines send. 0: one message per unit and
	// destination. Broadcasts are not coalesced (every destination gets a
	// unit's whole output, already one large message). (knob "msg")
	Msg int64
	// MinUnits is the fewest units of a scan pipeline each worker should
	// get: units shrink below Chunk (down to single stored chunks) when a
	// table is too small to give every worker this many, so no worker
	// idles while the last one finishes. 0: Chunk alone decides.
	// (knob "units")
	MinUnits int
	// Pinned caps the pinned host memory of a node, DevMem the memory of a
	// device; 0: the topology's capacity. (knobs "pinned", "devmem")
	Pinned, DevMem int64
}

// Validate reports knob values the state machine cannot use.
func (c Config) Validate() error {
	switch {
	case c.Chunk < 0:
		return fmt.Errorf("scheduler: knob chunk=%d is negative", c.Chunk)
	case c.Depth < 1:
		return fmt.Errorf("scheduler: knob depth=%d must be at least 1", c.Depth)
	case c.Window < 0:
		return fmt.Errorf("scheduler: knob window=%d is negative", c.Window)
	case c.CombineGap < 0:
		return fmt.Errorf("scheduler: knob gap=%d is negative", c.CombineGap)
	case c.MetaBytes < 0:
		return fmt.Errorf("scheduler: knob meta=%d is negative", c.MetaBytes)
	case c.MinUnits < 0:
		return fmt.Errorf("scheduler: knob units=%d is negative", c.MinUnits)
	case c.Msg < 0:
		return fmt.Errorf("scheduler: knob msg=%d is negative", c.Msg)
	case c.Pinned < 0:
		return fmt.Errorf("scheduler: knob pinned=%d is negative", c.Pinned)
	case c.DevMem < 0:
		return fmt.Errorf("scheduler: knob devmem=%d is negative", c.DevMem)
	}
	for _, k := range []struct {
		name string
		v    int
	}{{"depth", c.Depth}, {"window", c.Window}, {"units", c.MinUnits}} {
		if k.v > MaxKnobCount {
			return fmt.Errorf("scheduler: knob %s=%d above %d", k.name, k.v, MaxKnobCount)
		}
	}
	for _, k := range []struct {
		name string
		v    int64
	}{{"chunk", c.Chunk}, {"gap", c.CombineGap}, {"meta", c.MetaBytes}, {"msg", c.Msg}, {"pinned", c.Pinned}, {"devmem", c.DevMem}} {
		if k.v > MaxKnobBytes {
			return fmt.Errorf("scheduler: knob %s=%s above %s", k.name, units.FormatBytes(k.v), units.FormatBytes(MaxKnobBytes))
		}
	}
	return nil
}

// The largest knob values: counts of tasks or units in flight, and sizes.
// Far past any machine's, they keep the state machine's arithmetic (counts
// times sizes) within int64.
const (
	MaxKnobCount = 1 << 20
	MaxKnobBytes = 1 << 50 // 1 PiB
)

type knobKind uint8

const (
	knobBytes knobKind = iota
	knobInt
	knobBool
)

func (k knobKind) String() string {
	return [...]string{"bytes", "int", "bool"}[k]
}

// knob binds a --set name to a Config field.
type knob struct {
	name string
	kind knobKind
	doc  string
	i64  func(*Config) *int64
	i    func(*Config) *int
	b    func(*Config) *bool
}

var knobs = []knob{
	{name: "chunk", kind: knobBytes, doc: "target projected bytes per unit; stored chunks are grouped up to it (0: one stored chunk per unit)", i64: func(c *Config) *int64 { return &c.Chunk }},
	{name: "depth", kind: knobInt, doc: "tasks in flight per stage per device, and the bound of each stage's output queue (back-pressure)", i: func(c *Config) *int { return &c.Depth }},
	{name: "window", kind: knobInt, doc: "units in flight per device from first read to last task (0: bounded only by depth and memory)", i: func(c *Config) *int { return &c.Window }},
	{name: "dynbuf", kind: knobBool, doc: "dynamic buffering: each in-flight buffer sized to its unit; off: fixed slots sized for the largest unit", b: func(c *Config) *bool { return &c.DynBuf }},
	{name: "defer", kind: knobBool, doc: "deferred synchronization: no host round trip per unit; off: a sync after every data-dependent kernel", b: func(c *Config) *bool { return &c.Defer }},
	{name: "stagesync", kind: knobBool, doc: "host sync after every stage of every unit (the naive synchronous loop)", b: func(c *Config) *bool { return &c.StageSync }},
	{name: "combine", kind: knobBool, doc: "reader combining: one read per run of adjacent projected columns of a stored chunk", b: func(c *Config) *bool { return &c.Combine }},
	{name: "gap", kind: knobBytes, doc: "reader combining reads through unprojected gaps up to this size", i64: func(c *Config) *int64 { return &c.CombineGap }},
	{name: "metacache", kind: knobBool, doc: "metadata caching: one metadata read per table per node; off: one per stored chunk", b: func(c *Config) *bool { return &c.MetaCache }},
	{name: "meta", kind: knobBytes, doc: "bytes of one metadata read (file footer / chunk index)", i64: func(c *Config) *int64 { return &c.MetaBytes }},
	{name: "adaptive", kind: knobBool, doc: "adaptive regulation: per-stage in-flight limits in [1,depth] grow when the consumer starves, shrink when the output queue backs up", b: func(c *Config) *bool { return &c.Adaptive }},
	{name: "multipath", kind: knobBool, doc: "multi-path I/O: each read goes to the SSD of the node with the fewest bytes assigned; off: the device's paired SSD only", b: func(c *Config) *bool { return &c.Multipath }},
	{name: "units", kind: knobInt, doc: "balance: each worker gets at least this many units of a scan when the table allows (units shrink below chunk); 0: off", i: func(c *Config) *int { return &c.MinUnits }},
	{name: "msg", kind: knobBytes, doc: "exchange message coalescing: per destination, a device sends its buffered shuffle/gather output once it holds this many bytes (the rest at the pipeline's end); 0: one message per unit and destination", i64: func(c *Config) *int64 { return &c.Msg }},
	{name: "pinned", kind: knobBytes, doc: "pinned host memory budget per node (0: the topology's capacity)", i64: func(c *Config) *int64 { return &c.Pinned }},
	{name: "devmem", kind: knobBytes, doc: "memory budget per device (0: the topology's capacity)", i64: func(c *Config) *int64 { return &c.DevMem }},
}

// KnobInfo documents one knob.
type KnobInfo struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Doc  string `json:"doc"`
}

// Knobs lists every knob in a fixed order.
func Knobs() []KnobInfo {
	out := make([]KnobInfo, len(knobs))
	for i, k := range knobs {
		out[i] = KnobInfo{Name: k.name, Type: k.kind.String(), Doc: k.doc}
	}
	return out
}

func findKnob(name string) *knob {
	for i := range knobs {
		if knobs[i].name == name {
			return &knobs[i]
		}
	}
	return nil
}

// Get returns the value of the named knob of c, formatted as --set accepts
// it ("8MiB", "4", "on").
func (c *Config) Get(name string) (string, error) {
	k := findKnob(name)
	if k == nil {
		return "", fmt.Errorf("scheduler: unknown knob %q (known: %s)", name, knobNames())
	}
	switch k.kind {
	case knobBytes:
		return units.FormatBytes(*k.i64(c)), nil
	case knobInt:
		return strconv.Itoa(*k.i(c)), nil
	default:
		if *k.b(c) {
			return "on", nil
		}
		return "off", nil
	}
}

// Set assigns one knob from its text form. Bytes take units ("8MiB"),
// booleans on/off/true/false/1/0.
func (c *Config) Set(name, value string) error {
	k := findKnob(name)
	if k == nil {
		return fmt.Errorf("scheduler: unknown knob %q (known: %s)", name, knobNames())
	}
	v := strings.TrimSpace(value)
	switch k.kind {
	case knobBytes:
		n, err := units.ParseBytes(v)
		if err != nil {
			return fmt.Errorf("scheduler: knob %s=%q: %w", name, value, err)
		}
		*k.i64(c) = n
	case knobInt:
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("scheduler: knob %s=%q: want an integer", name, value)
		}
		*k.i(c) = n // its range is Validate's, one message for every bad value
	case knobBool:
		switch strings.ToLower(v) {
		case "on", "true", "1", "yes":
			*k.b(c) = true
		case "off", "false", "0", "no":
			*k.b(c) = false
		default:
			return fmt.Errorf("scheduler: knob %s=%q: want on or off", name, value)
		}
	}
	return nil
}

// Apply parses a --set string, "k=v,k=v,...", onto c and validates the
// result. Empty items are ignored; a key may not repeat.
func (c *Config) Apply(set string) error {
	seen := make(map[string]bool)
	for _, item := range strings.Split(set, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, val, ok := strings.Cut(item, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return fmt.Errorf("scheduler: --set item %q is not key=value", item)
		}
		if seen[key] {
			return fmt.Errorf("scheduler: --set names knob %q twice", key)
		}
		seen[key] = true
		if err := c.Set(key, val); err != nil {
			return err
		}
	}
	return c.Validate()
}

func knobNames() string {
	names := make([]string, len(knobs))
	for i, k := range knobs {
		names[i] = k.name
	}
	return strings.Join(names, ", ")
}

// PolicyInfo is a registered policy: its name, what it models, its knob
// defaults, its own parameters and how to build its hooks.
type PolicyInfo struct {
	Name     string
	Doc      string
	Defaults Config
	// Params are the policy's own parameters beyond the knobs, set with
	// --set like knobs (a name may not be a knob's).
	Params []Param
	// New builds the hooks of one node's scheduler from the resolved
	// knobs and parameters; it is called once per node of every run (and
	// once by NewPolicy to check the values). nil: KnobHooks, the knobs'
	// own decisions.
	New func(cfg Config, params Params) (Hooks, error)
}

// Param documents one parameter of a policy; Default is its text form as
// --set takes it.
type Param struct {
	Name    string `json:"name"`
	Doc     string `json:"doc"`
	Default string `json:"default"`
}

// Params are a policy's resolved parameters: every Param's value, its
// default unless --set gave one.
type Params struct {
	policy string
	names  []string
	vals   []string
}

// String is the text of parameter name ("" if the policy has none such).
func (p Params) String(name string) string {
	for i, n := range p.names {
		if n == name {
			return p.vals[i]
		}
	}
	return ""
}

// Float parses parameter name as a number.
func (p Params) Float(name string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(p.String(name)), 64)
	if err != nil {
		return 0, fmt.Errorf("scheduler: policy %s: parameter %s=%q: want a number", p.policy, name, p.String(name))
	}
	return v, nil
}

// Int parses parameter name as a non-negative integer.
func (p Params) Int(name string) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(p.String(name)))
	if err != nil || v < 0 {
		return 0, fmt.Errorf("scheduler: policy %s: parameter %s=%q: want a non-negative integer", p.policy, name, p.String(name))
	}
	return v, nil
}

// Bytes parses parameter name as a size ("8MiB").
func (p Params) Bytes(name string) (int64, error) {
	v, err := units.ParseBytes(strings.TrimSpace(p.String(name)))
	if err != nil {
		return 0, fmt.Errorf("scheduler: policy %s: parameter %s=%q: %w", p.policy, name, p.String(name), err)
	}
	return v, nil
}

// Bool parses parameter name as on/off.
func (p Params) Bool(name string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(p.String(name))) {
	case "on", "true", "1", "yes":
		return true, nil
	case "off", "false", "0", "no":
		return false, nil
	}
	return false, fmt.Errorf("scheduler: policy %s: parameter %s=%q: want on or off", p.policy, name, p.String(name))
}

// Encode writes the parameters as a --set string ("k=v,k=v", in the
// policy's order; "" without parameters).
func (p Params) Encode() string {
	parts := make([]string, len(p.names))
	for i := range p.names {
		parts[i] = p.names[i] + "=" + p.vals[i]
	}
	return strings.Join(parts, ",")
}

func defaultParams(info *PolicyInfo) Params {
	ps := Params{policy: info.Name}
	for _, p := range info.Params {
		ps.names = append(ps.names, p.Name)
		ps.vals = append(ps.vals, p.Default)
	}
	return ps
}

var registry []PolicyInfo

// Register adds a policy to the registry (a policy's package calls it from
// init). It fails on a duplicate or empty name, invalid defaults, a
// parameter named like a knob or twice, and defaults its New refuses.
func Register(p PolicyInfo) error {
	if p.Name == "" {
		return fmt.Errorf("scheduler: register: empty policy name")
	}
	if err := p.Defaults.Validate(); err != nil {
		return fmt.Errorf("scheduler: register %s: %w", p.Name, err)
	}
	for _, q := range registry {
		if q.Name == p.Name {
			return fmt.Errorf("scheduler: register: policy %q already registered", p.Name)
		}
	}
	seen := map[string]bool{}
	for _, pr := range p.Params {
		if pr.Name == "" || findKnob(pr.Name) != nil || seen[pr.Name] || strings.ContainsAny(pr.Name, "=, ") {
			return fmt.Errorf("scheduler: register %s: parameter name %q is empty, a knob's, malformed or given twice", p.Name, pr.Name)
		}
		seen[pr.Name] = true
	}
	if p.New != nil {
		if _, err := p.New(p.Defaults, defaultParams(&p)); err != nil {
			return fmt.Errorf("scheduler: register %s: defaults: %w", p.Name, err)
		}
	}
	registry = append(registry, p)
	return nil
}

// MustRegister is Register for a policy package's init: a policy that
// cannot register is a programming error of that package.
func MustRegister(p PolicyInfo) {
	if err := Register(p); err != nil {
		panic(err)
	}
}

// Policies lists the registered policies in registration order.
func Policies() []PolicyInfo {
	return append([]PolicyInfo(nil), registry...)
}

// NewPolicy returns the named policy with the --set string applied on top of
// its defaults ("" for none): knobs and the policy's own parameters.
func NewPolicy(name, set string) (Policy, error) {
	for i := range registry {
		info := &registry[i]
		if info.Name != name {
			continue
		}
		cfg := info.Defaults
		params := defaultParams(info)
		var knobSet []string
		seen := map[string]bool{}
		for _, item := range strings.Split(set, ",") {
			key, val, ok := strings.Cut(strings.TrimSpace(item), "=")
			key = strings.TrimSpace(key)
			j := slices.Index(params.names, key)
			if !ok || key == "" || j < 0 {
				knobSet = append(knobSet, item)
				continue
			}
			if seen[key] {
				return nil, fmt.Errorf("scheduler: policy %s: --set names parameter %q twice", name, key)
			}
			seen[key] = true
			params.vals[j] = strings.TrimSpace(val)
		}
		if err := cfg.Apply(strings.Join(knobSet, ",")); err != nil {
			if len(params.names) > 0 && strings.Contains(err.Error(), "unknown knob") {
				err = fmt.Errorf("%w; parameters of %s: %s", err, name, strings.Join(params.names, ", "))
			}
			return nil, fmt.Errorf("scheduler: policy %s: %w", name, err)
		}
		if info.New != nil {
			if _, err := info.New(cfg, params); err != nil {
				return nil, err
			}
		}
		return policy{name: name, cfg: cfg, params: params, newHooks: info.New}, nil
	}
	names := make([]string, len(registry))
	for i, p := range registry {
		names[i] = p.Name
	}
	sort.Strings(names)
	return nil, fmt.Errorf("scheduler: unknown policy %q (known: %s)", name, strings.Join(names, ", "))
}

// PolicyOf wraps a Config as a Policy named name (for experiments that build
// knobs programmatically): KnobHooks under cfg. It validates cfg.
func PolicyOf(name string, cfg Config) (Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return policy{name: name, cfg: cfg}, nil
}

type policy struct {
	name     string
	cfg      Config
	params   Params
	newHooks func(Config, Params) (Hooks, error)
}

var _ Policy = policy{}

func (p policy) Name() string   { return p.name }
func (p policy) Config() Config { return p.cfg }

// Params is the policy's resolved parameters.
func (p policy) Params() Params { return p.params }

// Hooks builds the policy's hooks; NewPolicy already checked that they
// build, so an error here is nil hooks (NewFor reports it).
func (p policy) Hooks() Hooks {
	if p.newHooks == nil {
		return &KnobHooks{}
	}
	h, err := p.newHooks(p.cfg, p.params)
	if err != nil {
		return nil
	}
	return h
}

// The built-in policies. Each is defaults for the same knobs.
func init() {
	builtin := []PolicyInfo{
		{Name: "serial", Doc: "naive baseline: one unit at a time per device through read -> copy -> compute, host sync after every stage, one read per column, metadata per chunk",
			Defaults: Config{Depth: 1, Window: 1, StageSync: true, MetaBytes: 64 << 10}},
		{Name: "double-buffer", Doc: "two units in flight per device: the next unit is read and copied while the current one computes; a sync per kernel",
			Defaults: Config{Depth: 1, Window: 2, MetaBytes: 64 << 10}},
		{Name: "pipeline", Doc: "k units in flight per stage per device with bounded queues between stages (back-pressure); a sync per kernel",
			Defaults: Config{Depth: 4, MetaBytes: 64 << 10}},
		{Name: "overlap", Doc: "the paper's full design: chunking (balanced: at least 4 units per worker), dynamic buffering, deferred sync, reader combining, metadata caching, adaptive queues, multi-path I/O, coalesced exchange messages; each knob can be switched off alone",
			Defaults: Config{Chunk: 64 << 20, Depth: 8, DynBuf: true, Defer: true, Combine: true, CombineGap: 1 << 20,
				MetaCache: true, MetaBytes: 64 << 10, Adaptive: true, Multipath: true, Msg: 1 << 20, MinUnits: 4}},
	}
	for _, p := range builtin {
		MustRegister(p)
	}
}
