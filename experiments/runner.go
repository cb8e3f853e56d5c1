package experiments

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/engine/storage"
	"gostachio/internal/atomicfile"
	"gostachio/internal/progress"
	"gostachio/plan"
	"gostachio/scheduler"
	"gostachio/sim"
	"gostachio/tpch/queries"
	"gostachio/traces"
)

// MetaFile is the name of the metadata file in a results folder; SpecFile
// the copy of the spec the results came from.
const (
	MetaFile = "meta.json"
	SpecFile = "spec.yaml"
	// SupersededFile holds, in results.csv's format, the results a run
	// moved out of results.csv because their keys are not the spec's
	// now: another profile content or policy configuration, or keys
	// without the hashes (stored before keys carried them).
	SupersededFile = "superseded.csv"
)

// RunOptions configure RunSpec.
type RunOptions struct {
	Spec *Spec
	// Out is the results folder (created if missing): results.csv,
	// meta.json and a copy of the spec file.
	Out string
	// Shard and NumShards split the runs over machines: this invocation
	// runs the runs whose position i in Spec.Order() has i % NumShards ==
	// Shard. NumShards 0 or 1 runs everything.
	Shard, NumShards int
	// Now is the clock of the progress bar and the start times recorded
	// (the CLI passes time.Now); nil: no progress bar and empty times.
	Now func() time.Time
	// OnResult, if non-nil, is called after each result is stored; an
	// error from it stops the experiment and RunSpec returns it (tests
	// interrupt runs through it).
	OnResult func(Result) error
	// JSON prints the closing summary as a RunSummary object instead of
	// a line of text.
	JSON bool
}

// RunSummary is what RunSpec says when it is done (JSON with --json).
type RunSummary struct {
	Name    string `json:"name"`
	Spec    string `json:"spec"`
	Results string `json:"results"`
	Shard   string `json:"shard"`
	// Ran is how many runs this invocation ran; Done how many of the
	// shard's Total are stored now.
	Ran   int `json:"ran"`
	Done  int `json:"done"`
	Total int `json:"total"`
}

func (s RunSummary) write(w io.Writer, jsonOut bool) error {
	if jsonOut {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	var err error
	if s.Ran == 0 {
		_, err = fmt.Fprintf(w, "%s: all %d runs of shard %s already in %s\n", s.Name, s.Total, s.Shard, s.Results)
	} else {
		_, err = fmt.Fprintf(w, "%s: %d runs stored in %s (shard %s: %d of %d done)\n", s.Name, s.Ran, s.Results, s.Shard, s.Done, s.Total)
	}
	return err
}

// Machine describes the host that ran a session.
type Machine struct {
	Hostname  string `json:"hostname"`
	CPUs      int    `json:"cpus"`
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	GoVersion string `json:"go_version"`
}

// Session is one invocation of RunSpec on a results folder.
type Session struct {
	Started     string  `json:"started"`
	GitRevision string  `json:"git_revision"`
	Machine     Machine `json:"machine"`
	// Shard is "i/n" ("0/1" unsharded); Planned the runs it had to do
	// (its shard's runs not yet stored).
	Shard   string `json:"shard"`
	Planned int    `json:"planned"`
}

// Meta is meta.json of a results folder: the spec the results came from
// and, as top-level fields, the latest session (Sessions lists all,
// oldest first, including those of merged shards).
type Meta struct {
	SpecHash string `json:"spec_hash"`
	SpecPath string `json:"spec_path"`
	Name     string `json:"name"`
	Backend  string `json:"backend"`
	Profile  string `json:"profile"`
	// ProfilePath is where the profile was read from (relative paths
	// resolved from the spec's folder), ProfileHash the hash of its
	// content (ProfileHash, the "hw=" of the keys) and ProfileContent
	// that content: the profile as loaded, marshalled, so that a result
	// can be traced to the hardware model it ran on after the file
	// changes. ProfilePoints maps each point of the spec's profile_set
	// axes ("nvme.bandwidth=7GB/s") to the hash of its profile.
	ProfilePath    string            `json:"profile_path,omitempty"`
	ProfileHash    string            `json:"profile_hash,omitempty"`
	ProfileContent string            `json:"profile_content,omitempty"`
	ProfilePoints  map[string]string `json:"profile_points,omitempty"`
	// Superseded counts the stored results moved to SupersededFile
	// because their keys name another profile or policy configuration
	// (or predate the hashes in keys).
	Superseded  int          `json:"superseded,omitempty"`
	Policies    []PolicySpec `json:"policies"`
	GitRevision string       `json:"git_revision"`
	Machine     Machine      `json:"machine"`
	Started     string       `json:"started"`
	Sessions    []Session    `json:"sessions"`
}

// ReadMeta reads dir/meta.json.
func ReadMeta(dir string) (*Meta, error) {
	data, err := os.ReadFile(filepath.Join(dir, MetaFile))
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	var m Meta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("experiments: %s: %w", filepath.Join(dir, MetaFile), err)
	}
	return &m, nil
}

// writeFileAtomic writes data to path atomically (see atomicfile).
func writeFileAtomic(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	return nil
}

func writeMeta(dir string, m *Meta) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("experiments: meta: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, MetaFile), append(data, '\n'))
}

// WriteResults replaces dir/results.csv with rs, atomically (temporary
// file, sync, rename).
func WriteResults(dir string, rs []Result) error {
	return writeTable(filepath.Join(dir, ResultsFile), rs)
}

// writeTable writes rs as a results table to path, atomically.
func writeTable(path string, rs []Result) error {
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Write(resultColumns)
	for i := range rs {
		w.Write(rs[i].record())
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("experiments: results: %w", err)
	}
	return writeFileAtomic(path, []byte(b.String()))
}

// lockDir takes an exclusive advisory lock on dir/.lock, so that two
// runners never append to one folder (each would drop the other's rows).
// The kernel releases it when the process dies, so a killed run never
// blocks its resumption.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("experiments: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("experiments: %s is in use by another gostachio run or merge (%v)", dir, err)
	}
	return func() { f.Close() }, nil
}

// gitRevision is the revision the running binary was built from (its
// embedded VCS stamp, "+dirty" when built from a modified tree), else
// `git rev-parse HEAD` in the working directory (test binaries carry no
// stamp), else "unknown".
func gitRevision(ctx context.Context) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				rev = kv.Value
			case "vcs.modified":
				dirty = kv.Value == "true"
			}
		}
		if rev != "" {
			if dirty {
				rev += "+dirty"
			}
			return rev
		}
	}
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func thisMachine() Machine {
	h, err := os.Hostname()
	if err != nil {
		h = "unknown"
	}
	return Machine{Hostname: h, CPUs: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version()}
}

// readStore returns the results of dir (none if it has no results.csv
// yet), checking that they all come from spec hash (any hash if "").
func readStore(dir, hash string) ([]Result, error) {
	if _, err := os.Stat(filepath.Join(dir, ResultsFile)); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	rs, err := ReadResults(dir)
	if err != nil {
		return nil, err
	}
	for i := range rs {
		if hash == "" {
			hash = rs[i].Spec
		}
		if rs[i].Spec != hash {
			return nil, fmt.Errorf("experiments: %s holds results of spec %s and %s: one folder per spec (use another --out)", dir, rs[i].Spec, hash)
		}
	}
	return rs, nil
}

// RunSpec runs the experiment opts.Spec into opts.Out. It skips runs whose
// Key is already stored (an interrupted experiment resumes where it
// stopped), runs the Spec's warm-up runs of every configuration left
// (unrecorded), then the runs left of this shard in Spec.Order() (each
// repetition a seeded permutation of all configurations), appending each
// finished run to Out/results.csv atomically (AppendResult): a run killed
// at any point loses at most the run in flight. It writes Out/meta.json
// (spec hash and path, git revision, machine, profile, sessions) and
// Out/spec.yaml (the spec's bytes) and draws a progress bar on stderr.
//
// Each Result records the policy's label (Result.Policy), its own knob
// overrides (Result.Set) and the sweep point (Result.Sweep); the run used
// Set with the sweep's knobs applied on top (Run.Set).
//
// Sim runs use sim.Simulate (seeded jitter per run key); engine runs share
// one storage reader (engine.OpenSession) and measure wall time, with the
// overlap bound and efficiency from the run's trace (traces.Overlap over
// GOMAXPROCS slots) and utilization per resource kind from its busy time.
func RunSpec(ctx context.Context, opts RunOptions, stdout, stderr io.Writer) error {
	s := opts.Spec
	if s == nil {
		return fmt.Errorf("experiments: run: no spec")
	}
	nsh := max(opts.NumShards, 1)
	if opts.Shard < 0 || opts.Shard >= nsh {
		return fmt.Errorf("experiments: run: shard %d/%d: want 0 <= i < n", opts.Shard, nsh)
	}
	if opts.Out == "" {
		return fmt.Errorf("experiments: run: no results folder")
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return fmt.Errorf("experiments: run: %w", err)
	}
	unlock, err := lockDir(opts.Out)
	if err != nil {
		return err
	}
	defer unlock()
	old, err := readStore(opts.Out, s.Hash)
	if err != nil {
		return err
	}
	old, superseded, err := supersede(opts.Out, s, old, stderr)
	if err != nil {
		return err
	}
	done := make(map[string]bool, len(old))
	for _, r := range old {
		done[r.Key] = true
	}
	var todo []Run
	mine := Shard(s.Order(), opts.Shard, nsh)
	for _, r := range mine {
		if !done[r.Key] {
			todo = append(todo, r)
		}
	}

	// Metadata first: a folder with results always says where they came from.
	started := ""
	if opts.Now != nil {
		started = opts.Now().Format(time.RFC3339)
	}
	sess := Session{Started: started, GitRevision: gitRevision(ctx), Machine: thisMachine(),
		Shard: fmt.Sprintf("%d/%d", opts.Shard, nsh), Planned: len(todo)}
	meta := &Meta{}
	if m, err := ReadMeta(opts.Out); err == nil {
		if m.SpecHash != s.Hash {
			return fmt.Errorf("experiments: %s holds results of spec %s (%s); this spec is %s: use another --out", opts.Out, m.SpecHash, m.SpecPath, s.Hash)
		}
		meta = m
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	meta.SpecHash, meta.SpecPath, meta.Name, meta.Backend, meta.Profile, meta.Policies = s.Hash, s.Path, s.Name, s.Backend, s.Profile, s.Policies
	if err := meta.recordProfile(s); err != nil {
		return err
	}
	meta.Superseded += superseded
	meta.GitRevision, meta.Machine, meta.Started = sess.GitRevision, sess.Machine, sess.Started
	meta.Sessions = append(meta.Sessions, sess)
	if err := writeMeta(opts.Out, meta); err != nil {
		return err
	}
	if data, err := os.ReadFile(s.Path); err == nil {
		if err := writeFileAtomic(filepath.Join(opts.Out, SpecFile), data); err != nil {
			return err
		}
	}

	fmt.Fprintf(stderr, "experiment %s (spec %s, %s on %s, profile hash %s): %d runs in shard %s, %d already stored, %d to run",
		s.Name, s.Hash, s.Backend, s.Profile, meta.ProfileHash, len(mine), sess.Shard, len(mine)-len(todo), len(todo))
	if s.Warmup > 0 && len(todo) > 0 {
		fmt.Fprintf(stderr, " after %d warm-up runs per configuration", s.Warmup)
	}
	fmt.Fprintln(stderr)
	summary := RunSummary{Name: s.Name, Spec: s.Hash, Results: filepath.Join(opts.Out, ResultsFile), Shard: sess.Shard,
		Done: len(mine), Total: len(mine)}
	if len(todo) == 0 {
		return summary.write(stdout, opts.JSON)
	}

	ex, err := newExecutor(ctx, s, stderr)
	if err != nil {
		return err
	}
	defer ex.close()

	// Warm-up: every configuration left, Warmup times, in run order.
	if s.Warmup > 0 {
		seen := map[string]bool{}
		for _, r := range todo {
			if seen[r.Config] {
				continue
			}
			seen[r.Config] = true
			for range s.Warmup {
				if _, err := ex.run(ctx, r); err != nil {
					return fmt.Errorf("experiments: warm-up %s: %w", r.Config, err)
				}
			}
		}
	}

	bar := progress.New(stderr, s.Name, int64(len(todo)), "runs", opts.Now)
	machine := thisMachine().Hostname
	for _, r := range todo {
		if err := ctx.Err(); err != nil {
			return err
		}
		startAt := ""
		if opts.Now != nil {
			startAt = opts.Now().Format(time.RFC3339)
		}
		res, err := ex.run(ctx, r)
		if err != nil {
			return fmt.Errorf("experiments: run %s: %w", r.Key, err)
		}
		res.Key, res.Spec, res.Backend, res.Profile, res.Machine = r.Key, s.Hash, s.Backend, s.Profile, machine
		res.Nodes, res.Query, res.Policy, res.Set, res.Sweep, res.Rep, res.Started = r.Nodes, r.Query, r.Label, r.PolicySet, r.Sweep, r.Rep, startAt
		if err := AppendResult(opts.Out, res); err != nil {
			return err
		}
		bar.Add(1)
		if opts.OnResult != nil {
			if err := opts.OnResult(res); err != nil {
				return err
			}
		}
	}
	bar.Finish()
	summary.Ran = len(todo)
	return summary.write(stdout, opts.JSON)
}

// recordProfile fills the profile fields of m from s.
func (m *Meta) recordProfile(s *Spec) error {
	prof, hash, err := s.ResolvedProfile("")
	if err != nil {
		return err
	}
	content, err := sim.MarshalProfile(prof, "")
	if err != nil {
		return err
	}
	m.ProfilePath, m.ProfileHash, m.ProfileContent, m.ProfilePoints = s.ProfilePath, hash, string(content), nil
	for set, rp := range s.profiles {
		if set != "" {
			if m.ProfilePoints == nil {
				m.ProfilePoints = map[string]string{}
			}
			m.ProfilePoints[set] = rp.hash
		}
	}
	return nil
}

// supersede splits the stored results of s into those whose keys are
// runs of s as it is now (returned) and the others: results of another
// profile content or policy configuration, whose keys carry other hashes,
// and results stored before keys carried hashes, which cannot be told
// apart from them. The others are appended to dir/SupersededFile and
// dropped from dir/results.csv, so that their runs run again and no
// reader mixes two hardware models; it says so on log.
func supersede(dir string, s *Spec, old []Result, log io.Writer) (keep []Result, moved int, err error) {
	want := map[string]bool{}
	for _, r := range s.Runs() {
		want[r.Key] = true
	}
	var gone []Result
	unhashed := 0
	for _, r := range old {
		if want[r.Key] {
			keep = append(keep, r)
			continue
		}
		gone = append(gone, r)
		if !KeyHashed(r.Key) {
			unhashed++
		}
	}
	if len(gone) == 0 {
		return old, 0, nil
	}
	prev, err := readSuperseded(dir)
	if err != nil {
		return nil, 0, err
	}
	if err := writeTable(filepath.Join(dir, SupersededFile), append(prev, gone...)); err != nil {
		return nil, 0, err
	}
	if err := WriteResults(dir, keep); err != nil {
		return nil, 0, err
	}
	if unhashed > 0 {
		fmt.Fprintf(log, "%s: %d stored results have keys without the profile and policy hashes (stored before keys carried them): they may be of another hardware model, so they run again; kept in %s\n",
			dir, unhashed, SupersededFile)
	}
	if n := len(gone) - unhashed; n > 0 {
		fmt.Fprintf(log, "%s: %d stored results are of another profile content or policy configuration (their keys' hashes differ): they run again; kept in %s\n",
			dir, n, SupersededFile)
	}
	return keep, len(gone), nil
}

// readSuperseded reads dir/SupersededFile (none if absent).
func readSuperseded(dir string) ([]Result, error) {
	path := filepath.Join(dir, SupersededFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return ReadResults(path)
}

// executor runs single runs of one spec on its backend.
type executor struct {
	s      *Spec
	ds     *dataset.Dataset
	tables []plan.TableStats // the dataset's (nil: sized from SF)
	dsSF   float64
	reader *storage.Reader
	engOpt engine.QueryOptions
	undoGC func()
}

func newExecutor(ctx context.Context, s *Spec, log io.Writer) (*executor, error) {
	ex := &executor{s: s}
	if s.Dataset != "" {
		ds, err := dataset.Open(s.Dataset)
		if err != nil {
			return nil, fmt.Errorf("experiments: %s: %w (generate it with `gostachio gen` or `make demo`)", s.Path, err)
		}
		ex.ds, ex.tables, ex.dsSF = ds, ds.PlanStats(), ds.Manifest.ScaleFactor
		if !(ex.dsSF > 0) {
			if ex.dsSF, err = queries.ScaleFactor(ex.tables); err != nil {
				if len(s.SQL) < len(s.Queries) {
					return nil, fmt.Errorf("experiments: %s: %w", s.Dataset, err)
				}
				// SQL plans take their estimates from the statistics.
				ex.dsSF = 1
			}
		}
	}
	switch s.Backend {
	case "sim":
		// Each run simulates its point's profile (Spec.ResolvedProfile).
	case "engine":
		if err := engine.VerifyOnce(ctx, ex.ds, log); err != nil {
			return nil, err
		}
		ex.undoGC = engine.TuneGC()
		engine.FitHeapLimit(ex.ds)
		r, err := engine.OpenSession(ctx, ex.ds, engine.QueryOptions{Log: log})
		if err != nil {
			ex.undoGC()
			return nil, err
		}
		ex.reader = r
		ex.engOpt = engine.QueryOptions{Reader: r, Log: log, NoVerify: true}
		// The policies see the spec's profile as this machine's rates.
		if prof, _, err := s.ResolvedProfile(""); err == nil {
			ex.engOpt.Rates = prof.Rates()
		}
	default:
		return nil, fmt.Errorf("experiments: unknown backend %q", s.Backend)
	}
	return ex, nil
}

func (ex *executor) close() {
	if ex.reader != nil {
		ex.reader.Close()
	}
	if ex.undoGC != nil {
		ex.undoGC()
	}
}

// jitterSeed derives a run's jitter seed from the spec's seed and the run's
// ID (its key without the hashes), so that a run draws the same latencies whatever order (or shard, or
// resumption) it runs in.
func jitterSeed(seed uint64, key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64() ^ (seed * 0x9e3779b97f4a7c15)
}

// run executes r and returns its measurements (Seconds, Bound, Efficiency,
// Util, SF); the caller fills in the identity fields.
func (ex *executor) run(ctx context.Context, r Run) (Result, error) {
	var res Result
	sf, tables := r.SF, ex.tables
	if tables != nil {
		sf = ex.dsSF
	}
	res.SF = sf
	switch ex.s.Backend {
	case "sim":
		if tables == nil {
			var err error
			if tables, err = queries.Stats(sf, sim.DefaultChunkRows); err != nil {
				return res, err
			}
		}
		prof, _, err := ex.s.ResolvedProfile(r.ProfileSet)
		if err != nil {
			return res, err
		}
		cat, err := ex.s.Catalog(r.Nodes * max(prof.Node.GPUs, 1))
		if err != nil {
			return res, err
		}
		p, err := cat.Plan(r.Query, sf, tables)
		if err != nil {
			return res, err
		}
		pol, err := scheduler.NewPolicy(r.Policy, r.Set)
		if err != nil {
			return res, err
		}
		rep, err := sim.Simulate(ctx, p, prof, r.Nodes, pol, nil, ex.s.Jitter, jitterSeed(ex.s.Seed, r.ID()))
		if err != nil {
			return res, err
		}
		res.Seconds, res.Bound, res.Efficiency = float64(rep.MakespanNs)/1e9, float64(rep.BoundNs)/1e9, rep.Efficiency
		res.Util = map[string]float64{}
		for _, rr := range rep.Resources {
			res.Util[rr.Kind] = rr.Util
		}
	case "engine":
		o := ex.engOpt
		o.Policy, o.Set = r.Policy, r.Set
		rec := &traces.Recorder{Run: r.Key}
		o.Trace = rec
		// Sized for the devices engine.Query gives a run without Devices.
		cat, err := ex.s.Catalog(runtime.GOMAXPROCS(0))
		if err != nil {
			return res, err
		}
		p, err := engine.BuildQuery(ex.ds, cat, r.Query)
		if err != nil {
			return res, err
		}
		qr, err := engine.Query(ctx, ex.ds, p, o)
		if err != nil {
			return res, err
		}
		ov := traces.Overlap(rec.Events, runtime.GOMAXPROCS(0))
		res.Seconds, res.Bound, res.Efficiency = qr.Wall.Seconds(), float64(ov.Bound)/1e9, ov.Efficiency
		res.Util = utilByKind(traces.Resources(rec.Events, ov.Makespan))
	}
	return res, nil
}

// utilByKind is the mean utilization (busy time over makespan) of the
// resources of each kind.
func utilByKind(stats []traces.ResourceStat) map[string]float64 {
	sum, n := map[string]float64{}, map[string]int{}
	for _, st := range stats {
		k := st.Res.Kind.String()
		sum[k] += st.Utilization
		n[k]++
	}
	for k := range sum {
		sum[k] /= float64(n[k])
	}
	return sum
}

// MergeResults merges the results folders (or results.csv files) srcs into
// the folder dst (created if missing; results it already holds are kept):
// rows are deduplicated by Key (the first seen wins: dst's, then srcs' in
// order), results of different specs are an error, and dst/meta.json gets
// the sessions of every source's meta.json. The summary says how many runs
// dst holds and how many of them the sources added.
func MergeResults(dst string, srcs ...string) (MergeSummary, error) {
	sum := MergeSummary{Dst: dst, Sources: len(srcs)}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return sum, fmt.Errorf("experiments: merge: %w", err)
	}
	unlock, err := lockDir(dst)
	if err != nil {
		return sum, err
	}
	defer unlock()
	all, err := readStore(dst, "")
	if err != nil {
		return sum, err
	}
	hash, from := "", dst
	if len(all) > 0 {
		hash = all[0].Spec
	}
	seen := map[string]bool{}
	for _, r := range all {
		seen[r.Key] = true
	}
	held := len(all)
	var meta *Meta
	if m, err := ReadMeta(dst); err == nil {
		meta = m
	}
	var specCopy []byte
	for _, src := range srcs {
		rs, err := ReadResults(src)
		if err != nil {
			return sum, err
		}
		for _, r := range rs {
			if hash == "" {
				hash, from = r.Spec, src
			}
			if r.Spec != hash {
				return sum, fmt.Errorf("experiments: merge: %s holds results of spec %s, %s of spec %s: merge only shards of one spec", src, r.Spec, from, hash)
			}
			if !seen[r.Key] {
				seen[r.Key] = true
				all = append(all, r)
			}
		}
		dir := src
		if fi, err := os.Stat(src); err == nil && !fi.IsDir() {
			dir = filepath.Dir(src)
		}
		if m, err := ReadMeta(dir); err == nil {
			if hash != "" && m.SpecHash != hash {
				return sum, fmt.Errorf("experiments: merge: %s/meta.json is of spec %s, its results of %s", dir, m.SpecHash, hash)
			}
			if meta == nil {
				c := *m
				c.Sessions = nil
				meta = &c
			}
			for _, se := range m.Sessions {
				if !slices.Contains(meta.Sessions, se) {
					meta.Sessions = append(meta.Sessions, se)
				}
			}
		}
		if specCopy == nil {
			specCopy, _ = os.ReadFile(filepath.Join(dir, SpecFile))
		}
	}
	sum.Runs, sum.Added = len(all), len(all)-held
	if err := WriteResults(dst, all); err != nil {
		return sum, err
	}
	if meta != nil {
		if err := writeMeta(dst, meta); err != nil {
			return sum, err
		}
	}
	if _, err := os.Stat(filepath.Join(dst, SpecFile)); errors.Is(err, os.ErrNotExist) && specCopy != nil {
		return sum, writeFileAtomic(filepath.Join(dst, SpecFile), specCopy)
	}
	return sum, nil
}

// MergeSummary is what MergeResults did (JSON with --json).
type MergeSummary struct {
	Dst     string `json:"dst"`
	Sources int    `json:"sources"`
	// Runs is how many runs dst holds now, Added how many the sources
	// brought that it did not hold.
	Runs  int `json:"runs"`
	Added int `json:"added"`
}

// ParseShard parses "i/n" (0 <= i < n); "" is 0/1 (no sharding).
func ParseShard(s string) (i, n int, err error) {
	if s == "" {
		return 0, 1, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("experiments: --shard %q: want i/n with 0 <= i < n", s)
	}
	return i, n, nil
}
