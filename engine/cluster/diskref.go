package cluster

import (
	"context"
	"fmt"
	"io"

	"gostachio/costmodel"
	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/engine/storage"
	"gostachio/internal/diskref"
	"gostachio/sim"
)

// workerDiskReference is rank 0's disk reference between queries
// (WorkerOptions.DiskReferenceEvery): its own reader, so that the
// queries' readers and their buffers are left as they were.
type workerDiskReference struct {
	reader *storage.Reader
	ds     *dataset.Dataset
	nvme   costmodel.Storage
	bytes  int64
}

// openDiskReference checks o's disk reference flags on every rank and, on
// rank 0 when it is to be timed, opens its reader; nil when it is not
// (a nil *workerDiskReference closes as a no-op).
func openDiskReference(ctx context.Context, o WorkerOptions, rank int) (*workerDiskReference, error) {
	switch {
	case o.DiskReferenceEvery < 0:
		return nil, fmt.Errorf("cluster: worker: --disk-reference-every %d: want 0 (never) or more", o.DiskReferenceEvery)
	case o.DiskReferenceEvery > 0 && o.DiskReferenceProfile == "":
		return nil, fmt.Errorf("cluster: worker: --disk-reference-every %d needs --disk-reference-profile (the profile whose storage model shapes the reference's reads)", o.DiskReferenceEvery)
	case o.DiskReferenceEvery == 0 && o.DiskReferenceProfile != "":
		return nil, fmt.Errorf("cluster: worker: --disk-reference-profile %s without --disk-reference-every N", o.DiskReferenceProfile)
	case o.DiskReferenceEvery == 0 || rank != 0:
		return nil, nil
	}
	prof, err := sim.LoadProfileLog(o.DiskReferenceProfile, io.Discard)
	if err != nil {
		return nil, fmt.Errorf("cluster: worker: --disk-reference-profile: %w", err)
	}
	ds, err := dataset.Open(o.Data)
	if err != nil {
		return nil, fmt.Errorf("cluster: worker: disk reference: %w", err)
	}
	n := o.diskReferenceBytes
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
	return &workerDiskReference{reader: r, ds: ds, nvme: prof.NVMe, bytes: n}, nil
}

// diskReading is one disk reference: the bytes it read and the
// nanoseconds they took (0: none timed).
type diskReading struct {
	bytes, ns int64
}

// time reads one disk reference.
func (d *workerDiskReference) time(ctx context.Context) (diskReading, error) {
	b, took, err := diskref.Time(ctx, d.reader, d.ds, &d.nvme, d.bytes)
	if err != nil {
		return diskReading{}, fmt.Errorf("cluster: worker: disk reference: %w", err)
	}
	return diskReading{bytes: b, ns: took.Nanoseconds()}, nil
}

// close closes the reader (nothing for nil).
func (d *workerDiskReference) close() {
	if d != nil {
		d.reader.Close()
	}
}
