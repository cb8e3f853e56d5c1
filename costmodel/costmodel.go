// Package costmodel holds the cost functions of gostachio as data: what a
// kernel costs on a device per operator kind, what a transfer costs on a link,
// and how an SSD's bandwidth grows with its queue depth. The simulator (sim/)
// reads them from a hardware profile; calibration (package calibrate) fits them
// from micro-benchmarks or engine traces. Every function here is pure: no clock, no randomness.
//
// Units: times are nanoseconds (float64 in formulas, int64 where they become
// virtual time), bandwidths are bytes per second (Rate), sizes are bytes.
package costmodel

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"gostachio/plan"
)

// OpCost is the cost of one operator kind on one device:
//
//	t(bytes, rows, terms, out) = Fixed + bytes/ByteRate + rows/RowRate + rows·terms/TermRate + out/OutRate
//	                             + rows·strTerms/StrTermRate + rows·Miss·max(0, 1 − Cache/ws)   (seconds → ns)
//
// where terms is the operator's expression work per row (plan.Op.Terms),
// strTerms the part of it on strings (plan.Op.StrTerms) and out the bytes
// it writes (a filter gathers its selected rows: its cost follows its
// selectivity, not only its input).
// A zero ByteRate, RowRate, TermRate, OutRate or StrTermRate means that term is free. Fixed is charged once
// per operator per kernel (setup of a fused operator: hash table probe
// setup, a reduction's final pass).
type OpCost struct {
	Fixed    Duration `yaml:"fixed"`
	ByteRate Rate     `yaml:"bytes"`
	RowRate  Rate     `yaml:"rows"`
	// TermRate prices expression terms: row·terms per second.
	TermRate Rate `yaml:"terms,omitempty"`
	// OutRate prices output bytes.
	OutRate Rate `yaml:"out,omitempty"`
	// StrTermRate prices string terms (plan.Op.StrTerms: row·strTerms per
	// second) on top of TermRate.
	StrTermRate Rate `yaml:"str_terms,omitempty"`
	// Miss and Cache price a working set that outgrows the caches (a hash
	// build's: its input; a probe's: the table it probes):
	// rows·Miss·max(0, 1 − Cache/ws) more for a working set of ws bytes, so
	// the per-row cost rises from the in-cache rate towards Miss more once
	// ws is past Cache bytes. Zero Miss: no such term.
	Miss  Duration `yaml:"miss,omitempty"`
	Cache Bytes    `yaml:"cache,omitempty"`
}

// missFraction is max(0, 1 − cache/bytes): the share of a working set of
// bytes that does not fit in cache bytes.
func missFraction(bytes, cache float64) float64 {
	if bytes <= cache || bytes <= 0 {
		return 0
	}
	return 1 - cache/bytes
}

// Ns is the operator's time in ns for bytes input bytes and rows input rows,
// per the formula on OpCost.
func (c OpCost) Ns(bytes, rows float64) float64 { return c.NsTerms(bytes, rows, 0) }

// NsTerms is Ns for an operator doing terms expression terms per row.
func (c OpCost) NsTerms(bytes, rows, terms float64) float64 { return c.NsOut(bytes, rows, terms, 0) }

// NsOut is NsTerms for an operator that also writes out output bytes
// (its working set, for the cache term, is its input).
func (c OpCost) NsOut(bytes, rows, terms, out float64) float64 {
	return c.NsTable(bytes, rows, terms, out, bytes)
}

// NsTable is NsOut for an operator whose working set is ws bytes (a
// probe: the table it probes).
func (c OpCost) NsTable(bytes, rows, terms, out, ws float64) float64 {
	return c.NsExpr(bytes, rows, terms, 0, out, ws)
}

// NsExpr is NsTable for an operator of which strTerms of its terms work
// on strings.
func (c OpCost) NsExpr(bytes, rows, terms, strTerms, out, ws float64) float64 {
	t := float64(c.Fixed)
	if c.StrTermRate > 0 {
		t += rows * strTerms * 1e9 / float64(c.StrTermRate)
	}
	if c.OutRate > 0 {
		t += out * 1e9 / float64(c.OutRate)
	}
	if c.TermRate > 0 {
		t += rows * terms * 1e9 / float64(c.TermRate)
	}
	if c.ByteRate > 0 {
		t += bytes * 1e9 / float64(c.ByteRate)
	}
	if c.RowRate > 0 {
		t += rows * 1e9 / float64(c.RowRate)
	}
	if c.Miss > 0 {
		t += rows * float64(c.Miss) * missFraction(ws, float64(c.Cache))
	}
	return t
}

// Device is the compute cost table of one device kind (a GPU, or the host
// CPU when it plays that role): a launch overhead per kernel and one OpCost
// per operator kind. Kernel time of a fused chain of operators is
//
//	T = Launch + Σ_i Ops[k_i].NsOut(b_i, r_i, terms_i, b_{i+1})
//
// where r_0, b_0 are the kernel's input rows and bytes and, for i > 0,
// r_i = r_{i-1}·sel_{i-1} and b_i = r_i·w_{i-1} (the previous operator's
// output width; b_{i-1}·sel_{i-1} when the width is unknown). Launch is the
// part that does not occupy the device's compute (it overlaps with other
// kernels in flight); the sum is the work that does (Work).
type Device struct {
	// Launch is the per-kernel launch / dispatch overhead.
	Launch Duration
	// Ops is indexed by plan.OpKind; kinds absent from a profile cost
	// nothing beyond Launch.
	Ops [plan.NumOpKinds]OpCost
	// Profiled prices operators measured on their own (calibration's
	// micro-benchmarks of the plans' filters, projections, partial
	// aggregates and shuffles), keyed by plan.Op.Fingerprint: such an
	// operator costs Scale times what Ops prices for its kind, with the
	// same inputs. Operators not in it are priced by Ops alone.
	Profiled map[string]OpScale
	// Reference is how long calibrate's CPU reference workload took on
	// the machine and at the time the prices were measured (0: unknown);
	// validate times it again beside the engine (internal/cpuref).
	Reference Duration
	// Fused, if set, prices every kernel as one fused pass over its input
	// (the GPU backend's compiled pipelines: each column read once, every
	// row's expressions computed whether or not a filter drops it):
	//
	//	T = Launch + Fused.NsExpr(b_0, r_0, Σ_i terms_i, Σ_i strTerms_i, 0, 0)
	//
	// in place of the per-operator sum; Ops and Profiled are then unused
	// for kernels.
	Fused *OpCost
}

// Slowed returns d with every compute price multiplied by factor: the
// launch, and each operator kind's fixed and cache-miss times (its rates
// divided by it); profiled operators' scales, relative to their kind,
// stay. Slowed(1) is d. It panics unless factor is positive and finite.
func (d Device) Slowed(factor float64) Device {
	if !(factor > 0) || math.IsInf(factor, 0) {
		panic(fmt.Sprintf("costmodel: Slowed by %g", factor))
	}
	t := func(x Duration) Duration { return Duration(math.Round(float64(x) * factor)) }
	r := func(x Rate) Rate { return Rate(float64(x) / factor) }
	out := d
	out.Launch = t(d.Launch)
	slow := func(c OpCost) OpCost {
		return OpCost{Fixed: t(c.Fixed), ByteRate: r(c.ByteRate), RowRate: r(c.RowRate), TermRate: r(c.TermRate),
			OutRate: r(c.OutRate), StrTermRate: r(c.StrTermRate), Miss: t(c.Miss), Cache: c.Cache}
	}
	for k, c := range d.Ops {
		out.Ops[k] = slow(c)
	}
	if d.Fused != nil {
		f := slow(*d.Fused)
		out.Fused = &f
	}
	return out
}

// OpScale is the price of one profiled operator relative to its kind's
// OpCost (Device.Profiled).
type OpScale struct {
	// Op is the operator's kind (plan.OpKind name): an entry whose kind
	// is not the operator's is ignored.
	Op string `yaml:"op"`
	// Case says where the samples came from ("q12 p0 filter").
	Case string `yaml:"case"`
	// Scale multiplies the kind's cost: Σ measured / Σ kind-priced over
	// the operator's samples (costmodel.FitOpScale). Positive.
	Scale float64 `yaml:"scale"`
}

// OpKeys is the fingerprint (plan.Op.Fingerprint) of each of ops, the keys
// of Device.Profiled.
func OpKeys(ops []plan.Op) []string {
	keys := make([]string, len(ops))
	for i := range ops {
		keys[i] = ops[i].Fingerprint()
	}
	return keys
}

// Work is the device-busy time in ns of one kernel running ops (fused, in
// order) over bytes input bytes and rows input rows, per the formula on
// Device (Launch excluded). With no ops it prices kind alone. Probes see
// no table (WorkTables does).
func (d *Device) Work(ops []plan.Op, kind plan.OpKind, bytes, rows int64) float64 {
	return d.WorkTables(ops, kind, bytes, rows, nil)
}

// WorkTables is Work where table(build) gives the bytes of the hash table
// built by pipeline build that a probe op probes (its working set: the
// OpCost cache term; TableBytes); nil, or 0 from it, prices a probe
// without that term. A build's own working set is TableBytes of its input
// rows.
func (d *Device) WorkTables(ops []plan.Op, kind plan.OpKind, bytes, rows int64, table func(build int) float64) float64 {
	return d.WorkShared(ops, kind, bytes, rows, table, 1)
}

// WorkShared is WorkTables for a device whose caches `sharers` copies of
// the same work use at once (the nodes of an emulated cluster, processes of
// one machine running the same pipelines): every working set counts
// sharers times against the Cache of the cost terms. It panics if sharers
// < 1.
func (d *Device) WorkShared(ops []plan.Op, kind plan.OpKind, bytes, rows int64, table func(build int) float64, sharers float64) float64 {
	var keys []string
	if len(d.Profiled) > 0 && len(ops) > 0 {
		keys = OpKeys(ops)
	}
	return d.WorkKeyed(ops, kind, bytes, rows, table, sharers, keys)
}

// WorkKeyed is WorkShared with ops' fingerprints given (OpKeys(ops), which
// a caller pricing the same ops many times computes once): an op whose key
// is in Profiled, with its kind, costs that entry's Scale times its kind's
// price. nil keys price every op by its kind. It panics if sharers < 1 or
// keys is neither nil nor as long as ops.
func (d *Device) WorkKeyed(ops []plan.Op, kind plan.OpKind, bytes, rows int64, table func(build int) float64, sharers float64, keys []string) float64 {
	return d.WorkKeyedBy(ops, kind, bytes, rows, table, sharers, keys, nil)
}

// WorkKeyedBy is WorkKeyed with each op's price multiplied by scale(its
// kind) (nil: 1): the simulator's co-location exemption
// (sim.NodeSpec.ColocationExempt). A fused device (Fused) prices its
// kernel whole, unscaled. It panics as WorkKeyed does.
func (d *Device) WorkKeyedBy(ops []plan.Op, kind plan.OpKind, bytes, rows int64, table func(build int) float64, sharers float64, keys []string, scale func(plan.OpKind) float64) float64 {
	if sharers < 1 {
		panic("costmodel: WorkShared with fewer than 1 sharer")
	}
	if keys != nil && len(keys) != len(ops) {
		panic("costmodel: WorkKeyed with keys not matching ops")
	}
	if d.Fused != nil {
		var terms, str float64
		for i := range ops {
			terms += ops[i].Terms()
			str += ops[i].StrTerms()
		}
		return d.Fused.NsExpr(float64(bytes), float64(rows), terms, str, 0, 0)
	}
	if len(ops) == 0 {
		if int(kind) >= len(d.Ops) {
			return 0
		}
		t := d.Ops[kind].Ns(float64(bytes), float64(rows))
		if scale != nil {
			t *= scale(kind)
		}
		return t
	}
	b, r := float64(bytes), float64(rows)
	var t float64
	for i := range ops {
		op := &ops[i]
		nb, nr := through(op, b, r)
		key := ""
		if keys != nil {
			key = keys[i]
		}
		ns := d.OpNs(op, b, r, nb, WorkingSet(op, b, r, table)*sharers, key)
		if scale != nil {
			ns *= scale(op.Kind)
		}
		t += ns
		b, r = nb, nr
	}
	return t
}

// WorkingSet is what op's cache term sees over bytes and rows of input:
// a build's table (TableBytes), the table a probe probes (table(op.Build);
// nil table: none), an aggregate's group state (AggState; a final's at
// most a group a row), else its input.
func WorkingSet(op *plan.Op, bytes, rows float64, table func(build int) float64) float64 {
	switch op.Kind {
	case plan.OpHashBuild:
		return TableBytes(op, rows)
	case plan.OpHashProbe:
		if table != nil {
			return table(op.Build)
		}
		return 0
	case plan.OpAggPartial:
		return AggState(op)
	case plan.OpAggFinal:
		// At most a group a row: a final fed by a shuffle holds its
		// device's share of the groups (q18's orders over 8 devices of 4
		// nodes: an eighth), not all of them.
		return min(AggState(op), rows*float64(max(op.OutWidth, 8)))
	}
	return bytes
}

// OpNs is the price in ns of op alone on d over bytes and rows of input,
// writing out bytes, with a working set of ws bytes (WorkingSet): its
// kind's OpCost at op's terms (a sort's times SortLog(rows)), times its
// Profiled scale when key (op's Fingerprint) has one of op's kind. 0 for
// a kind d does not price.
func (d *Device) OpNs(op *plan.Op, bytes, rows, out, ws float64, key string) float64 {
	if int(op.Kind) >= len(d.Ops) {
		return 0
	}
	terms, str := op.Terms(), op.StrTerms()
	if op.Kind == plan.OpSort {
		l := SortLog(rows)
		terms, str = terms*l, str*l
	}
	c := d.Ops[op.Kind].NsExpr(bytes, rows, terms, str, out, ws)
	if key != "" {
		if s, ok := d.Profiled[key]; ok && s.Op == op.Kind.String() {
			c *= s.Scale
		}
	}
	return c
}

// SortLog is the comparisons a row of a sort of rows rows takes,
// log2(max(2, rows)): a sort's terms (its keys, plan.Op.Terms and
// StrTerms) count once per comparison, so its price per row grows with
// its input (q16's sort on text keys: 330 ns a row at 4 Ki rows, 600 at
// 128 Ki).
func SortLog(rows float64) float64 { return math.Log2(max(2, rows)) }

// Through returns the bytes and rows that leave ops when bytes and rows
// enter them, as Work prices them: each op keeps its Selectivity of the
// rows (none set: all) and of the bytes, or OutWidth bytes per row where
// set; a final aggregate keeps at most its Groups rows.
func Through(ops []plan.Op, bytes, rows float64) (float64, float64) {
	for i := range ops {
		bytes, rows = through(&ops[i], bytes, rows)
	}
	return bytes, rows
}

func through(op *plan.Op, b, r float64) (float64, float64) {
	sel := op.Selectivity
	if sel <= 0 || math.IsNaN(sel) {
		sel = 1
	}
	nr := r * sel
	nb := b * sel
	if op.Kind == plan.OpAggFinal && op.Groups > 0 && nr > float64(op.Groups) {
		// A final merges its inputs' rows into at most its groups: a
		// gathered one receives every device's copy of them (q16's sort
		// after its final: 18 K rows, not the 37 K that arrive).
		nb, nr = nb*float64(op.Groups)/nr, float64(op.Groups)
	}
	if op.OutWidth > 0 {
		nb = nr * float64(op.OutWidth)
	}
	return nb, nr
}

// TableBytes is the working set of the hash table the engine builds for
// build op over rows rows: the structure every lookup reads at random
// (kernels/cpu HashTable.Footprint). With one key, d = rows·op.Distinct
// distinct keys (rows when op.Distinct is 0) in 16-byte slots, a power of
// two of at least 16 and 2d, plus a 4-byte chain link a row when keys
// repeat:
//
//	16·2^⌈log2 max(16, 2d)⌉ + [d < rows]·4·rows
//
// with several keys, 4-byte bucket heads over 2·rows and a hash and a link
// a row: 4·2^⌈log2 max(16, 2·rows)⌉ + 12·rows. The power of two is the
// engine's: a table of 70 K keys takes 4 MiB, one of 60 K 2 MiB.
func TableBytes(op *plan.Op, rows float64) float64 {
	if rows <= 0 {
		return 0
	}
	if len(op.Keys) != 1 {
		return 4*pow2Ceil(max(16, 2*rows)) + 12*rows
	}
	d := rows
	if op.Distinct > 0 && op.Distinct < 1 {
		d = rows * op.Distinct
	}
	ws := 16 * pow2Ceil(max(16, 2*d))
	if d < rows {
		ws += 4 * rows
	}
	return ws
}

// pow2Ceil is the least power of two ≥ x (x ≥ 1).
func pow2Ceil(x float64) float64 { return math.Exp2(math.Ceil(math.Log2(x))) }

// AggState is the working set of an aggregate op, partial or final: its
// group table at the plan's estimated groups, Groups·OutWidth bytes (a
// device folds every unit into one state, so a unit's rows look up a
// table of the whole state's size, not of the unit's groups; a final
// merges every partial state's rows into one such table). 0 without keys.
func AggState(op *plan.Op) float64 {
	if len(op.Keys) == 0 || op.Groups <= 1 {
		return 0
	}
	return float64(op.Groups) * float64(max(op.OutWidth, 8))
}

// UnmarshalYAML reads a device table:
//
//	launch: 5us
//	ops:
//	  scan: {fixed: 0s, bytes: 1.2TB/s, rows: 0}
//	  filter: {bytes: 1.2TB/s, rows: 100G/s}
//
// Operator names are plan.OpKind names; an unknown name is an error naming
// its line.
func (d *Device) UnmarshalYAML(n *yaml.Node) error {
	var raw struct {
		Launch    Duration             `yaml:"launch"`
		Reference Duration             `yaml:"reference"`
		Ops       map[string]yaml.Node `yaml:"ops"`
		Profiled  map[string]yaml.Node `yaml:"profiled"`
		Fused     yaml.Node            `yaml:"fused"`
	}
	if err := decodeStrict(n, &raw); err != nil {
		return err
	}
	d.Launch, d.Reference, d.Fused = raw.Launch, raw.Reference, nil
	d.Ops = [plan.NumOpKinds]OpCost{}
	d.Profiled = nil
	// Key lines: walk the mapping node to report unknown kinds by line.
	var opsNode, profNode *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch n.Content[i].Value {
		case "ops":
			opsNode = n.Content[i+1]
		case "profiled":
			profNode = n.Content[i+1]
		case "fused":
			var c OpCost
			if err := decodeStrict(n.Content[i+1], &c); err != nil {
				return fmt.Errorf("line %d: fused: %w", n.Content[i].Line, err)
			}
			d.Fused = &c
		}
	}
	if profNode != nil && profNode.Kind == yaml.MappingNode {
		d.Profiled = make(map[string]OpScale, len(profNode.Content)/2)
		for i := 0; i+1 < len(profNode.Content); i += 2 {
			key, val := profNode.Content[i], profNode.Content[i+1]
			var s OpScale
			if err := decodeStrict(val, &s); err != nil {
				return err
			}
			if _, err := plan.ParseOpKind(s.Op); err != nil {
				return fmt.Errorf("line %d: profiled operator %s: %w", key.Line, key.Value, err)
			}
			if !(s.Scale > 0) || math.IsInf(s.Scale, 0) {
				return fmt.Errorf("line %d: profiled operator %s: scale %g, want a positive number", key.Line, key.Value, s.Scale)
			}
			d.Profiled[key.Value] = s
		}
	}
	if opsNode == nil {
		return nil
	}
	for i := 0; i+1 < len(opsNode.Content); i += 2 {
		key, val := opsNode.Content[i], opsNode.Content[i+1]
		k, err := plan.ParseOpKind(key.Value)
		if err != nil {
			return fmt.Errorf("line %d: %w", key.Line, err)
		}
		var c OpCost
		if err := decodeStrict(val, &c); err != nil {
			return err
		}
		d.Ops[k] = c
	}
	return nil
}

// MarshalYAML writes c as one flow mapping, byte rates as bandwidths
// ("1.3TB/s") and row and term rates as counts ("30G/s"), zero terms left
// out; UnmarshalYAML reads it back as exactly c.
func (c OpCost) MarshalYAML() (any, error) {
	var out struct {
		Fixed       Duration `yaml:"fixed"`
		ByteRate    Rate     `yaml:"bytes,omitempty"`
		RowRate     string   `yaml:"rows,omitempty"`
		TermRate    string   `yaml:"terms,omitempty"`
		OutRate     Rate     `yaml:"out,omitempty"`
		StrTermRate string   `yaml:"str_terms,omitempty"`
		Miss        Duration `yaml:"miss,omitempty"`
		Cache       Bytes    `yaml:"cache,omitempty"`
	}
	out.Fixed, out.ByteRate, out.OutRate, out.Miss, out.Cache = c.Fixed, c.ByteRate, c.OutRate, c.Miss, c.Cache
	for _, f := range []struct {
		r   Rate
		dst *string
	}{{c.RowRate, &out.RowRate}, {c.TermRate, &out.TermRate}, {c.StrTermRate, &out.StrTermRate}} {
		if _, err := f.r.MarshalYAML(); err != nil {
			return nil, err
		}
		if f.r != 0 {
			*f.dst = f.r.FormatCount()
		}
	}
	return flowNode(&out)
}

// MarshalYAML writes s as one flow mapping.
func (s OpScale) MarshalYAML() (any, error) {
	type plain OpScale
	return flowNode(plain(s))
}

// MarshalYAML writes p as one flow mapping ({qd: 4, frac: 0.95}).
func (p QDPoint) MarshalYAML() (any, error) {
	type plain QDPoint
	return flowNode(plain(p))
}

// flowNode encodes v as a node in flow style.
func flowNode(v any) (*yaml.Node, error) {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	n.Style = yaml.FlowStyle
	return &n, nil
}

// MarshalYAML writes d in the layout UnmarshalYAML reads: launch,
// reference (when measured), the operator kinds it prices in plan.OpKind
// order, profiled operators by fingerprint, and fused. It reads back as
// exactly d.
func (d Device) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, v any) error {
		var val yaml.Node
		if err := val.Encode(v); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &val)
		return nil
	}
	if err := add("launch", d.Launch); err != nil {
		return nil, err
	}
	if d.Reference != 0 {
		if err := add("reference", d.Reference); err != nil {
			return nil, err
		}
	}
	ops := &yaml.Node{Kind: yaml.MappingNode}
	for k, c := range d.Ops {
		if c == (OpCost{}) {
			continue
		}
		var val yaml.Node
		if err := val.Encode(c); err != nil {
			return nil, fmt.Errorf("ops: %s: %w", plan.OpKind(k), err)
		}
		ops.Content = append(ops.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: plan.OpKind(k).String()}, &val)
	}
	if len(ops.Content) > 0 {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "ops"}, ops)
	}
	if len(d.Profiled) > 0 {
		keys := make([]string, 0, len(d.Profiled))
		for k := range d.Profiled {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		prof := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range keys {
			var val yaml.Node
			if err := val.Encode(d.Profiled[k]); err != nil {
				return nil, fmt.Errorf("profiled: %s: %w", k, err)
			}
			prof.Content = append(prof.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k, Style: yaml.DoubleQuotedStyle}, &val)
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "profiled"}, prof)
	}
	if d.Fused != nil {
		if err := add("fused", *d.Fused); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// decodeStrict decodes n into v rejecting unknown keys (yaml.Node.Decode
// does not honour KnownFields, so re-encode through a strict decoder would
// lose lines; instead check the keys against v's yaml tags first).
func decodeStrict(n *yaml.Node, v any) error {
	if n.Kind == yaml.MappingNode {
		allowed := yamlKeys(v)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if !allowed[k.Value] {
				return fmt.Errorf("line %d: unknown key %q (known: %s)", k.Line, k.Value, keyList(allowed))
			}
		}
	}
	return n.Decode(v)
}

func keyList(m map[string]bool) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	s := ""
	for i, k := range ks {
		if i > 0 {
			s += ", "
		}
		s += k
	}
	return s
}

// Transfer is the cost of moving bytes over one link in isolation:
//
//	t(bytes) = Latency + bytes / Bandwidth
//
// With sharing (several flows on a link) the simulator replaces the second
// term by the flow's max-min fair share over time.
type Transfer struct {
	Bandwidth Rate     `yaml:"bandwidth"`
	Latency   Duration `yaml:"latency"`
}

// Ns is the isolated transfer time of bytes in ns (formula on Transfer). A
// zero bandwidth means an infinitely fast link (latency only).
func (t Transfer) Ns(bytes int64) float64 {
	if t.Bandwidth <= 0 {
		return float64(t.Latency)
	}
	return float64(t.Latency) + float64(bytes)*1e9/float64(t.Bandwidth)
}

// QDPoint is one point of a queue-depth curve: with QD requests outstanding
// the device achieves Frac of its maximum bandwidth.
type QDPoint struct {
	QD   float64 `yaml:"qd"`
	Frac float64 `yaml:"frac"`
}

// Storage is the cost model of one SSD. Its achieved bandwidth depends on
// the number of outstanding requests q (the queue-depth curve):
//
//	B(q) = Bandwidth · f(q)
//
// where f interpolates Curve linearly in q, is f(Curve[0].QD)·q/Curve[0].QD
// below the first point and the last point's Frac beyond the last point; an
// empty curve means f ≡ 1. A read task of b bytes is Request-sized requests
// of which at most TaskQD are outstanding at once, so it contributes
// min(TaskQD, ⌈b/Request⌉) to q while it runs. Latency is charged once per
// read task (the first request's; later ones pipeline behind it).
type Storage struct {
	Bandwidth Rate      `yaml:"bandwidth"`
	Latency   Duration  `yaml:"latency"`
	Request   Bytes     `yaml:"request"`
	TaskQD    int       `yaml:"task_qd"`
	Curve     []QDPoint `yaml:"qd_curve,omitempty"`
	// DeviceQD is the most requests the reader keeps outstanding on the
	// device over all read tasks (the engine's io_uring queue depth): a
	// read task starts once its TaskRequests fit beside those of the tasks
	// in flight (or none is), first come first served, as the reader's
	// FIFO submission queue serves them. 0: every read task starts at
	// once and they share the bandwidth (processor sharing), so the first
	// unit is read no sooner than the last.
	DeviceQD int `yaml:"device_qd,omitempty"`
	// CPUSteal is what reads take from the host's cores, in ns of every
	// core's time per byte read: while the device delivers B bytes/ns,
	// each core runs at
	//
	//	1 / (1 + CPUSteal·B)
	//
	// of its speed. On a paravirtualized guest the host's side of a read
	// (interrupts, DMA mapping, the emulated device) runs on the cores
	// the guest's vCPUs run on: a compute loop with no memory traffic ran
	// 1.3–1.7x slower on every busy vCPU, one or both, while the engine's
	// reader streamed 1.7–2.5 GB/s (calibrate measures it; the simulator
	// applies it with sim.Net.SlowBy). 0: reads cost the cores nothing.
	CPUSteal float64 `yaml:"cpu_steal,omitempty"`
	// Completion is when the device reports a read done: CompletionEach
	// ("" or "each") as soon as its bytes are in, or CompletionBatch
	// ("batch") when the device next runs out of work, every read of its
	// busy period at once. Reads that arrive while it is busy join that
	// busy period. The virtio disk of a Firecracker guest comes close: a
	// small read submitted after large ones completes with them (processor
	// sharing ends it first), and four processes' reads complete within
	// 0.5 ms of each other (`calibrate` probes it).
	Completion string `yaml:"completion,omitempty"`
}

// Storage completion disciplines (Storage.Completion).
const (
	CompletionEach  = "each"
	CompletionBatch = "batch"
)

// Batched reports whether the device completes its reads in batches
// (Completion is CompletionBatch).
func (s *Storage) Batched() bool { return s.Completion == CompletionBatch }

// Frac is f(q) of the formula on Storage.
func (s *Storage) Frac(q float64) float64 {
	c := s.Curve
	if len(c) == 0 || q <= 0 {
		if len(c) == 0 {
			return 1
		}
		return 0
	}
	if q <= c[0].QD {
		return c[0].Frac * q / c[0].QD
	}
	for i := 1; i < len(c); i++ {
		if q <= c[i].QD {
			a, b := c[i-1], c[i]
			return a.Frac + (b.Frac-a.Frac)*(q-a.QD)/(b.QD-a.QD)
		}
	}
	return c[len(c)-1].Frac
}

// BandwidthAt is B(q) in bytes/s.
func (s *Storage) BandwidthAt(q float64) float64 { return float64(s.Bandwidth) * s.Frac(q) }

// MaxBandwidth is the most the curve reaches (bytes/s): the capacity used
// for the analytic bound.
func (s *Storage) MaxBandwidth() float64 {
	m := 1.0
	if len(s.Curve) > 0 {
		m = 0
		for _, p := range s.Curve {
			m = math.Max(m, p.Frac)
		}
	}
	return float64(s.Bandwidth) * m
}

// TaskRequests is how many requests a read of b bytes keeps outstanding
// (min(TaskQD, ⌈b/Request⌉), at least 1).
func (s *Storage) TaskRequests(b int64) int {
	qd := s.TaskQD
	if qd < 1 {
		qd = 1
	}
	if s.Request <= 0 {
		return qd
	}
	n := (b + int64(s.Request) - 1) / int64(s.Request)
	if n < 1 {
		n = 1
	}
	if n < int64(qd) {
		return int(n)
	}
	return qd
}

// Validate reports a storage model the simulator cannot use: a non-positive
// bandwidth, or a curve whose QDs do not strictly increase or whose
// fractions are outside (0, 1].
func (s *Storage) Validate() error {
	if s.Bandwidth <= 0 {
		return fmt.Errorf("costmodel: storage bandwidth must be positive")
	}
	if s.DeviceQD < 0 {
		return fmt.Errorf("costmodel: storage device_qd %d must not be negative", s.DeviceQD)
	}
	if !(s.CPUSteal >= 0) || math.IsInf(s.CPUSteal, 0) {
		return fmt.Errorf("costmodel: storage cpu_steal %g must be finite and not negative", s.CPUSteal)
	}
	switch s.Completion {
	case "", CompletionEach, CompletionBatch:
	default:
		return fmt.Errorf("costmodel: storage completion %q: want %q or %q", s.Completion, CompletionEach, CompletionBatch)
	}
	for i, p := range s.Curve {
		if p.QD <= 0 || p.Frac <= 0 || p.Frac > 1 {
			return fmt.Errorf("costmodel: qd_curve point %d (qd %g, frac %g): want qd > 0 and 0 < frac <= 1", i, p.QD, p.Frac)
		}
		if i > 0 && p.QD <= s.Curve[i-1].QD {
			return fmt.Errorf("costmodel: qd_curve point %d: qd %g does not increase", i, p.QD)
		}
	}
	return nil
}

// yamlKeys lists the yaml keys of the struct v points to.
func yamlKeys(v any) map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return m
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = true
	}
	return m
}
