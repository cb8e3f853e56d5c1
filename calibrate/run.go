package calibrate

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"gostachio/costmodel"
	"gostachio/dataset"
	"gostachio/engine/gpu"
)

// Options of Calibrate (`gostachio calibrate`).
type Options struct {
	// Exactly one source: Micro (run the micro-benchmarks on Data),
	// FromSamples (refit a samples CSV) or Traces (a folder of engine
	// traces, *.json / *.csv / *.parquet).
	Micro       bool
	FromSamples string
	Traces      string
	// Data is the dataset the micro-benchmarks read (Micro).
	Data string
	Seed uint64
	Reps int
	// Passes over the kernel points (MicroOptions.Passes).
	Passes int
	Quick  bool
	// Out is the profile to write; from micro-benchmarks and traces also
	// SamplesPath(Out).
	Out  string
	Name string
	// Date goes into the provenance (the caller reads the clock; the fit
	// itself never does, so refits of equal samples and dates are
	// byte-identical).
	Date string
	// UseGPU, with Micro, calibrates a profile of the engine's GPU
	// backend on CUDA device GPUOrdinal (otherwise: the CPU engine's): the
	// GPU micro-benchmarks (RunGPUMicro) join the storage, dispatch and
	// host kernel ones (the host runs the pipelines after the exchange),
	// and the profile models one device.
	UseGPU     bool
	GPUOrdinal int
	// GPUName goes into a refit GPU profile's provenance (FromSamples).
	GPUName string
}

// gpuMicro is RunMicro without the compute-beside-reads windows (the GPU
// engine's host is not what bounds it) followed by RunGPUMicro on device
// ordinal; it returns the samples and the device's name.
func gpuMicro(ctx context.Context, ordinal int, mo MicroOptions) ([]Sample, string, error) {
	dev, err := gpu.Open(ordinal, 0)
	if err != nil {
		return nil, "", fmt.Errorf("calibrate --gpu %d: %w", ordinal, err)
	}
	defer dev.Close()
	fmt.Fprintf(mo.Log, "calibrate: GPU %d: %s (%d SMs), pipelines %s\n", ordinal, dev.Info().Name, dev.Info().SMs, dev.JIT())
	mo.NoSteal = true
	mo.NoCorun = true
	samples, err := RunMicro(ctx, mo)
	if err != nil {
		return nil, "", err
	}
	ds, err := dataset.Open(mo.Data)
	if err != nil {
		return nil, "", fmt.Errorf("calibrate: %w", err)
	}
	gs, err := RunGPUMicro(ctx, dev, ds, mo.Reps, mo.Quick, mo.Log)
	if err != nil {
		return nil, "", err
	}
	return append(samples, gs...), dev.Info().Name, nil
}

// hasGPUSamples reports whether samples measured the GPU backend.
func hasGPUSamples(samples []Sample) bool {
	for _, s := range samples {
		if s.Component == CompGPUH2D || s.Component == CompGPUKernel {
			return true
		}
	}
	return false
}

// SamplesPath is where the samples of profile out are saved.
func SamplesPath(out string) string { return out + ".samples.csv" }

// Calibrate is `gostachio calibrate`: it gathers samples (micro-benchmarks,
// a samples file, or traces), fits them, prints the per-component fit to
// stdout, and writes the profile and its samples atomically. Progress goes
// to stderr.
func Calibrate(ctx context.Context, opts Options, stdout, stderr io.Writer) error {
	n := 0
	for _, b := range []bool{opts.Micro, opts.FromSamples != "", opts.Traces != ""} {
		if b {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("calibrate: give exactly one of --micro, --from-samples FILE, --traces DIR")
	}
	if opts.Out == "" {
		return fmt.Errorf("calibrate: --out PROFILE is required")
	}
	// Before minutes of measurements, not after: the profile's folder.
	if err := os.MkdirAll(filepath.Dir(opts.Out), 0o755); err != nil {
		return fmt.Errorf("calibrate: --out %s: %w", opts.Out, err)
	}
	pv := costmodel.HostProvenance()
	pv.Date = opts.Date
	devices := 0 // ProfileOptions' default: the CPU engine's
	var samples []Sample
	var err error
	switch {
	case opts.Micro:
		if opts.Data == "" {
			return fmt.Errorf("calibrate: --micro needs --data DIR (a dataset: its lineitem file is read, its tables feed the kernels)")
		}
		pv.Source = "micro-benchmarks"
		mo := MicroOptions{Data: opts.Data, Seed: opts.Seed, Reps: opts.Reps, Passes: opts.Passes, Quick: opts.Quick, Log: stderr}
		if opts.UseGPU {
			var gpuName string
			samples, gpuName, err = gpuMicro(ctx, opts.GPUOrdinal, mo)
			pv.GPU = gpuName
			devices = 1
		} else {
			samples, err = RunMicro(ctx, mo)
		}
	case opts.FromSamples != "":
		pv.Source = "micro-benchmarks"
		samples, err = ReadSamplesFile(opts.FromSamples)
		if hasGPUSamples(samples) {
			devices = 1
			pv.GPU = opts.GPUName
		}
	default:
		pv.Source = "traces"
		samples, err = TraceSamples(opts.Traces)
	}
	if err != nil {
		return err
	}
	fit, err := FitProfile(samples, ProfileOptions{Name: opts.Name, Provenance: pv, Devices: devices})
	if err != nil {
		return err
	}
	if err := fit.WriteReport(stdout); err != nil {
		return err
	}
	if opts.FromSamples == "" {
		var buf bytes.Buffer
		if err := WriteSamples(&buf, samples); err != nil {
			return err
		}
		if err := writeFileAtomic(SamplesPath(opts.Out), buf.Bytes()); err != nil {
			return err
		}
	}
	if err := writeFileAtomic(opts.Out, fit.YAML); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "calibrate: wrote %s (%d samples)\n", opts.Out, len(samples))
	return nil
}
