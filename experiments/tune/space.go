package tune

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gostachio/internal/units"
	"gostachio/scheduler"
)

// Param is one searched parameter: a knob of the policy's knob table and
// the values the search may give it, in order (small to large, off before
// on), as --set writes them. Every parameter is ordinal: the optimizer
// moves along Levels, so a nearby level is a similar value.
type Param struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Levels []string `json:"levels"`
}

// Space is the searched grid: the product of its parameters' levels.
type Space struct {
	Params []Param `json:"params"`
}

// Size is the number of points of the grid, the product of the level
// counts (+Inf past 2^53, where a float64 stops counting exactly).
func (s Space) Size() float64 {
	n := 1.0
	for _, p := range s.Params {
		n *= float64(len(p.Levels))
	}
	return n
}

// Set writes the point idx (a level index per parameter) as a --set
// string, "name=level,...", in the parameters' order.
func (s Space) Set(idx []int) string {
	items := make([]string, len(s.Params))
	for i, p := range s.Params {
		items[i] = p.Name + "=" + p.Levels[idx[i]]
	}
	return strings.Join(items, ",")
}

// Index maps a point of the unit cube to level indices: coordinate x of
// a parameter of L levels, clamped to [0, 1], falls in level ⌊x·L⌋ (L−1
// at x = 1), so every level owns an equal share of the cube.
func (s Space) Index(x []float64) []int {
	idx := make([]int, len(s.Params))
	for i, p := range s.Params {
		l := len(p.Levels)
		v := math.Min(math.Max(x[i], 0), 1)
		idx[i] = min(int(v*float64(l)), l-1)
	}
	return idx
}

// Center is the point of the unit cube at the middle of each level's
// share: the inverse of Index, (i + ½)/L.
func (s Space) Center(idx []int) []float64 {
	x := make([]float64, len(s.Params))
	for i, p := range s.Params {
		x[i] = (float64(idx[i]) + 0.5) / float64(len(p.Levels))
	}
	return x
}

// DefaultKnobs are the knobs searched when none are named: the decisions a
// policy makes about how much to keep in flight and how to cut the work
// (unit size, per-stage depth, per-device window, minimum units per worker,
// exchange message size, adaptive regulation). Left out are the memory
// budgets (pinned, devmem) and the metadata size (meta), which describe
// the machine and the data rather than choices, and the switches of the
// paper's techniques, which an ablation studies (name them to search them).
var DefaultKnobs = []string{"chunk", "depth", "window", "units", "msg", "adaptive"}

// defaultLevels are the levels of the knobs that have them: byte sizes by
// powers of two (a unit twice as large is the smallest change worth a
// simulation), counts over the range where they matter on the shipped
// profiles.
var defaultLevels = map[string][]string{
	"chunk":  {"1MiB", "2MiB", "4MiB", "8MiB", "16MiB", "32MiB", "64MiB", "128MiB", "256MiB"},
	"depth":  {"1", "2", "3", "4", "6", "8", "12", "16"},
	"window": {"0", "2", "4", "8", "16", "32"},
	"units":  {"0", "1", "2", "4", "8", "16"},
	"msg":    {"0", "256KiB", "1MiB", "4MiB", "16MiB"},
	"gap":    {"0", "64KiB", "256KiB", "1MiB", "4MiB"},
}

// NewSpace builds the space of the named knobs (DefaultKnobs if none)
// from the knob table (scheduler.Knobs): a knob's type gives its levels
// (bool: off, on) unless ranges gives them ("chunk" -> "4MiB:256MiB" for
// powers of two from 4 MiB to 256 MiB, "depth" -> "1:16" for every
// integer, or "a|b|c" for a list), else the defaults above. A knob the
// table lacks, a knob that is not a decision of type int, bytes or bool,
// or an int or bytes knob with neither a range nor default levels is an
// error naming it.
func NewSpace(names []string, ranges map[string]string) (Space, error) {
	if len(names) == 0 {
		names = DefaultKnobs
	}
	table := map[string]scheduler.KnobInfo{}
	for _, k := range scheduler.Knobs() {
		table[k.Name] = k
	}
	var s Space
	for _, name := range names {
		k, ok := table[name]
		if !ok {
			return Space{}, fmt.Errorf("tune: unknown knob %q (the knob table has: %s)", name, strings.Join(knobNames(), ", "))
		}
		if slices.ContainsFunc(s.Params, func(p Param) bool { return p.Name == name }) {
			return Space{}, fmt.Errorf("tune: knob %q named twice", name)
		}
		p := Param{Name: name, Type: k.Type}
		var err error
		switch r, given := ranges[name]; {
		case given:
			p.Levels, err = parseLevels(k, r)
		case k.Type == "bool":
			p.Levels = []string{"off", "on"}
		default:
			p.Levels = defaultLevels[name]
		}
		if err != nil {
			return Space{}, err
		}
		if len(p.Levels) == 0 {
			return Space{}, fmt.Errorf("tune: knob %q (%s) has no default levels: give them with --range %s=LO:HI", name, k.Type, name)
		}
		var cfg scheduler.Config
		for _, l := range p.Levels {
			if err := cfg.Set(name, l); err != nil {
				return Space{}, fmt.Errorf("tune: level %q of knob %s: %w", l, name, err)
			}
		}
		s.Params = append(s.Params, p)
	}
	for name := range ranges {
		if !slices.Contains(names, name) {
			return Space{}, fmt.Errorf("tune: --range %s: the knob is not searched (searched: %s)", name, strings.Join(names, ", "))
		}
	}
	return s, nil
}

// parseLevels reads a range: "a|b|c" (the levels as given) or "LO:HI"
// (int: every integer; bytes: LO, 2·LO, 4·LO, ... up to HI, with 0 kept
// as a level of its own when LO is 0).
func parseLevels(k scheduler.KnobInfo, r string) ([]string, error) {
	bad := func(why string) error {
		return fmt.Errorf("tune: --range %s=%q: %s (want LO:HI or a|b|c)", k.Name, r, why)
	}
	if strings.Contains(r, "|") {
		var out []string
		for _, v := range strings.Split(r, "|") {
			if v = strings.TrimSpace(v); v == "" || slices.Contains(out, v) {
				return nil, bad("empty or repeated level")
			}
			out = append(out, v)
		}
		return out, nil
	}
	a, b, ok := strings.Cut(r, ":")
	if !ok {
		return nil, bad("no ':'")
	}
	switch k.Type {
	case "int":
		lo, err1 := strconv.Atoi(strings.TrimSpace(a))
		hi, err2 := strconv.Atoi(strings.TrimSpace(b))
		if err1 != nil || err2 != nil || lo < 0 || hi < lo || hi-lo > 1024 {
			return nil, bad("want integers 0 <= LO <= HI, at most 1025 levels")
		}
		var out []string
		for v := lo; v <= hi; v++ {
			out = append(out, strconv.Itoa(v))
		}
		return out, nil
	case "bytes":
		lo, err1 := units.ParseBytes(a)
		hi, err2 := units.ParseBytes(b)
		if err1 != nil || err2 != nil || lo < 0 || hi < lo || hi == 0 {
			return nil, bad("want byte sizes 0 <= LO <= HI, HI > 0")
		}
		var out []string
		if lo == 0 {
			// 0 (off), then from a page: sizes under it are not worth a
			// level each.
			out, lo = append(out, "0"), min(4096, hi)
		}
		for v := lo; v <= hi; v *= 2 {
			out = append(out, units.FormatBytes(v))
		}
		return out, nil
	}
	return nil, bad("a " + k.Type + " knob takes a list of levels a|b")
}

func knobNames() []string {
	var out []string
	for _, k := range scheduler.Knobs() {
		out = append(out, k.Name)
	}
	return out
}
