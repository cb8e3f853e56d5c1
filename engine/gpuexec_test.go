package engine

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"gostachio/engine/gpu"
	"gostachio/engine/storage/alloc"
	"gostachio/kernels/cuda"
)

// TestGPUAnswers runs Q1 and Q6 on the GPU backend (serial and overlap, one
// and two devices' streams) at SF0.01 and SF1 against the official answers,
// and checks that a query the GPU path cannot run is refused before it
// starts, naming the operator. Skipped without a GPU.
func TestGPUAnswers(t *testing.T) {
	if _, err := cuda.Load(); err != nil {
		t.Skip("no CUDA driver: ", err)
	}
	dev, err := gpu.Open(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	sfs := []float64{0.01, 1}
	if testing.Short() {
		sfs = sfs[:1]
	}
	for _, sf := range sfs {
		ds := testData(t, sf)
		for _, q := range []string{"q1", "q6"} {
			for _, c := range []struct {
				pol     string
				devices int
			}{{"serial", 1}, {"overlap", 1}, {"overlap", 2}} {
				t.Run(q+"/"+c.pol, func(t *testing.T) {
					checkQuery(t, ds, q, sf, QueryOptions{Policy: c.pol, Devices: c.devices, GPU: dev, Set: "chunk=16MiB"}, alloc.NewHeap())
				})
			}
		}
		// Reads into pinned buffers (pooled: the vectors are views only
		// until the upload).
		pool, unpin, err := dev.PinnedPool(256 << 20)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"q1", "q6"} {
			t.Run(q+"/pinned", func(t *testing.T) {
				checkQuery(t, ds, q, sf, QueryOptions{Policy: "overlap", Devices: 2, GPU: dev, Set: "chunk=16MiB"}, pool)
			})
		}
		if err := unpin(); err != nil {
			t.Error(err)
		}
		_, err = Query(context.Background(), ds, "q3", QueryOptions{GPU: dev, Devices: 1})
		if err == nil || !strings.Contains(err.Error(), "on the GPU") || !strings.Contains(err.Error(), "GPU path") {
			t.Errorf("q3 on the GPU: %v, want a refusal naming the operator", err)
		}
	}
	if dev.Peak() <= 0 {
		t.Errorf("device memory peak %d after the runs", dev.Peak())
	}
}

// TestGPUWithoutDriver: asking for the GPU on a machine without a CUDA
// driver fails with a message naming that, and runs nothing; the zero
// RunOptions runs on the CPU.
func TestGPUWithoutDriver(t *testing.T) {
	if _, err := cuda.Load(); err == nil {
		t.Skip("a CUDA driver is installed")
	}
	ds := testData(t, 0.01)
	var out bytes.Buffer
	err := RunQueries(context.Background(), RunOptions{Data: ds.Dir, Query: "q6", UseGPU: true}, &out, io.Discard)
	if !errors.Is(err, gpu.ErrNoDriver) || out.Len() != 0 {
		t.Fatalf("--gpu without a driver: %v (printed %q)", err, out.String())
	}
	if err := RunQueries(context.Background(), RunOptions{Data: ds.Dir, Query: "q6"}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "revenue") {
		t.Fatalf("the zero options: %v, printed %q", err, out.String())
	}
}
