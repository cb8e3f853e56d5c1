package scheduler

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

func TestNewPolicyKnobs(t *testing.T) {
	for _, tc := range []struct {
		name, set string
		check     func(Config) bool
		err       string
	}{
		{"serial", "", func(c Config) bool {
			return c.Depth == 1 && c.Window == 1 && c.StageSync && !c.Defer && !c.Combine && !c.MetaCache && !c.Multipath && c.Chunk == 0
		}, ""},
		{"double-buffer", "", func(c Config) bool { return c.Depth == 1 && c.Window == 2 && !c.StageSync }, ""},
		{"pipeline", "depth=6", func(c Config) bool { return c.Depth == 6 && c.Window == 0 }, ""},
		{"overlap", "", func(c Config) bool {
			return c.Chunk == 64<<20 && c.Depth == 8 && c.DynBuf && c.Defer && c.Combine && c.MetaCache && c.Adaptive && c.Multipath && !c.StageSync
		}, ""},
		{"overlap", "chunk=8MiB,depth=4,combine=off", func(c Config) bool {
			return c.Chunk == 8<<20 && c.Depth == 4 && !c.Combine && c.Defer
		}, ""},
		{"overlap", " defer = off , multipath=false,, gap=4KiB ", func(c Config) bool {
			return !c.Defer && !c.Multipath && c.CombineGap == 4096 && c.Combine
		}, ""},
		{"overlap", "pinned=2GiB,devmem=1.5GiB,meta=4k", func(c Config) bool {
			return c.Pinned == 2<<30 && c.DevMem == 3<<29 && c.MetaBytes == 4096
		}, ""},
		{"overlap", "adaptive=on,dynbuf=0,metacache=no,stagesync=yes,window=3", func(c Config) bool {
			return c.Adaptive && !c.DynBuf && !c.MetaCache && c.StageSync && c.Window == 3
		}, ""},
		{"nope", "", nil, `unknown policy "nope" (known: ` + registeredNames() + `)`},
		{"overlap", "chunck=8MiB", nil, `unknown knob "chunck"`},
		{"overlap", "chunk=8XB", nil, `knob chunk="8XB"`},
		{"overlap", "depth=0", nil, "knob depth=0 must be at least 1"},
		{"overlap", "depth=-2", nil, `knob depth=-2 must be at least 1`},
		{"overlap", "depth=two", nil, `knob depth="two"`},
		{"overlap", "combine=maybe", nil, `knob combine="maybe": want on or off`},
		{"overlap", "combine", nil, `--set item "combine" is not key=value`},
		{"overlap", "=on", nil, `--set item "=on" is not key=value`},
		{"overlap", "depth=2,depth=3", nil, `names knob "depth" twice`},
	} {
		p, err := NewPolicy(tc.name, tc.set)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("NewPolicy(%q, %q) error = %v, want it to contain %q", tc.name, tc.set, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("NewPolicy(%q, %q): %v", tc.name, tc.set, err)
			continue
		}
		if p.Name() != tc.name || !tc.check(p.Config()) {
			t.Errorf("NewPolicy(%q, %q) = %s %+v", tc.name, tc.set, p.Name(), p.Config())
		}
	}
}

// registeredNames is the sorted names of the registered policies, as the
// error for an unknown one lists them (whatever registered beside the
// built-in ones).
func registeredNames() string {
	var names []string
	for _, p := range Policies() {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func TestKnobRoundTrip(t *testing.T) {
	p, err := NewPolicy("overlap", "chunk=3MiB,depth=5,combine=off")
	if err != nil {
		t.Fatal(err)
	}
	c := p.Config()
	var parts []string
	for _, k := range Knobs() {
		v, err := c.Get(k.Name)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, k.Name+"="+v)
	}
	var back Config
	if err := back.Apply(strings.Join(parts, ",")); err != nil {
		t.Fatal(err)
	}
	if back != c {
		t.Errorf("round trip through %q: got %+v, want %+v", strings.Join(parts, ","), back, c)
	}
	if v, _ := c.Get("chunk"); v != "3MiB" {
		t.Errorf("chunk = %q, want 3MiB", v)
	}
}

func TestRegisterRejects(t *testing.T) {
	if err := Register(PolicyInfo{Name: "serial", Defaults: Config{Depth: 1}}); err == nil {
		t.Error("duplicate registration accepted")
	}
	if err := Register(PolicyInfo{Name: "bad", Defaults: Config{}}); err == nil {
		t.Error("depth 0 accepted")
	}
	if err := Register(PolicyInfo{Defaults: Config{Depth: 1}}); err == nil {
		t.Error("empty name accepted")
	}
}

func TestListPolicies(t *testing.T) {
	var buf bytes.Buffer
	if err := ListPolicies(&buf, false); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, want := range []string{"serial", "double-buffer", "pipeline", "overlap", "multipath", "reader combining"} {
		if !strings.Contains(text, want) {
			t.Errorf("listing lacks %q:\n%s", want, text)
		}
	}
	buf.Reset()
	if err := ListPolicies(&buf, true); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Knobs []struct {
			Name, Type, Doc string
		}
		Policies []struct {
			Name     string
			Defaults map[string]string
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Knobs) != 16 || len(doc.Policies) < 4 {
		t.Fatalf("JSON has %d knobs and %d policies", len(doc.Knobs), len(doc.Policies))
	}
	for _, p := range doc.Policies {
		if p.Name == "overlap" && (p.Defaults["chunk"] != "64MiB" || p.Defaults["combine"] != "on" || p.Defaults["depth"] != "8" || p.Defaults["msg"] != "1MiB" || p.Defaults["units"] != "4") {
			t.Errorf("overlap defaults in JSON: %v", p.Defaults)
		}
		if p.Name == "serial" && (p.Defaults["stagesync"] != "on" || p.Defaults["window"] != "1") {
			t.Errorf("serial defaults in JSON: %v", p.Defaults)
		}
	}
}
