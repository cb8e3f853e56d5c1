// Package diskref is the disk reference: a fixed stream of reads timed
// beside measurements to say how fast this machine's disk runs now, as
// package cpuref says it of the CPU.
//
// The stream is a profile's requests (NVMe.Request bytes, NVMe.DeviceQD
// outstanding) over lineitem's first file, read with the engine's reader,
// and it is compared with what the profile's storage model gives the same
// stream (ModelBps). The virtio disk's speed moves by the hour (its fit:
// 1.46–1.97 GB/s in six calibrations within hours), and a validation's
// bias followed the calibration's disk: the six profiles' biases on the
// same engine runs went from +7.0% at 1.46 GB/s to −14.5% at 1.97 (the 2-core development VM, 2026-11). `validate --rescale-disk` times it between the engine's runs
// and scales the simulator's disk bandwidth by its ratio, as
// `--rescale-cpu` does the CPU prices; `cluster bench-sim --rescale-disk`
// has the emulated cluster's rank 0 time it between queries.
package diskref

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"gostachio/costmodel"
	"gostachio/dataset"
	"gostachio/engine/storage"
)

// Bytes is what one disk reference reads.
const Bytes = 128 << 20

// ModelBps is the throughput the storage model s gives a stream of
// s.Request-byte reads with s.DeviceQD (else TaskQD) outstanding, depth d:
//
//	min(s.BandwidthAt(d), d·s.Request/s.Latency)
//
// its bandwidth at that depth, unless the depth does not cover the latency.
func ModelBps(s *costmodel.Storage) float64 {
	depth := s.DeviceQD
	if depth <= 0 {
		depth = s.TaskQD
	}
	bw := s.BandwidthAt(float64(max(depth, 1)))
	if lat := time.Duration(s.Latency).Seconds(); lat > 0 {
		bw = min(bw, float64(max(depth, 1))*float64(s.Request)/lat)
	}
	return bw
}

// LineitemFile is ds's first lineitem file and its size rounded down to
// whole 4 KiB pages (the direct reader's unit).
func LineitemFile(ds *dataset.Dataset) (path string, size int64, err error) {
	path, _, err = ds.ChunkPath("lineitem", 0)
	if err != nil {
		return "", 0, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", 0, err
	}
	return path, fi.Size() &^ 4095, nil
}

// File is the file a disk reference of n bytes (Bytes: the reference)
// reads and its size, or an error naming it where it cannot hold one in
// s's requests.
func File(ds *dataset.Dataset, s *costmodel.Storage, n int64) (string, int64, error) {
	path, size, err := LineitemFile(ds)
	if err != nil {
		return "", 0, err
	}
	if req := int64(s.Request); req <= 0 || size < n {
		return "", 0, fmt.Errorf("the disk reference reads %d MiB of %s in requests of %d bytes; the file holds %d MiB (use a dataset of SF 0.25 or more)",
			n>>20, path, req, size>>20)
	}
	return path, size, nil
}

// Time reads n bytes (Bytes: the reference; rounded up to whole requests)
// of ds's lineitem file (File) in s's requests at its depth with r, and
// returns the bytes read and the time taken.
func Time(ctx context.Context, r *storage.Reader, ds *dataset.Dataset, s *costmodel.Storage, n int64) (int64, time.Duration, error) {
	path, size, err := File(ds, s, n)
	if err != nil {
		return 0, 0, err
	}
	req := int64(s.Request)
	depth := s.DeviceQD
	if depth <= 0 {
		depth = max(s.TaskQD, 1)
	}
	spans := int(max((n+req-1)/req, 1))
	start := time.Now()
	if err := ReadSpans(ctx, r, path, size, 0, req, depth, spans, nil); err != nil {
		return 0, 0, err
	}
	return int64(spans) * req, time.Since(start), nil
}

// ReadSpans reads n spans of size bytes of path with r from off on
// (wrapping to 0 where a span would pass limit), keeping depth outstanding;
// progress, if not nil, counts the bytes of each completed span as it
// completes. The buffers are released as they complete.
func ReadSpans(ctx context.Context, r *storage.Reader, path string, limit, off, size int64, depth, n int, progress *atomic.Int64) error {
	issued, done := 0, 0
	next := func() error {
		if off+size > limit {
			off = 0
		}
		req := storage.Request{Tag: uint64(issued), Ranges: []storage.Range{{Path: path, Offset: off, Length: size}}}
		off += size
		issued++
		return r.Submit(req)
	}
	for issued < min(depth, n) {
		if err := next(); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
	var cs []storage.Completion
	for done < n {
		var err error
		cs, err = r.Wait(ctx, cs[:0])
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		for i := range cs {
			if cs[i].Err != nil {
				return fmt.Errorf("read %s: %w", path, cs[i].Err)
			}
			cs[i].Buffer.Release()
			done++
			if progress != nil {
				progress.Add(size)
			}
			if issued < n {
				if err := next(); err != nil {
					return fmt.Errorf("read %s: %w", path, err)
				}
			}
		}
	}
	return nil
}
