package experiments

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"gostachio/scheduler"
	"gostachio/sim"
	"gostachio/sqlplan"
	"gostachio/tpch/queries"
)

// Spec is a parsed experiment specification (see ParseSpec for the file
// format). A Spec is read-only once parsed.
type Spec struct {
	// Name names the experiment (default: the file's base name).
	Name string
	// Path is the file the spec was read from; Hash the first 12 hex
	// digits of the SHA-256 of its bytes (every Result records it).
	Path, Hash string
	// Backend is "sim" or "engine".
	Backend string
	// Dataset is a dataset folder (required for engine; for sim it sizes
	// the workload from its manifest instead of SF). Relative paths are
	// relative to the working directory, as on the command line.
	Dataset string
	// SF are the simulated scale factors (sim without Dataset; several
	// values form the axis "sf").
	SF []float64
	// Profile is a hardware profile name or .yaml path, as the spec gives
	// it: the simulated one (sim) or the one engine runs are compared
	// with. A relative path is relative to the spec's folder; ProfilePath
	// is the resolved path (Profile itself for a shipped name).
	Profile, ProfilePath string
	// ProfileSet are the profile parameter axes of the sweep (key
	// profile_set), in file order: a profile field's path of YAML keys
	// ("nvme.bandwidth") and its values as the profile file writes them.
	ProfileSet []Axis
	// Nodes are the cluster sizes (several values form the axis "nodes").
	Nodes []int
	// Queries are the names of the queries run, in file order: TPC-H
	// query names and the names of the SQL queries in SQL.
	Queries []string
	// SQL are the queries given as SQL text (an entry {name, sql} or
	// {name, sql_file}), in file order; their names are among Queries.
	SQL []sqlplan.Query
	// Policies are the alternatives compared, in file order.
	Policies []PolicySpec
	// Sweep are the knob axes of the sweep, in file order ("nodes" and
	// "sf" given under sweep are moved to Nodes and SF).
	Sweep []Axis
	// Reps is the number of measured repetitions of every configuration,
	// Warmup the unrecorded runs of every configuration before the first
	// measured one.
	Reps, Warmup int
	// Seed seeds the run order and the simulator's jitter.
	Seed uint64
	// Jitter (sim only) varies every simulated latency by ±Jitter
	// (fraction), so that repetitions differ; 0: deterministic.
	Jitter float64

	// axes lists the axis names in key order: Sweep's, ProfileSet's, then
	// "nodes" and "sf" when they have several values.
	axes []string
	// profiles holds the resolved profile of every point of the
	// ProfileSet axes, by the point's "path=value,..." string ("" without
	// profile_set): what sim runs simulate and what their keys hash.
	profiles map[string]resolvedProfile
}

// resolvedProfile is a profile with the profile_set values of one point
// applied, and the hash of its content.
type resolvedProfile struct {
	prof *sim.Profile
	// hash is ProfileHash of prof.
	hash string
}

// ProfileHash is the first 12 hex digits of the SHA-256 of p marshalled
// (sim.MarshalProfile without header): the content of the hardware model
// as the simulator reads it, every value with its unit, so that an edit of
// any value changes it and comments or layout do not.
func ProfileHash(p *sim.Profile) (string, error) {
	data, err := sim.MarshalProfile(p, "")
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:12], nil
}

// PolicyHash is the first 12 hex digits of the SHA-256 of the policy's
// resolved configuration: its registered name and every knob of the knob
// table with its value ("overlap|chunk=64MiB|depth=8|..."), so that a
// change of a policy's defaults re-runs what it ran.
func PolicyHash(pol scheduler.Policy) string {
	cfg := pol.Config()
	var b strings.Builder
	b.WriteString(pol.Name())
	for _, k := range scheduler.Knobs() {
		v, _ := cfg.Get(k.Name)
		b.WriteString("|" + k.Name + "=" + v)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])[:12]
}

// PolicySpec is one alternative of an experiment: a registered policy with
// knob overrides, under a label.
type PolicySpec struct {
	// Name labels the alternative in results (Result.Policy) and in
	// `gostachio ab --a/--b` (default: Policy).
	Name string `json:"name"`
	// Policy is a registered scheduler policy; Set its knob overrides
	// ("dynbuf=off,msg=0").
	Policy string `json:"policy"`
	Set    string `json:"set,omitempty"`
}

// Axis is one knob axis of a sweep: the knob's name and its values as
// --set accepts them.
type Axis struct {
	Name   string
	Values []string
}

// Run is one run of an experiment. Runs with equal Config are repetitions
// of one another.
type Run struct {
	// Key identifies the run within its spec, readably:
	// "q6|overlap|chunk=8MiB|nodes=4|rep=2" (query, policy label, the
	// sweep point, repetition). Config is Key without the repetition.
	Key, Config string
	// Spec is the spec's Hash.
	Spec string
	// Query, Label (PolicySpec.Name), Policy (registered name).
	Query, Label, Policy string
	// PolicySet is the policy entry's own knob overrides (what
	// Result.Set records); Set those the run uses: PolicySet with the
	// sweep point's knob values replacing or extending them.
	PolicySet, Set string
	// Sweep is the sweep point as "axis=value,..." ("" without axes).
	Sweep string
	Nodes int
	// SF is the simulated scale factor; 0 when a dataset sizes the run.
	SF float64
	// Rep numbers the repetitions from 0.
	Rep int
	// ProfileSet is the sweep point's profile_set values
	// ("nvme.bandwidth=7GB/s"; "" without profile_set).
	ProfileSet string
	// ProfileHash and PolicyHash are the hashes of the resolved profile
	// (ProfileHash) and of the policy's resolved configuration
	// (PolicyHash) the run uses; Key ends with them.
	ProfileHash, PolicyHash string
}

// ID is the run's key without the hashes: "CONFIG|rep=N". It seeds the
// run's jitter, so that simulated results stay those of the keys before
// the hashes were added to them.
func (r *Run) ID() string { return r.Config + "|rep=" + strconv.Itoa(r.Rep) }

// runKey is a run's key: its ID, then the hashes of the profile and the
// policy configuration it ran with ("q6|overlap|rep=0|hw=…|pol=…"), so
// that a result is reused only for the same hardware model and policy.
func runKey(id, hw, pol string) string { return id + "|hw=" + hw + "|pol=" + pol }

// KeyID returns key without the hashes runKey appends (key itself if it
// has none: a key stored before keys carried them).
func KeyID(key string) string {
	if i := strings.Index(key, "|hw="); i >= 0 {
		return key[:i]
	}
	return key
}

// KeyHashed reports whether key carries the hashes of the profile and the
// policy configuration (keys stored before they were added do not).
func KeyHashed(key string) bool {
	return strings.Contains(key, "|hw=") && strings.Contains(key, "|pol=")
}

// labelOK reports whether s may appear in a run key and a sweep string.
func labelOK(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._+-", c)
		if !ok {
			return false
		}
	}
	return true
}

// valueOK reports whether s may be a profile_set value: a label, or
// one with '/' (rates: "7GB/s").
func valueOK(s string) bool { return labelOK(strings.ReplaceAll(s, "/", "_")) }

// specParser reports errors as "PATH line N: ...".
type specParser struct{ path string }

func (p specParser) errf(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%s line %d: %s", p.path, n.Line, fmt.Sprintf(format, args...))
}

func (p specParser) str(n *yaml.Node, key string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errf(n, "%s must be a string", key)
	}
	return strings.TrimSpace(n.Value), nil
}

func (p specParser) integer(n *yaml.Node, key string) (int, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, p.errf(n, "%s must be an integer", key)
	}
	v, err := strconv.Atoi(strings.TrimSpace(n.Value))
	if err != nil {
		return 0, p.errf(n, "%s: %q is not an integer", key, n.Value)
	}
	return v, nil
}

func (p specParser) float(n *yaml.Node, key string) (float64, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, p.errf(n, "%s must be a number", key)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(n.Value), 64)
	if err != nil {
		return 0, p.errf(n, "%s: %q is not a number", key, n.Value)
	}
	return v, nil
}

// list returns the items of a sequence, or the node itself for a scalar
// (a one-value list).
func (p specParser) list(n *yaml.Node, key string) ([]*yaml.Node, error) {
	switch n.Kind {
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return nil, p.errf(n, "%s: empty list", key)
		}
		return n.Content, nil
	case yaml.ScalarNode:
		return []*yaml.Node{n}, nil
	}
	return nil, p.errf(n, "%s must be a value or a list of values", key)
}

// pairs returns the key/value pairs of a mapping, rejecting duplicate keys.
func (p specParser) pairs(n *yaml.Node, what string) ([][2]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, "%s must be a mapping of key: value", what)
	}
	seen := map[string]bool{}
	var out [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, p.errf(k, "%s: keys must be names", what)
		}
		if seen[k.Value] {
			return nil, p.errf(k, "key %q given twice", k.Value)
		}
		seen[k.Value] = true
		out = append(out, [2]*yaml.Node{k, v})
	}
	return out, nil
}

// ParseSpec reads and checks an experiment spec, a YAML mapping with the
// keys (all but backend, queries, policies and reps optional):
//
//	name: paper-speedup          # default: the file's base name
//	backend: sim                 # sim | engine
//	sf: 1000                     # sim only; a list makes the axis "sf"
//	dataset: out/data/sf0.01     # instead of sf (required for engine)
//	profile: dgx-a100            # default dgx-a100 (sim), devbox (engine)
//	nodes: [1, 2, 4]             # default 1; a list makes the axis "nodes"
//	queries: all                 # or a list: [q1, q6], whose entries may
//	                             # also be SQL queries (docs/sql.md):
//	                             # {name: big, sql: "select ..."} or
//	                             # {name: big, sql_file: big.sql}
//	policies:                    # the alternatives, each a label...
//	  - serial                   # ...a bare policy name, or
//	  - name: no-dynbuf          # a label, a registered policy and knobs
//	    policy: overlap
//	    set: dynbuf=off          # or a mapping {dynbuf: off}
//	sweep:                       # cartesian product of the axes
//	  chunk: [8MiB, 64MiB]       # a knob (applied on top of each policy's
//	  depth: [1, 4]              # set) or nodes or sf
//	reps: 5                      # measured repetitions (> 0)
//	warmup: 1                    # unrecorded runs per configuration
//	seed: 1                      # run order and jitter (default 1)
//	jitter: 0.05                 # sim only: latencies vary by ±5%
//	profile_set:                 # profile parameter axes (sim): a field's
//	  nvme.bandwidth: [7GB/s, 14GB/s]  # path of keys, values in its units
//
// A relative profile path, or sql_file, is relative to the spec's folder.
// Every SQL query is planned once while the spec is parsed (over the first
// sf, or the dataset's manifest where it opens) so that an error in it
// names its line. profile_set
// axes join the cartesian product of the sweep; each value is set on the
// typed profile (sim.Profile) and parsed as the profile file's own value
// would be, and the profile with every point's values must validate.
// Unknown keys and bad values are errors naming the file and line
// ("spec.yaml line 7: unknown key \"polcy\""); every policy is built
// (scheduler.NewPolicy) with every knob value of the sweep to check it.
func ParseSpec(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("experiments: spec: %w", err)
	}
	return parseSpec(path, data)
}

// parseSpec is ParseSpec of the file's bytes, in steps: the top-level
// keys, the required ones, then the sweep, nodes, scale factors, the
// backend's rules, queries and policies, each checking what it reads.
func parseSpec(path string, data []byte) (*Spec, error) {
	p := specParser{path: path}
	sum := sha256.Sum256(data)
	s := &Spec{Path: path, Hash: hex.EncodeToString(sum[:])[:12], Seed: 1}
	root, err := p.document(data)
	if err != nil {
		return nil, err
	}
	at, err := p.topKeys(s, root)
	if err != nil {
		return nil, err
	}
	for _, step := range []func(*Spec, *specKeys) error{p.required, p.profile, p.sweep, p.profileSet, p.nodes, p.scaleFactors, p.backendRules, p.queries, p.sqlPlans, p.policies, p.size} {
		if err := step(s, at); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// specKeys are the nodes of the keys whose values later steps read or
// name in errors (nil: not given).
type specKeys struct {
	root                                                         *yaml.Node
	nodes, sf, queries, policies, backend, dataset, jitter, axes *yaml.Node
	profile, profileSet                                          *yaml.Node
	haveReps                                                     bool
	reps                                                         *yaml.Node
}

// MaxRuns bounds what a spec expands to: (reps + warmup) × queries ×
// policies × sweep points. A million runs is days of simulation and
// hundreds of MB of run list; more is a typo, refused before any work.
const MaxRuns = 1_000_000

// size refuses a spec that expands to more than MaxRuns runs, counting
// without expanding it.
func (p specParser) size(s *Spec, at *specKeys) error {
	n := float64(len(s.Queries)) * float64(len(s.Policies)) * float64(s.Reps+s.Warmup)
	for _, ax := range s.axes {
		switch ax {
		case "nodes":
			n *= float64(len(s.Nodes))
		case "sf":
			n *= float64(len(s.SF))
		default:
			for _, a := range append(slices.Clone(s.Sweep), s.ProfileSet...) {
				if a.Name == ax {
					n *= float64(len(a.Values))
				}
			}
		}
	}
	if n > MaxRuns {
		return p.errf(at.reps, "the spec expands to %.3g runs ((reps %d + warmup %d) x %d queries x %d policies x the sweep's points), more than %d",
			n, s.Reps, s.Warmup, len(s.Queries), len(s.Policies), MaxRuns)
	}
	return nil
}

// document decodes data to the spec's top-level node, refusing YAML that
// does not parse and an empty file.
func (p specParser) document(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", p.path, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty spec", p.path)
	}
	return doc.Content[0], nil
}

// topKeys reads the scalar keys into s and keeps the nodes of the rest
// for the steps that need the whole spec to check them (a sweep may
// move nodes and sf; sf depends on the backend). Unknown keys and keys
// given twice are errors here, before any value is interpreted further.
func (p specParser) topKeys(s *Spec, root *yaml.Node) (*specKeys, error) {
	top, err := p.pairs(root, "the spec")
	if err != nil {
		return nil, err
	}
	at := &specKeys{root: root}
	for _, kv := range top {
		k, v := kv[0], kv[1]
		switch k.Value {
		case "name":
			if s.Name, err = p.str(v, "name"); err == nil && !labelOK(s.Name) {
				err = p.errf(v, "name %q: use letters, digits and ._+- only", s.Name)
			}
		case "backend":
			at.backend = v
			if s.Backend, err = p.str(v, "backend"); err == nil && s.Backend != "sim" && s.Backend != "engine" {
				err = p.errf(v, "unknown backend %q (want sim or engine)", s.Backend)
			}
		case "dataset":
			at.dataset = v
			if s.Dataset, err = p.str(v, "dataset"); err == nil && s.Dataset == "" {
				err = p.errf(v, "dataset: empty folder name")
			}
		case "sf":
			at.sf = v
		case "profile":
			at.profile = v
			s.Profile, err = p.str(v, "profile")
		case "profile_set":
			at.profileSet = v
		case "nodes":
			at.nodes = v
		case "queries":
			at.queries = v
		case "policies":
			at.policies = v
		case "sweep":
			at.axes = v
		case "reps":
			at.haveReps, at.reps = true, v
			if s.Reps, err = p.integer(v, "reps"); err == nil && (s.Reps < 1 || s.Reps > MaxRuns) {
				err = p.errf(v, "reps %d outside [1, %d]", s.Reps, MaxRuns)
			}
		case "warmup":
			if s.Warmup, err = p.integer(v, "warmup"); err == nil && (s.Warmup < 0 || s.Warmup > MaxRuns) {
				err = p.errf(v, "warmup %d outside [0, %d]", s.Warmup, MaxRuns)
			}
		case "seed":
			var seed uint64
			if v.Kind != yaml.ScalarNode {
				err = p.errf(v, "seed must be a non-negative integer")
			} else if seed, err = strconv.ParseUint(strings.TrimSpace(v.Value), 10, 64); err != nil {
				err = p.errf(v, "seed: %q is not a non-negative integer", v.Value)
			}
			s.Seed = seed
		case "jitter":
			at.jitter = v
			if s.Jitter, err = p.float(v, "jitter"); err == nil && !(s.Jitter >= 0 && s.Jitter < 1) {
				err = p.errf(v, "jitter %v must be in [0, 1)", s.Jitter)
			}
		default:
			err = p.errf(k, "unknown key %q (known: name, backend, dataset, sf, profile, profile_set, nodes, queries, policies, sweep, reps, warmup, seed, jitter)", k.Value)
		}
		if err != nil {
			return nil, err
		}
	}
	return at, nil
}

// required refuses a spec without backend, queries, policies or reps
// (naming the spec's first line), and fills the defaults of name and
// profile, which depend on the file and the backend.
func (p specParser) required(s *Spec, at *specKeys) error {
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(p.path), filepath.Ext(p.path))
	}
	missing := func(key string) error { return fmt.Errorf("%s line %d: missing key %q", p.path, at.root.Line, key) }
	switch {
	case at.backend == nil:
		return missing("backend")
	case at.queries == nil:
		return missing("queries")
	case at.policies == nil:
		return missing("policies")
	case !at.haveReps:
		return missing("reps")
	}
	if s.Profile == "" {
		s.Profile = "dgx-a100"
		if s.Backend == "engine" {
			s.Profile = "devbox"
		}
	}
	return nil
}

// profile loads the spec's profile: a shipped name, or a path, which
// when relative is relative to the spec's folder.
func (p specParser) profile(s *Spec, at *specKeys) error {
	s.ProfilePath = s.Profile
	if isProfilePath(s.Profile) && !filepath.IsAbs(s.Profile) {
		s.ProfilePath = filepath.Join(filepath.Dir(p.path), s.Profile)
	}
	prof, err := sim.LoadProfile(s.ProfilePath)
	if err != nil {
		if at.profile == nil {
			return fmt.Errorf("%s: default profile: %w", p.path, err)
		}
		return p.errf(at.profile, "%v", err)
	}
	hash, err := ProfileHash(prof)
	if err != nil {
		return p.errf(at.profile, "%v", err)
	}
	s.profiles = map[string]resolvedProfile{"": {prof, hash}}
	return nil
}

// isProfilePath reports whether a profile argument names a file rather
// than a shipped profile (sim.LoadProfile's rule: a path separator, or a
// .yaml or .yml suffix).
func isProfilePath(s string) bool {
	return strings.ContainsRune(s, os.PathSeparator) || strings.HasSuffix(s, ".yaml") || strings.HasSuffix(s, ".yml")
}

// profileSet reads the profile parameter axes: each a field of the typed
// profile (path of YAML keys) and values the field's own parsing accepts.
// It resolves the profile of every point of their product, so that an
// unknown field, a bad value or a combination the profile refuses is an
// error naming its line here and not in the middle of a run.
func (p specParser) profileSet(s *Spec, at *specKeys) error {
	if at.profileSet == nil {
		return nil
	}
	pairs, err := p.pairs(at.profileSet, "profile_set")
	if err != nil {
		return err
	}
	base := s.profiles[""].prof
	lines := map[string]*yaml.Node{}
	for _, kv := range pairs {
		k, v := kv[0], kv[1]
		name := strings.TrimSpace(k.Value)
		if isKnob(name) || name == "nodes" || name == "sf" || slices.Contains(s.axes, name) {
			return p.errf(k, "profile_set %q: the name of a knob or axis; profile fields are paths of profile keys (nvme.bandwidth)", name)
		}
		items, err := p.list(v, "profile_set "+name)
		if err != nil {
			return err
		}
		ax := Axis{Name: name}
		for _, it := range items {
			val, err := p.str(it, "profile_set "+name)
			if err != nil {
				return err
			}
			if !valueOK(val) {
				return p.errf(it, "profile_set %s: value %q: use letters, digits and ._+-/ only", name, val)
			}
			if slices.Contains(ax.Values, val) {
				return p.errf(it, "profile_set %s: value %q given twice", name, val)
			}
			if _, err := SetProfile(base, [][2]string{{name, val}}); err != nil {
				if errors.Is(err, errNoField) {
					return p.errf(k, "%v", err)
				}
				return p.errf(it, "%v", err)
			}
			lines[name+"="+val] = it
			ax.Values = append(ax.Values, val)
		}
		s.ProfileSet = append(s.ProfileSet, ax)
		s.axes = append(s.axes, name)
	}
	pts := [][][2]string{nil}
	for _, ax := range s.ProfileSet {
		var next [][][2]string
		for _, pt := range pts {
			for _, v := range ax.Values {
				next = append(next, append(slices.Clone(pt), [2]string{ax.Name, v}))
			}
		}
		pts = next
	}
	for _, pt := range pts {
		prof, err := SetProfile(base, pt)
		if err != nil {
			last := pt[len(pt)-1]
			return p.errf(lines[last[0]+"="+last[1]], "profile_set %s: %v", joinPairs(pt), err)
		}
		hash, err := ProfileHash(prof)
		if err != nil {
			return p.errf(at.profileSet, "%v", err)
		}
		s.profiles[joinPairs(pt)] = resolvedProfile{prof, hash}
	}
	return nil
}

// joinPairs writes key/value pairs as "k=v,k=v".
func joinPairs(kvs [][2]string) string {
	items := make([]string, len(kvs))
	for i, kv := range kvs {
		items[i] = kv[0] + "=" + kv[1]
	}
	return strings.Join(items, ",")
}

// errNoField is the error of SetProfile for a path that names no field
// of the profile.
var errNoField = errors.New("no such profile field")

// SetProfile returns a copy of base with each (path, value) of set
// applied: path is a field's keys in the profile file joined by dots
// ("nvme.bandwidth", "node.device_memory"), value its text as the file
// would give it ("14GB/s", "40GiB", "2us"). The copy is base marshalled
// (sim.MarshalProfile), the value put in the YAML tree at path (added if
// the file omits the field), and the tree parsed back (sim.ParseProfile):
// the value is parsed by the field's own unit parsing, an unknown field is
// an error (errNoField), and the result must validate. base is not
// modified.
func SetProfile(base *sim.Profile, set [][2]string) (*sim.Profile, error) {
	data, err := sim.MarshalProfile(base, "")
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil, fmt.Errorf("experiments: profile %s: re-reading it: %v", base.Name, err)
	}
	for _, kv := range set {
		if err := setNode(doc.Content[0], strings.Split(kv[0], "."), kv[1]); err != nil {
			return nil, fmt.Errorf("%w %q in profile %s: %v", errNoField, kv[0], base.Name, err)
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, fmt.Errorf("experiments: profile %s: %w", base.Name, err)
	}
	prof, err := sim.ParseProfile(base.Name+" with "+joinPairs(set), out)
	if err != nil {
		if strings.Contains(err.Error(), "not found in type") {
			paths := make([]string, len(set))
			for i, kv := range set {
				paths[i] = kv[0]
			}
			return nil, fmt.Errorf("%w %q in profile %s (a path of the profile file's keys, as nvme.bandwidth)", errNoField, strings.Join(paths, ", "), base.Name)
		}
		return nil, err
	}
	return prof, nil
}

// setNode sets the scalar at path below the mapping n to value, adding
// the missing keys; a path through a non-mapping, or ending on a mapping
// or a list, is an error.
func setNode(n *yaml.Node, path []string, value string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%q is not a table of fields", path[0])
	}
	if path[0] == "" {
		return fmt.Errorf("empty key")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != path[0] {
			continue
		}
		v := n.Content[i+1]
		if len(path) > 1 {
			return setNode(v, path[1:], value)
		}
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("%q is a table or list, not a value", path[0])
		}
		*v = yaml.Node{Kind: yaml.ScalarNode, Value: value}
		return nil
	}
	// Absent (an omitted optional field): add it; ParseProfile refuses
	// a key the profile does not have.
	key := &yaml.Node{Kind: yaml.ScalarNode, Value: path[0]}
	var v *yaml.Node
	if len(path) > 1 {
		v = &yaml.Node{Kind: yaml.MappingNode}
		if err := setNode(v, path[1:], value); err != nil {
			return err
		}
	} else {
		v = &yaml.Node{Kind: yaml.ScalarNode, Value: value}
	}
	n.Content = append(n.Content, key, v)
	return nil
}

// sweep reads the axes given under sweep: knob axes, each value checked
// by setting it on a scheduler.Config, or nodes and sf, moved to the keys
// of those names (given at the top as well, they are an error).
func (p specParser) sweep(s *Spec, at *specKeys) error {
	if at.axes == nil {
		return nil
	}
	pairs, err := p.pairs(at.axes, "sweep")
	if err != nil {
		return err
	}
	for _, kv := range pairs {
		k, v := kv[0], kv[1]
		switch name := k.Value; name {
		case "nodes":
			if at.nodes != nil {
				return p.errf(k, "nodes given twice (line %d and under sweep)", at.nodes.Line)
			}
			at.nodes = v
			s.axes = append(s.axes, "nodes")
		case "sf":
			if at.sf != nil {
				return p.errf(k, "sf given twice (line %d and under sweep)", at.sf.Line)
			}
			at.sf = v
			s.axes = append(s.axes, "sf")
		default:
			ax, err := p.knobAxis(k, v)
			if err != nil {
				return err
			}
			s.Sweep = append(s.Sweep, ax)
			s.axes = append(s.axes, name)
		}
	}
	return nil
}

// knobAxis reads one knob axis of a sweep: a known knob and its values,
// each usable in a run key and accepted by the knob, none twice.
func (p specParser) knobAxis(k, v *yaml.Node) (Axis, error) {
	name := k.Value
	if !isKnob(name) {
		return Axis{}, p.errf(k, "sweep: unknown axis %q (a knob: %s; or nodes, sf)", name, knobList())
	}
	items, err := p.list(v, "sweep "+name)
	if err != nil {
		return Axis{}, err
	}
	ax := Axis{Name: name}
	for _, it := range items {
		val, err := p.str(it, "sweep "+name)
		if err != nil {
			return Axis{}, err
		}
		if !labelOK(val) {
			return Axis{}, p.errf(it, "sweep %s: value %q: use letters, digits and ._+- only", name, val)
		}
		if slices.Contains(ax.Values, val) {
			return Axis{}, p.errf(it, "sweep %s: value %q given twice", name, val)
		}
		var cfg scheduler.Config
		if err := cfg.Set(name, val); err != nil {
			return Axis{}, p.errf(it, "%v", err)
		}
		ax.Values = append(ax.Values, val)
	}
	return ax, nil
}

// nodes reads the cluster sizes (default one node); several make the
// axis "nodes".
func (p specParser) nodes(s *Spec, at *specKeys) error {
	if at.nodes != nil {
		items, err := p.list(at.nodes, "nodes")
		if err != nil {
			return err
		}
		for _, it := range items {
			n, err := p.integer(it, "nodes")
			if err != nil {
				return err
			}
			if n < 1 {
				return p.errf(it, "nodes %d must be at least 1", n)
			}
			if slices.Contains(s.Nodes, n) {
				return p.errf(it, "nodes %d given twice", n)
			}
			s.Nodes = append(s.Nodes, n)
		}
	} else {
		s.Nodes = []int{1}
	}
	if len(s.Nodes) > 1 && !slices.Contains(s.axes, "nodes") {
		s.axes = append(s.axes, "nodes")
	}
	return nil
}

// scaleFactors reads the simulated scale factors, which only the sim
// backend without a dataset takes; several make the axis "sf".
func (p specParser) scaleFactors(s *Spec, at *specKeys) error {
	if at.sf == nil {
		return nil
	}
	if s.Backend == "engine" {
		return p.errf(at.sf, "sf is for the sim backend; the engine runs on the dataset's scale factor")
	}
	if s.Dataset != "" {
		return p.errf(at.sf, "give either sf or dataset, not both")
	}
	items, err := p.list(at.sf, "sf")
	if err != nil {
		return err
	}
	for _, it := range items {
		f, err := p.float(it, "sf")
		if err != nil {
			return err
		}
		if !(f > 0) || f > 1e6 {
			return p.errf(it, "sf %v must be a positive number (at most 1e6)", f)
		}
		if slices.Contains(s.SF, f) {
			return p.errf(it, "sf %v given twice", f)
		}
		s.SF = append(s.SF, f)
	}
	if len(s.SF) > 1 && !slices.Contains(s.axes, "sf") {
		s.axes = append(s.axes, "sf")
	}
	return nil
}

// backendRules checks what each backend needs and refuses: the engine
// runs on one node of a dataset without jitter; the simulator needs a
// scale factor or a dataset, not both.
func (p specParser) backendRules(s *Spec, at *specKeys) error {
	switch s.Backend {
	case "engine":
		if s.Dataset == "" {
			return fmt.Errorf("%s line %d: the engine backend needs a dataset folder (key \"dataset\")", p.path, at.backend.Line)
		}
		if len(s.Nodes) != 1 || s.Nodes[0] != 1 {
			return p.errf(at.nodes, "the engine backend runs on one node (nodes: 1)")
		}
		if at.jitter != nil {
			return p.errf(at.jitter, "jitter is for the sim backend (the engine varies by itself)")
		}
	case "sim":
		if s.Dataset == "" && len(s.SF) == 0 {
			return fmt.Errorf("%s line %d: the sim backend needs sf (a scale factor) or a dataset folder", p.path, at.backend.Line)
		}
	}
	if at.dataset != nil && s.Dataset != "" && len(s.SF) > 0 {
		return p.errf(at.dataset, "give either sf or dataset, not both")
	}
	return nil
}

// queries reads the TPC-H queries: "all", or a list of known names,
// none twice.
func (p specParser) queries(s *Spec, at *specKeys) error {
	if at.queries.Kind == yaml.ScalarNode && strings.TrimSpace(at.queries.Value) == "all" {
		s.Queries = queries.Names()
		return nil
	}
	items, err := p.list(at.queries, "queries")
	if err != nil {
		return err
	}
	known := queries.Names()
	for _, it := range items {
		var q string
		if it.Kind == yaml.MappingNode {
			sq, err := p.sqlQuery(it)
			if err != nil {
				return err
			}
			s.SQL = append(s.SQL, sq)
			q = sq.Name
		} else {
			var err error
			if q, err = p.str(it, "queries"); err != nil {
				return err
			}
			if !slices.Contains(known, q) {
				return p.errf(it, "unknown query %q (have q1..q22, all, or {name: NAME, sql: TEXT} / {name: NAME, sql_file: FILE})", q)
			}
		}
		if slices.Contains(s.Queries, q) {
			return p.errf(it, "query %q given twice", q)
		}
		s.Queries = append(s.Queries, q)
	}
	return nil
}

// policies reads the alternatives compared, each under its own label,
// and builds every one with every knob value of the sweep, so that a
// combination the scheduler refuses is an error here and not in the
// middle of a run.
func (p specParser) policies(s *Spec, at *specKeys) error {
	if at.policies.Kind != yaml.SequenceNode || len(at.policies.Content) == 0 {
		return p.errf(at.policies, "policies must be a list of policies")
	}
	for _, it := range at.policies.Content {
		ps, err := p.policy(it)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(s.Policies, func(o PolicySpec) bool { return o.Name == ps.Name }) {
			return p.errf(it, "policy label %q given twice (give each alternative its own name)", ps.Name)
		}
		if _, err := scheduler.NewPolicy(ps.Policy, ps.Set); err != nil {
			return p.errf(it, "%v", err)
		}
		for _, ax := range s.Sweep {
			for _, v := range ax.Values {
				if _, err := scheduler.NewPolicy(ps.Policy, mergeSet(ps.Set, [][2]string{{ax.Name, v}})); err != nil {
					return p.errf(it, "with sweep %s=%s: %v", ax.Name, v, err)
				}
			}
		}
		s.Policies = append(s.Policies, ps)
	}
	return nil
}

// policy parses one entry of policies: a bare policy name or a mapping
// {name, policy, set}.
func (p specParser) policy(n *yaml.Node) (PolicySpec, error) {
	var ps PolicySpec
	if n.Kind == yaml.ScalarNode {
		name, err := p.str(n, "policy")
		if err != nil {
			return ps, err
		}
		ps = PolicySpec{Name: name, Policy: name}
	} else {
		pairs, err := p.pairs(n, "a policy")
		if err != nil {
			return ps, err
		}
		for _, kv := range pairs {
			k, v := kv[0], kv[1]
			switch k.Value {
			case "name":
				ps.Name, err = p.str(v, "name")
			case "policy":
				ps.Policy, err = p.str(v, "policy")
			case "set":
				ps.Set, err = p.knobSet(v)
			default:
				err = p.errf(k, "unknown key %q in a policy (known: name, policy, set)", k.Value)
			}
			if err != nil {
				return ps, err
			}
		}
		if ps.Policy == "" {
			return ps, p.errf(n, "policy entry without \"policy\" (a registered policy name)")
		}
		if ps.Name == "" {
			ps.Name = ps.Policy
		}
	}
	if !labelOK(ps.Name) {
		return ps, p.errf(n, "policy label %q: use letters, digits and ._+- only", ps.Name)
	}
	if _, err := scheduler.NewPolicy(ps.Policy, ""); err != nil {
		return ps, p.errf(n, "%v", err)
	}
	return ps, nil
}

// knobSet reads a set: a --set string or a mapping of knob: value.
func (p specParser) knobSet(n *yaml.Node) (string, error) {
	if n.Kind == yaml.ScalarNode {
		return p.str(n, "set")
	}
	pairs, err := p.pairs(n, "set")
	if err != nil {
		return "", err
	}
	items := make([]string, 0, len(pairs))
	for _, kv := range pairs {
		v, err := p.str(kv[1], "knob "+kv[0].Value)
		if err != nil {
			return "", err
		}
		if !isKnob(kv[0].Value) {
			return "", p.errf(kv[0], "unknown knob %q (known: %s)", kv[0].Value, knobList())
		}
		items = append(items, kv[0].Value+"="+v)
	}
	return strings.Join(items, ","), nil
}

func isKnob(name string) bool {
	return slices.ContainsFunc(scheduler.Knobs(), func(k scheduler.KnobInfo) bool { return k.Name == name })
}

func knobList() string {
	var names []string
	for _, k := range scheduler.Knobs() {
		names = append(names, k.Name)
	}
	return strings.Join(names, ", ")
}

// mergeSet returns set with each knob of over replacing the item of the
// same knob in place, or appended when set has none.
func mergeSet(set string, over [][2]string) string {
	var items []string
	for _, it := range strings.Split(set, ",") {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	for _, kv := range over {
		found := false
		for i, it := range items {
			if k, _, _ := strings.Cut(it, "="); strings.TrimSpace(k) == kv[0] {
				items[i], found = kv[0]+"="+kv[1], true
			}
		}
		if !found {
			items = append(items, kv[0]+"="+kv[1])
		}
	}
	return strings.Join(items, ",")
}

// ResolvedProfile returns the profile of a point of the profile_set axes
// (Run.ProfileSet; "" for the spec's profile as loaded) and its hash
// (ProfileHash).
func (s *Spec) ResolvedProfile(set string) (*sim.Profile, string, error) {
	rp, ok := s.profiles[set]
	if !ok {
		return nil, "", fmt.Errorf("experiments: spec %s: no profile point %q", s.Name, set)
	}
	return rp.prof, rp.hash, nil
}

// Axes returns the names of the spec's axes in key order: the sweep's
// (file order), then "nodes" and "sf" when given as lists of several
// values outside sweep.
func (s *Spec) Axes() []string { return slices.Clone(s.axes) }

// point is one sweep point: a value per axis.
type point struct {
	vals  [][2]string // axis, value in key order
	nodes int
	sf    float64
	knobs [][2]string
	// prof is the point's profile_set values, "path=value,..."
	prof string
}

func (s *Spec) points() []point {
	pts := []point{{}}
	for _, ax := range s.axes {
		var vals []string
		switch ax {
		case "nodes":
			for _, n := range s.Nodes {
				vals = append(vals, strconv.Itoa(n))
			}
		case "sf":
			for _, f := range s.SF {
				vals = append(vals, strconv.FormatFloat(f, 'g', -1, 64))
			}
		default:
			for _, a := range append(slices.Clone(s.Sweep), s.ProfileSet...) {
				if a.Name == ax {
					vals = a.Values
				}
			}
		}
		var next []point
		for _, pt := range pts {
			for _, v := range vals {
				q := point{vals: append(slices.Clone(pt.vals), [2]string{ax, v})}
				next = append(next, q)
			}
		}
		pts = next
	}
	for i := range pts {
		pt := &pts[i]
		pt.nodes = s.Nodes[0]
		if len(s.SF) > 0 {
			pt.sf = s.SF[0]
		}
		var prof [][2]string
		for _, kv := range pt.vals {
			switch {
			case kv[0] == "nodes":
				pt.nodes, _ = strconv.Atoi(kv[1])
			case kv[0] == "sf":
				pt.sf, _ = strconv.ParseFloat(kv[1], 64)
			case slices.ContainsFunc(s.ProfileSet, func(a Axis) bool { return a.Name == kv[0] }):
				prof = append(prof, kv)
			default:
				pt.knobs = append(pt.knobs, kv)
			}
		}
		// The profile point in ProfileSet's order, as profileSet keyed it.
		slices.SortStableFunc(prof, func(a, b [2]string) int {
			return slices.IndexFunc(s.ProfileSet, func(x Axis) bool { return x.Name == a[0] }) -
				slices.IndexFunc(s.ProfileSet, func(x Axis) bool { return x.Name == b[0] })
		})
		pt.prof = joinPairs(prof)
	}
	return pts
}

// Configs returns one Run per configuration (query × policy × sweep
// point), all with Rep 0, in canonical order: queries, then policies,
// then sweep points (axes varying last to first), as the file lists them.
// Each run's Key ends with the hashes of its resolved profile and policy
// configuration (runKey).
func (s *Spec) Configs() []Run {
	pts := s.points()
	var out []Run
	for _, q := range s.Queries {
		for _, ps := range s.Policies {
			for _, pt := range pts {
				items := make([]string, len(pt.vals))
				for i, kv := range pt.vals {
					items[i] = kv[0] + "=" + kv[1]
				}
				sweep := strings.Join(items, ",")
				cfg := q + "|" + ps.Name
				if h := s.SQLHash(q); h != "" {
					// The text is part of the configuration: a changed
					// query is a new one, never a result reused.
					cfg = q + "|sql=" + h + "|" + ps.Name
				}
				if sweep != "" {
					cfg += "|" + strings.Join(items, "|")
				}
				r := Run{Config: cfg, Spec: s.Hash, Query: q, Label: ps.Name,
					Policy: ps.Policy, PolicySet: ps.Set, Set: mergeSet(ps.Set, pt.knobs), Sweep: sweep, Nodes: pt.nodes, SF: pt.sf,
					ProfileSet: pt.prof, ProfileHash: s.profiles[pt.prof].hash}
				// ParseSpec built every policy with every sweep value.
				if pol, err := scheduler.NewPolicy(r.Policy, r.Set); err == nil {
					r.PolicyHash = PolicyHash(pol)
				}
				r.Key = runKey(r.ID(), r.ProfileHash, r.PolicyHash)
				out = append(out, r)
			}
		}
	}
	return out
}

// Runs expands the spec: every configuration (Configs) for each of the
// Reps repetitions, repetition-major; len = Reps × queries × policies ×
// sweep points. Keys are stable: the same file gives the same keys.
func (s *Spec) Runs() []Run {
	cfgs := s.Configs()
	out := make([]Run, 0, s.Reps*len(cfgs))
	for rep := 0; rep < s.Reps; rep++ {
		for _, c := range cfgs {
			c.Rep = rep
			c.Key = runKey(c.ID(), c.ProfileHash, c.PolicyHash)
			out = append(out, c)
		}
	}
	return out
}

// Order returns Runs in the order they execute: for each repetition, a
// permutation of all configurations drawn from Seed and the repetition
// (alternatives are interleaved, so that drift of the machine over time
// spreads over all of them instead of favoring the ones run first). The
// permutation is a Fisher-Yates shuffle over a PCG stream implemented
// here, so the order (and hence sharding) does not change with the Go
// version.
func (s *Spec) Order() []Run {
	runs := s.Runs()
	n := len(runs) / max(s.Reps, 1)
	for rep := 0; rep < s.Reps; rep++ {
		block := runs[rep*n : (rep+1)*n]
		rng := newPCG(s.Seed, uint64(rep))
		for i := len(block) - 1; i > 0; i-- {
			j := int(rng.next() % uint64(i+1))
			block[i], block[j] = block[j], block[i]
		}
	}
	return runs
}

// Shard returns the runs of runs whose index i satisfies i % n == shard
// (0 <= shard < n): n shards partition runs, each run in exactly one.
func Shard(runs []Run, shard, n int) []Run {
	if n <= 1 {
		return runs
	}
	var out []Run
	for i, r := range runs {
		if i%n == shard {
			out = append(out, r)
		}
	}
	return out
}

// pcg is PCG-XSH-RR 64/32 pairs giving 64-bit outputs: a small generator
// fixed here so that orders never depend on the standard library's.
type pcg struct{ state, inc uint64 }

func newPCG(seed, stream uint64) *pcg {
	p := &pcg{inc: stream<<1 | 1}
	p.step()
	p.state += seed
	p.step()
	return p
}

func (p *pcg) step() { p.state = p.state*6364136223846793005 + p.inc }

func (p *pcg) next32() uint32 {
	old := p.state
	p.step()
	x := uint32(((old >> 18) ^ old) >> 27)
	r := uint32(old >> 59)
	return x>>r | x<<((-r)&31)
}

func (p *pcg) next() uint64 { return uint64(p.next32())<<32 | uint64(p.next32()) }
