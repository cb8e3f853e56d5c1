package calibrate

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/engine/gpu"
	"gostachio/kernels/cpu"
	"gostachio/plan"
)

// TestGPUPipelines: every GPU micro-benchmark builds over the dataset, is
// one the GPU backend runs (gpu.Supported) as one fused pipeline (so it
// prices what the engine's pipelines cost), and is none of the TPC-H queries' scan pipelines (the validation of
// the queries is held out).
func TestGPUPipelines(t *testing.T) {
	ds, err := dataset.Open(testData(t))
	if err != nil {
		t.Fatal(err)
	}
	tables := ds.PlanStats()
	queryOps := map[string]bool{}
	m := &micro{ds: ds}
	if err := m.eachPlan(context.Background(), func(p *plan.Plan) error {
		for _, pl := range p.Pipelines {
			for i := range pl.Ops {
				queryOps[pl.Ops[i].Fingerprint()] = true
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, gp := range gpuPipelines() {
		b := plan.NewBuilder("gpu micro", tables)
		gp.build(b).Gather()
		p, err := b.Build()
		if err != nil {
			t.Fatalf("%s: %v", gp.name, err)
		}
		ops := p.Pipelines[0].Ops
		if err := gpu.Supported(ops); err != nil {
			t.Fatalf("%s: %v", gp.name, err)
		}
		sb, err := ds.ReadChunk(gp.table, 0, ops[0].Out)
		if err != nil {
			t.Fatal(err)
		}
		if err := gpu.Fuses(engine.ChunkBatch(sb), ops); err != nil {
			t.Fatalf("%s: not fused: %v", gp.name, err)
		}
		for i := range ops {
			if ops[i].Kind != plan.OpScan && ops[i].Kind != plan.OpGather && queryOps[ops[i].Fingerprint()] {
				t.Errorf("%s: operator %s is a TPC-H query's", gp.name, ops[i].Label)
			}
		}
	}
}

// TestPinnedCopies: the copies equal their sources and live in the buffer.
func TestPinnedCopies(t *testing.T) {
	ds, err := dataset.Open(testData(t))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := ds.ReadChunk("lineitem", 0, []string{"l_quantity", "l_shipmode", "l_shipdate"})
	if err != nil {
		t.Fatal(err)
	}
	parts := []*cpu.Batch{engine.ChunkBatch(sb), cpu.Slice(engine.ChunkBatch(sb), 3, 17)}
	buf := make([]byte, 64<<20)
	got := pinnedCopies(buf, parts)
	for i := range parts {
		if g, w := fmtRows(got[i]), fmtRows(parts[i]); !slices.Equal(g, w) {
			t.Fatalf("part %d differs", i)
		}
		lo, hi := uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&buf[len(buf)-1]))
		for k, c := range got[i].Cols {
			var p unsafe.Pointer
			switch {
			case len(c.I64) > 0:
				p = unsafe.Pointer(&c.I64[0])
			case len(c.I32) > 0:
				p = unsafe.Pointer(&c.I32[0])
			default:
				p = unsafe.Pointer(&c.Str[0])
			}
			if a := uintptr(p); a < lo || a > hi || a%8 != 0 {
				t.Fatalf("part %d column %d at %#x: outside the buffer [%#x, %#x] or unaligned", i, k, a, lo, hi)
			}
		}
	}
}

func fmtRows(b *cpu.Batch) []string {
	var out []string
	for r := 0; r < b.Rows; r++ {
		s := ""
		for c := range b.Cols {
			s += b.Cols[c].Format(r) + "|"
		}
		out = append(out, s)
	}
	return out
}

// TestFitGPUProfile: GPU samples drawn from known prices (copies: 20 µs +
// bytes at 50 GB/s; kernels: 30 µs + bytes at 1.5 TB/s + row·terms at
// 400 G/s) fit back to those prices within 1%, and the profile models the
// GPU backend: one device, scan pipelines on the GPU (fused), the rest on
// the host; refitting gives the same bytes. Samples of one GPU component
// without the other are refused.
func TestFitGPUProfile(t *testing.T) {
	samples := append([]Sample(nil), quickSamples(t)...)
	var kernels []Sample
	for i, rows := range []int64{131072, 262144, 524288, 1 << 20, 2 << 20, 6 << 20} {
		for k, shape := range []struct{ width, terms float64 }{{4, 1}, {24, 3}, {20, 9}, {40, 14}} {
			bytes := int64(shape.width * float64(rows))
			copyNs := 20_000 + float64(bytes)/50
			kernelNs := 30_000 + float64(bytes)/1500 + float64(rows)*shape.terms/400
			samples = append(samples, Sample{Component: CompGPUH2D, Case: fmt.Sprintf("h2d %d/%d", i, k), Bytes: bytes, Rows: rows, Ns: int64(copyNs)})
			kernels = append(kernels, Sample{Component: CompGPUKernel, Op: "agg-partial", Case: fmt.Sprintf("kernel %d/%d", i, k), Bytes: bytes, Rows: rows, Terms: shape.terms, Ns: int64(kernelNs)})
		}
	}
	if _, err := FitProfile(samples, ProfileOptions{Devices: 1, Provenance: fixedProvenance()}); err == nil || !strings.Contains(err.Error(), CompGPUKernel) {
		t.Fatalf("copies without kernels: %v", err)
	}
	samples = append(samples, kernels...)
	pv := fixedProvenance()
	pv.GPU = "Test GPU"
	opts := ProfileOptions{Name: "gpu-test", Devices: 1, HostCores: 16, Provenance: pv}
	fit, err := FitProfile(samples, opts)
	if err != nil {
		t.Fatal(err)
	}
	p := fit.Profile
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.01*math.Abs(want) {
			t.Errorf("%s = %g, want %g", what, got, want)
		}
	}
	if !p.Node.GPUScansOnly || p.Node.KernelsOnHost || p.Node.GPUs != 1 || p.Node.HostCores != 16 {
		t.Fatalf("node %+v: want one GPU running scans, 16 host cores", p.Node)
	}
	near("pcie.h2d", float64(p.PCIe.H2D), 50e9)
	near("pcie.latency", float64(p.PCIe.Latency), 20_000)
	f := p.GPU.Fused
	if f == nil {
		t.Fatal("no gpu.fused")
	}
	near("fused.fixed", float64(f.Fixed), 30_000)
	near("fused.bytes", float64(f.ByteRate), 1.5e12)
	near("fused.terms", float64(f.TermRate), 400e9)
	if p.Provenance == nil || p.Provenance.GPU != "Test GPU" {
		t.Errorf("provenance %+v: want the GPU named", p.Provenance)
	}
	again, err := FitProfile(samples, opts)
	if err != nil {
		t.Fatal(err)
	}
	if string(again.YAML) != string(fit.YAML) {
		t.Fatal("refit differs")
	}
}

// TestValidateProfileMatchesBackend: a GPU profile validates only against
// the GPU backend, a CPU profile only against the CPU engine.
func TestValidateProfileMatchesBackend(t *testing.T) {
	data := testData(t)
	_, err := Validate(context.Background(), ValidateOptions{Profile: "devbox", Data: data, Queries: "q6", UseGPU: true})
	if err == nil || !strings.Contains(err.Error(), "gpu_scans_only") {
		t.Fatalf("CPU profile with --gpu: %v", err)
	}
	prof := filepath.Join(t.TempDir(), "gpu.yaml")
	y, err := os.ReadFile("../sim/testdata/profiles/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y = []byte(strings.Replace(string(y), "  merge_threads: 1\n", "  merge_threads: 1\n  gpu_scans_only: true\n  kernel_threads: 1\n", 1))
	if err := os.WriteFile(prof, y, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Validate(context.Background(), ValidateOptions{Profile: prof, Data: data, Queries: "q6"})
	if err == nil || !strings.Contains(err.Error(), "--gpu") {
		t.Fatalf("GPU profile without --gpu: %v", err)
	}
}
