package calibrate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"gostachio/costmodel"
	"gostachio/internal/atomicfile"
	"gostachio/internal/diskref"
	"gostachio/sim"
)

// Re-pricing saved validations. A validation's engine runs are the
// expensive part (minutes) and the machine's drift between two of them
// moves the error more than most model changes do, so a model A/B is
// fairest on the same engine runs: validate --compare prices more profiles
// at validation time, and Reprice prices any profile later against the
// runs a validate --out folder kept, at the CPU and disk rescales that
// validation measured (recorded in RecordFile beside results.csv).

// RecordFile is the file in a validate --out folder that holds one
// ValidationRecord per validation, as JSON lines (validate appends, as it
// appends to results.csv).
const RecordFile = "validations.jsonl"

// ValidationRecord is what validate --out keeps of a validation besides
// its results.csv rows: what pricing its engine runs again needs.
type ValidationRecord struct {
	// Started matches the validation's results.csv rows (their started).
	Started string `json:"started"`
	// Profile priced the validation; Data and SF are the dataset it ran on.
	Profile string  `json:"profile"`
	Data    string  `json:"data"`
	SF      float64 `json:"sf"`
	// GPU and GPUHybrid: the engine ran the GPU backend (validate --gpu,
	// --gpu-hybrid).
	GPU       bool `json:"gpu,omitempty"`
	GPUHybrid bool `json:"gpu_hybrid,omitempty"`
	// RescaleCPU and RescaleDisk: the validation scaled the simulator by
	// the references below (validate --rescale-cpu, --rescale-disk).
	RescaleCPU  bool `json:"rescale_cpu"`
	RescaleDisk bool `json:"rescale_disk"`
	// CPURefNs is the mean of the CPURefN CPU references timed beside the
	// engine (0: none), in ns; a profile's CPU ratio is it over the
	// profile's host.reference.
	CPURefNs float64 `json:"cpu_reference_ns,omitempty"`
	CPURefN  int     `json:"cpu_reference_samples,omitempty"`
	// DiskBps is the disk reference's throughput beside the engine over
	// DiskReads reads (0: none), bytes/s; a profile's disk ratio is it
	// over what the profile's storage model gives the same reads.
	DiskBps   float64 `json:"disk_reference_bps,omitempty"`
	DiskReads int     `json:"disk_reference_reads,omitempty"`
}

// appendRecord adds rec to dir's RecordFile (written whole to a temporary
// file and renamed: an interrupted write leaves the previous records).
func appendRecord(dir string, rec ValidationRecord) error {
	path := filepath.Join(dir, RecordFile)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("calibrate: %w", err)
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		old = append(old, '\n')
	}
	return atomicfile.WriteFile(path, append(append(old, line...), '\n'))
}

// readRecords reads dir's RecordFile, by start time.
func readRecords(dir string) (map[string]ValidationRecord, error) {
	path := filepath.Join(dir, RecordFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("calibrate: %s: not found: validate --out records there the CPU and disk references a validation measured (since 2026-11-27); an older folder needs that file written from its report's references", path)
	}
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	out := map[string]ValidationRecord{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r ValidationRecord
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("calibrate: %s line %d: %w", path, n, err)
		}
		switch {
		case r.Started == "":
			return nil, fmt.Errorf("calibrate: %s line %d: no started time", path, n)
		case !(r.SF > 0):
			return nil, fmt.Errorf("calibrate: %s line %d: scale factor %g", path, n, r.SF)
		case r.RescaleCPU && !(r.CPURefNs > 0):
			return nil, fmt.Errorf("calibrate: %s line %d: rescale_cpu without a CPU reference", path, n)
		case r.RescaleDisk && !(r.DiskBps > 0):
			return nil, fmt.Errorf("calibrate: %s line %d: rescale_disk without a disk reference", path, n)
		case math.IsInf(r.CPURefNs, 0) || math.IsInf(r.DiskBps, 0) || r.CPURefNs < 0 || r.DiskBps < 0:
			return nil, fmt.Errorf("calibrate: %s line %d: references %g ns and %g B/s: want finite, not negative", path, n, r.CPURefNs, r.DiskBps)
		}
		out[r.Started] = r
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("calibrate: %s: %w", path, err)
	}
	return out, nil
}

// rescaledProfile returns p with its CPU prices multiplied by cpuRatio (the
// host's, and a CPU profile's "GPU", which is the host too: gpu false)
// and its disk bandwidth by diskRatio; a ratio of 0 leaves that part as
// profiled. p is not modified.
func rescaledProfile(p *sim.Profile, cpuRatio, diskRatio float64, gpu bool) *sim.Profile {
	scaled := *p
	if cpuRatio > 0 {
		scaled.Host = p.Host.Slowed(cpuRatio)
		if !gpu {
			scaled.GPU = p.GPU.Slowed(cpuRatio)
		}
	}
	if diskRatio > 0 {
		scaled.NVMe.Bandwidth = costmodel.Rate(float64(p.NVMe.Bandwidth) * diskRatio)
	}
	return &scaled
}

// recordRatios are the CPU and disk ratios rec's validation applied to a
// profile p (0: that part not rescaled).
func recordRatios(rec ValidationRecord, p *sim.Profile) (cpu, disk float64, err error) {
	if rec.RescaleCPU {
		if p.Host.Reference <= 0 {
			return 0, 0, fmt.Errorf("profile %s has no host.reference (the CPU reference's time at calibration), and the validation rescaled the CPU", p.Name)
		}
		cpu = rec.CPURefNs / float64(p.Host.Reference)
	}
	if rec.RescaleDisk {
		disk = rec.DiskBps / diskref.ModelBps(&p.NVMe)
	}
	return cpu, disk, nil
}

// RepriceOptions configure Reprice.
type RepriceOptions struct {
	// Data is the dataset the validations ran on (its statistics size the
	// simulated queries).
	Data string
	// Profiles price the runs (names or .yaml paths).
	Profiles []string
	// Dirs are validate --out folders; a folder holding several
	// validations gives one per validation.
	Dirs []string
	// Log receives profile warnings (nil: none).
	Log io.Writer
}

// RepriceRow is one validation's engine runs priced by one profile.
type RepriceRow struct {
	Validation string `json:"validation"`
	Started    string `json:"started"`
	Profile    string `json:"profile"`
	// CPURatio and DiskRatio are the rescales applied (0: none).
	CPURatio  float64 `json:"cpu_ratio,omitempty"`
	DiskRatio float64 `json:"disk_ratio,omitempty"`
	Cases     int     `json:"cases"`
	// The rest summarize the errors as validate does (Report).
	MedianAbs   float64 `json:"median_abs_error"`
	P90Abs      float64 `json:"p90_abs_error"`
	MaxAbs      float64 `json:"max_abs_error"`
	MaxCase     string  `json:"max_case"`
	MaxErr      float64 `json:"max_case_error"`
	MeanErr     float64 `json:"bias"`
	Under       int     `json:"under"`
	SameRanking int     `json:"queries_same_ranking"`
	Queries     int     `json:"queries"`
	Separated   int     `json:"pairs_separated"`
	Reversed    int     `json:"pairs_reversed"`
	// Sims are the simulated seconds, in the order of CaseNames.
	CaseNames []string  `json:"cases_order"`
	Engine    []float64 `json:"engine_s"`
	Sims      []float64 `json:"sim_s"`
}

// RepriceReport is Reprice's result: a row per validation and profile.
type RepriceReport struct {
	Rows []RepriceRow `json:"rows"`
}

// savedValidation is one validation's engine runs from a folder.
type savedValidation struct {
	name  string
	rec   ValidationRecord
	names []string
	cases []Case
}

// readSaved reads a validate --out folder's validations: their engine
// rounds per case (in the order of the rows) and their records.
func readSaved(dir string) ([]savedValidation, error) {
	records, err := readRecords(dir)
	if err != nil {
		return nil, err
	}
	runs, err := readSavedRuns(dir, "reprice")
	if err != nil {
		return nil, err
	}
	out := make([]savedValidation, 0, len(runs))
	for _, run := range runs {
		rec, ok := records[run.started]
		if !ok {
			return nil, fmt.Errorf("calibrate: reprice: %s: no record of the validation started %s in %s", dir, run.started, RecordFile)
		}
		v := savedValidation{name: run.name, rec: rec}
		for _, c := range run.cases {
			if c.nodes != 1 || c.sf != rec.SF {
				return nil, fmt.Errorf("calibrate: reprice: %s: engine rows of %s: %d nodes at SF %g, the validation's record says 1 node at SF %g", dir, c.key(), c.nodes, c.sf, rec.SF)
			}
			v.cases = append(v.cases, Case{Query: c.query, Policy: c.policy, Set: c.set, EngineRounds: c.rounds})
			if !slices.Contains(v.names, c.query) {
				v.names = append(v.names, c.query)
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// Reprice prices the engine runs of the validations in o.Dirs with every
// profile of o.Profiles, each at the CPU and disk rescales its validation
// measured and applied, and summarizes each pair as validate does. A
// profile priced against its own validation reproduces that validation's
// summary.
func Reprice(ctx context.Context, o RepriceOptions) (*RepriceReport, error) {
	if len(o.Dirs) == 0 {
		return nil, errors.New("calibrate: reprice: no validate --out folders given")
	}
	if len(o.Profiles) == 0 {
		return nil, errors.New("calibrate: reprice: no profiles given (--profiles)")
	}
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	var saved []savedValidation
	for _, d := range o.Dirs {
		vs, err := readSaved(d)
		if err != nil {
			return nil, err
		}
		saved = append(saved, vs...)
	}
	profs := make([]*sim.Profile, len(o.Profiles))
	for i, name := range o.Profiles {
		p, err := sim.LoadProfileLog(name, logw)
		if err != nil {
			return nil, err
		}
		profs[i] = p
	}
	_, tables, sf, err := openPlanStats(o.Data)
	if err != nil {
		return nil, err
	}
	rep := &RepriceReport{}
	for _, v := range saved {
		if math.Abs(v.rec.SF-sf) > 1e-9*sf {
			return nil, fmt.Errorf("calibrate: reprice: %s ran at SF %g; --data %s is SF %g", v.name, v.rec.SF, o.Data, sf)
		}
		for i, p := range profs {
			if p.Node.GPUScansOnly != v.rec.GPU {
				return nil, fmt.Errorf("calibrate: reprice: profile %s models the %s; %s ran the %s", o.Profiles[i], backendOf(p), v.name, map[bool]string{true: "GPU backend", false: "CPU engine"}[v.rec.GPU])
			}
			cpu, disk, err := recordRatios(v.rec, p)
			if err != nil {
				return nil, fmt.Errorf("calibrate: reprice: %s: %w", v.name, err)
			}
			cases := make([]Case, len(v.cases))
			for k, c := range v.cases {
				cases[k] = Case{Query: c.Query, Policy: c.Policy, Set: c.Set, EngineRounds: c.EngineRounds}
			}
			if err := simulateCases(ctx, cases, rescaledProfile(p, cpu, disk, v.rec.GPU), sf, tables, v.rec.GPU && v.rec.GPUHybrid); err != nil {
				return nil, err
			}
			r := summarize(p.Name, v.names, cases)
			row := RepriceRow{Validation: v.name, Started: v.rec.Started, Profile: o.Profiles[i], CPURatio: cpu, DiskRatio: disk,
				Cases: len(cases), MedianAbs: r.MedianAbs, P90Abs: r.P90Abs, MaxAbs: r.MaxAbs, MeanErr: r.MeanErr,
				Under: r.Under, SameRanking: r.SameRanking(), Queries: len(v.names)}
			for _, c := range r.Cases {
				row.CaseNames = append(row.CaseNames, strings.TrimSpace(c.Query+" "+c.Policy+" "+c.Set))
				row.Engine, row.Sims = append(row.Engine, c.Engine), append(row.Sims, c.Sim)
				if math.Abs(c.Err()) == r.MaxAbs && row.MaxCase == "" {
					row.MaxCase, row.MaxErr = row.CaseNames[len(row.CaseNames)-1], c.Err()
				}
			}
			for _, q := range v.names {
				row.Separated += r.Order[q].Separated
				row.Reversed += r.Order[q].Reversed
			}
			rep.Rows = append(rep.Rows, row)
		}
	}
	return rep, nil
}

// WriteText prints a line per validation and profile.
func (r *RepriceReport) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "validation\tstarted\tprofile\tCPU ×\tdisk ×\tcases\tmedian\tP90\tmax\tmax case\tbias\tunder\tsame ranking\treversed\t")
	ratio := func(x float64) string {
		if x == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", x)
	}
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%.1f%%\t%.1f%%\t%.1f%%\t%s %+.1f%%\t%+.1f%%\t%d\t%d/%d\t%d/%d\t\n",
			row.Validation, row.Started, row.Profile, ratio(row.CPURatio), ratio(row.DiskRatio), row.Cases,
			100*row.MedianAbs, 100*row.P90Abs, 100*row.MaxAbs, row.MaxCase, 100*row.MaxErr, 100*row.MeanErr, row.Under,
			row.SameRanking, row.Queries, row.Reversed, row.Separated)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "each validation's engine runs priced by each profile at the CPU and disk rescales the validation measured (× of that profile's calibration); errors (sim − engine) / engine over the cases' medians; same ranking: queries with Kendall τ = 1; reversed: pairs of cases the engine separates that the profile orders the other way")
	return err
}
