package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
)

// fioArgs are fio's flags for the same workload as BenchOptions: one job, io_uring engine,
// O_DIRECT, the same block size, depth, pattern (read / randread), file extent and duration.
// lat_percentiles makes fio report percentiles of total latency (submission to completion), the
// figure our side measures.
func fioArgs(opts BenchOptions, path string, size int64) []string {
	rw := "read"
	if opts.Pattern == "rand" {
		rw = "randread"
	}
	return []string{
		"--name=gostachio-bench", "--filename=" + path, "--readonly",
		"--ioengine=io_uring", "--direct=1", "--rw=" + rw,
		fmt.Sprintf("--bs=%d", opts.BlockSize), fmt.Sprintf("--iodepth=%d", opts.QD),
		fmt.Sprintf("--size=%d", size), fmt.Sprintf("--runtime=%dms", opts.Duration.Milliseconds()),
		"--time_based=1", "--numjobs=1", "--lat_percentiles=1", "--output-format=json",
	}
}

// fioOutput is the part of fio's JSON output we read.
type fioOutput struct {
	Jobs []struct {
		Error int `json:"error"`
		Read  struct {
			IOBytes   int64   `json:"io_bytes"`
			BWBytes   float64 `json:"bw_bytes"`
			IOPS      float64 `json:"iops"`
			RuntimeMS float64 `json:"runtime"`
			LatNS     struct {
				Percentile map[string]float64 `json:"percentile"`
			} `json:"lat_ns"`
		} `json:"read"`
	} `json:"jobs"`
}

// parseFio extracts the figures from fio's JSON (anything fio printed before the JSON is skipped).
func parseFio(out []byte) (BenchResult, error) {
	i := bytes.IndexByte(out, '{')
	if i < 0 {
		return BenchResult{}, fmt.Errorf("engine/storage: bench: fio printed no JSON: %q", truncate(out, 300))
	}
	var fo fioOutput
	if err := json.Unmarshal(out[i:], &fo); err != nil {
		return BenchResult{}, fmt.Errorf("engine/storage: bench: parse fio JSON: %w", err)
	}
	if len(fo.Jobs) != 1 {
		return BenchResult{}, fmt.Errorf("engine/storage: bench: fio reported %d jobs, want 1", len(fo.Jobs))
	}
	j := fo.Jobs[0]
	if j.Error != 0 {
		return BenchResult{}, fmt.Errorf("engine/storage: bench: fio job failed with error %d", j.Error)
	}
	rd := j.Read
	return BenchResult{Tool: "fio", IO: "uring", Seconds: rd.RuntimeMS / 1e3, Bytes: rd.IOBytes,
		GBps: rd.BWBytes / 1e9, IOPS: rd.IOPS,
		P50us: rd.LatNS.Percentile["50.000000"] / 1e3, P99us: rd.LatNS.Percentile["99.000000"] / 1e3}, nil
}

// runFio runs fio (which must be installed) and parses its result.
func runFio(ctx context.Context, opts BenchOptions, path string, size int64) (BenchResult, error) {
	bin, err := exec.LookPath(opts.FioPath)
	if err != nil {
		return BenchResult{}, fmt.Errorf("engine/storage: bench: --vs-fio needs fio (%w); install it with `apt-get install -y fio`", err)
	}
	cmd := exec.CommandContext(ctx, bin, fioArgs(opts, path, size)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return BenchResult{}, fmt.Errorf("engine/storage: bench: fio: %w: %s", err, truncate(stderr.Bytes(), 500))
	}
	return parseFio(out)
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
