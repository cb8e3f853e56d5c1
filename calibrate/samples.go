// Package calibrate fits the simulator's cost model to this machine:
// micro-benchmarks of the CPU engine's real kernels, storage reader and
// task dispatch (RunMicro), least-squares fits of them into a hardware
// profile (FitProfile), the same fit from recorded engine traces
// (FitTraces), and the held-out check that the calibrated simulator
// predicts whole queries it never saw (Validate).
//
// Reproducibility: a profile is a pure function of its samples. RunMicro's
// samples are saved next to the profile (PROFILE.samples.csv) and
// FitProfile refits them to a byte-identical profile.
package calibrate

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"gostachio/internal/atomicfile"
)

// Components of a Sample.
const (
	CompRead   = "read"   // storage: Tasks reads of Bytes each, Depth outstanding; Ns in all
	CompH2D    = "h2d"    // the CPU "copy" of a unit's columns (Bytes); Ns one call
	CompLaunch = "launch" // dispatch of one task to a CPU slot and back; Ns per task
	CompKernel = "kernel" // one operator (Op) over Bytes / Rows of input; Ns one call
	// CompReference is the CPU reference workload (reference.go): Ns the
	// median of Tasks runs, taken between the groups of kernel samples.
	CompReference = "reference"
	// CompSteal is a window of compute loops on Tasks cores (steal.go):
	// Rows its length in ns, Ns the median loop; beside reads Depth deep
	// (Depth > 0), Bytes were read during the window.
	CompSteal = "steal"
	// CompCorun is one kernel (Op, Case, Rows) timed alone (Depth 0) or
	// beside Depth kernels on the other cores (corun.go): Ns the median
	// over Tasks alternations.
	CompCorun = "corun"
	// CompCompletion is one round of the completion probe (completion.go):
	// a read of Bytes submitted after Depth reads of Rows bytes each, at
	// once; Ns the small read's time from submission to completion, Tasks
	// the last large read's (ns).
	CompCompletion = "completion"
	// CompGPUH2D is the GPU backend's h2d of a scan unit: its columns
	// (Bytes, as the host holds them) from pinned memory into device
	// memory; Ns one call (gpumicro.go).
	CompGPUH2D = "gpu-h2d"
	// CompGPUKernel is one fused pipeline on the GPU over Bytes / Rows of
	// resident input, Terms / StrTerms the sum of its operators' (what a
	// fused pass computes per row), the partial state back on the host;
	// Ns one call.
	CompGPUKernel = "gpu-kernel"
)

// Sample is one micro-benchmark measurement.
type Sample struct {
	Component string
	// Op is the plan.OpKind name of a kernel sample ("" otherwise); Case
	// says what ran ("q6 p0 filter", "probe inner build=4096").
	Op, Case string
	// Bytes and Rows are the input size (read: bytes per read).
	Bytes, Rows int64
	// Depth and Tasks: reads outstanding and reads done (read samples).
	Depth, Tasks int
	// Ns is the measured time (the mean over repetitions for kernels).
	Ns int64
	// Terms is a kernel's expression terms per row (plan.Op.Terms),
	// StrTerms the part of them on strings (plan.Op.StrTerms).
	Terms, StrTerms float64
	// Out is the bytes a kernel wrote (0 where not measured).
	Out int64
	// Table is a probe's working set: the input bytes of the hash table
	// it probes (0: the kernel's own input is its working set).
	Table int64
	// Key is the plan operator a kernel sample ran
	// (plan.Op.Fingerprint; "" for synthetic kernels such as the joins
	// on TPC-H keys): FitProfile prices that operator from its own
	// samples (costmodel.Device.Profiled).
	Key string
}

var sampleHeader = []string{"component", "op", "case", "bytes", "rows", "depth", "tasks", "ns", "terms", "out", "table", "str_terms", "key"}

// WriteSamples writes samples as CSV with a header.
func WriteSamples(w io.Writer, samples []Sample) error {
	cw := csv.NewWriter(w)
	cw.Write(sampleHeader)
	for _, s := range samples {
		cw.Write([]string{s.Component, s.Op, s.Case, strconv.FormatInt(s.Bytes, 10), strconv.FormatInt(s.Rows, 10),
			strconv.Itoa(s.Depth), strconv.Itoa(s.Tasks), strconv.FormatInt(s.Ns, 10), strconv.FormatFloat(s.Terms, 'g', -1, 64), strconv.FormatInt(s.Out, 10), strconv.FormatInt(s.Table, 10), strconv.FormatFloat(s.StrTerms, 'g', -1, 64), s.Key})
	}
	cw.Flush()
	return cw.Error()
}

// ReadSamples reads what WriteSamples wrote; a malformed row is an error
// naming its line.
func ReadSamples(r io.Reader) ([]Sample, error) {
	cr := csv.NewReader(r)
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("calibrate: samples: header: %w", err)
	}
	// Samples written before the terms, out, table, str_terms and key
	// columns have one to five columns less.
	cols := len(sampleHeader)
	if len(head) >= cols-5 && len(head) < cols {
		cols = len(head)
	}
	cr.FieldsPerRecord = cols
	if len(head) != cols {
		return nil, fmt.Errorf("calibrate: samples: %d columns, want %d", len(head), len(sampleHeader))
	}
	for i, h := range sampleHeader[:cols] {
		if head[i] != h {
			return nil, fmt.Errorf("calibrate: samples: column %d is %q, want %q", i+1, head[i], h)
		}
	}
	var out []Sample
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("calibrate: samples: %w", err)
		}
		s := Sample{Component: rec[0], Op: rec[1], Case: rec[2]}
		var e [5]error
		s.Bytes, e[0] = strconv.ParseInt(rec[3], 10, 64)
		s.Rows, e[1] = strconv.ParseInt(rec[4], 10, 64)
		s.Depth, e[2] = strconv.Atoi(rec[5])
		s.Tasks, e[3] = strconv.Atoi(rec[6])
		s.Ns, e[4] = strconv.ParseInt(rec[7], 10, 64)
		var te, oe, ke, se error
		if cols > 8 {
			s.Terms, te = strconv.ParseFloat(rec[8], 64)
		}
		if cols > 9 {
			s.Out, oe = strconv.ParseInt(rec[9], 10, 64)
		}
		if cols > 10 {
			s.Table, ke = strconv.ParseInt(rec[10], 10, 64)
		}
		if cols > 11 {
			s.StrTerms, se = strconv.ParseFloat(rec[11], 64)
		}
		if cols > 12 {
			s.Key = rec[12]
		}
		if err := errors.Join(append(e[:], te, oe, ke, se)...); err != nil {
			return nil, fmt.Errorf("calibrate: samples line %d: %w", line, err)
		}
		out = append(out, s)
	}
}

// ReadSamplesFile reads a samples CSV file.
func ReadSamplesFile(path string) ([]Sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	defer f.Close()
	return ReadSamples(f)
}

// writeFileAtomic writes data to path atomically (see atomicfile).
func writeFileAtomic(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	return nil
}
