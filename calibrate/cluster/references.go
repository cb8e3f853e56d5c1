package cluster

import (
	"context"
	"fmt"
	"io"

	"gostachio/costmodel"
	"gostachio/dataset"
	"gostachio/engine"
	ecluster "gostachio/engine/cluster"
	"gostachio/engine/storage"
	"gostachio/internal/cpuref"
	"gostachio/internal/diskref"
	"gostachio/sim"
)

// The references a worker's rank 0 times between queries
// (ecluster.WorkerOptions.BetweenQueries): how fast this machine's CPU
// and disk ran beside the queries, which `cluster bench-sim --rescale-cpu`
// and `--rescale-disk` scale the simulator by. Their measurements, in
// each timed query's JSON result:
const (
	// CPUReferenceNs is the CPU reference's time (cpuref.Ns).
	CPUReferenceNs = "cpu_reference_ns"
	// DiskReferenceNs is the disk reference's time, reading
	// DiskReferenceBytes (diskref.Time).
	DiskReferenceNs    = "disk_reference_ns"
	DiskReferenceBytes = "disk_reference_bytes"
)

// ReferenceOptions are the references of `gostachio worker`.
type ReferenceOptions struct {
	// CPUEvery > 0 times the CPU reference (cpuref.Ns) after every
	// CPUEvery-th query, while the other workers wait for the next one
	// (--cpu-reference-every; a "cpu reference" line on stderr).
	CPUEvery int
	// DiskEvery > 0 times the disk reference (diskref.Time: DiskProfile's
	// requests at its depth over the dataset's lineitem file, with a reader
	// of the queries' IO and Buffered) after every DiskEvery-th query,
	// after the CPU reference where both are timed
	// (--disk-reference-every; a "disk reference" line on stderr).
	DiskEvery int
	// DiskProfile is the profile (name or .yaml) whose storage model
	// shapes the disk reference's stream (nvme.request bytes,
	// nvme.device_qd deep; --disk-reference-profile).
	DiskProfile string
	// Data, IO and Buffered are the worker's dataset and reader options
	// (engine.RunOptions').
	Data     string
	IO       string
	Buffered bool
	// diskBytes is what one disk reference reads (0: diskref.Bytes; tests
	// read less, from a small dataset).
	diskBytes int64
}

// References are the references rank rank of a worker times: its
// BetweenQueries hook, and the disk reference's reader, which Close
// closes. A nil *References times none.
type References struct {
	o    ReferenceOptions
	disk *diskReference
}

// OpenReferences checks o on every rank and, on rank 0 where a disk
// reference is to be timed, opens its reader, before any query runs (a
// dataset whose lineitem file cannot hold the reference is an error
// then). It returns nil where rank is not 0 or nothing is to be timed.
func OpenReferences(o ReferenceOptions, rank int) (*References, error) {
	switch {
	case o.CPUEvery < 0:
		return nil, fmt.Errorf("cluster: worker: --cpu-reference-every %d: want 0 (never) or more", o.CPUEvery)
	case o.DiskEvery < 0:
		return nil, fmt.Errorf("cluster: worker: --disk-reference-every %d: want 0 (never) or more", o.DiskEvery)
	case o.DiskEvery > 0 && o.DiskProfile == "":
		return nil, fmt.Errorf("cluster: worker: --disk-reference-every %d needs --disk-reference-profile (the profile whose storage model shapes the reference's reads)", o.DiskEvery)
	case o.DiskEvery == 0 && o.DiskProfile != "":
		return nil, fmt.Errorf("cluster: worker: --disk-reference-profile %s without --disk-reference-every N", o.DiskProfile)
	case rank != 0 || o.CPUEvery == 0 && o.DiskEvery == 0:
		return nil, nil
	}
	r := &References{o: o}
	if o.DiskEvery > 0 {
		var err error
		if r.disk, err = openDiskReference(o); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Hook is r's BetweenQueries (nil for a nil r: nothing runs between the
// queries).
func (r *References) Hook() ecluster.BetweenQueries {
	if r == nil {
		return nil
	}
	return r.between
}

// between times the references due after the index-th query (from 0).
func (r *References) between(ctx context.Context, _ string, index int) ([]ecluster.Measurement, error) {
	var ms []ecluster.Measurement
	if n := r.o.CPUEvery; n > 0 && (index+1)%n == 0 {
		ns := cpuref.Ns()
		ms = append(ms, ecluster.Measurement{Name: CPUReferenceNs, Value: float64(ns),
			Note: fmt.Sprintf("cpu reference: %.3f ms", float64(ns)/1e6)})
	}
	if n := r.o.DiskEvery; n > 0 && r.disk != nil && (index+1)%n == 0 {
		b, ns, err := r.disk.time(ctx)
		if err != nil {
			return nil, err
		}
		ms = append(ms, ecluster.Measurement{Name: DiskReferenceNs, Value: float64(ns),
			Note: fmt.Sprintf("disk reference: %.3f ms (%.3f GB/s)", float64(ns)/1e6, float64(b)/float64(ns))},
			ecluster.Measurement{Name: DiskReferenceBytes, Value: float64(b)})
	}
	return ms, nil
}

// Close closes the disk reference's reader (nothing for nil).
func (r *References) Close() {
	if r != nil && r.disk != nil {
		r.disk.reader.Close()
	}
}

// diskReference is rank 0's disk reference between queries: its own
// reader, so that the queries' readers and their buffers are left as they
// were.
type diskReference struct {
	reader *storage.Reader
	ds     *dataset.Dataset
	nvme   costmodel.Storage
	bytes  int64
}

// openDiskReference loads o's profile and opens the reader of its disk
// reference.
func openDiskReference(o ReferenceOptions) (*diskReference, error) {
	prof, err := sim.LoadProfileLog(o.DiskProfile, io.Discard)
	if err != nil {
		return nil, fmt.Errorf("cluster: worker: --disk-reference-profile: %w", err)
	}
	ds, err := dataset.Open(o.Data)
	if err != nil {
		return nil, fmt.Errorf("cluster: worker: disk reference: %w", err)
	}
	n := o.diskBytes
	if n <= 0 {
		n = diskref.Bytes
	}
	if _, _, err := diskref.File(ds, &prof.NVMe, n); err != nil {
		return nil, fmt.Errorf("cluster: worker: --disk-reference-every: %w", err)
	}
	r, err := engine.NewReader(o.IO, o.Buffered, nil, io.Discard)
	if err != nil {
		return nil, fmt.Errorf("cluster: worker: disk reference: %w", err)
	}
	return &diskReference{reader: r, ds: ds, nvme: prof.NVMe, bytes: n}, nil
}

// time reads one disk reference: the bytes read and the nanoseconds they
// took.
func (d *diskReference) time(ctx context.Context) (bytes, ns int64, err error) {
	b, took, err := diskref.Time(ctx, d.reader, d.ds, &d.nvme, d.bytes)
	if err != nil {
		return 0, 0, fmt.Errorf("cluster: worker: disk reference: %w", err)
	}
	return b, took.Nanoseconds(), nil
}
