package calibrate

import (
	"context"
	"fmt"
	"time"

	"gostachio/costmodel"
	"gostachio/dataset"
	"gostachio/engine/storage"
)

// The disk reference: a stream of the profile's requests (NVMe.Request
// bytes, NVMe.DeviceQD outstanding) over lineitem's first file, read with
// the engine's reader beside validate's runs, against what the profile's
// storage model gives the same stream. The virtio disk's speed moves by
// the hour (its fit: 1.46–1.97 GB/s in six calibrations of one session),
// and a validation's bias followed the calibration's disk: the six
// profiles' biases on the same engine runs went from +7.0% at 1.46 GB/s
// to −14.5% at 1.97 (README, issue 7). --rescale-disk scales the
// simulator's disk bandwidth by the reference's ratio, as --rescale-cpu
// does its CPU prices.

// diskRefBytes is what one disk reference reads.
const diskRefBytes = 128 << 20

// DiskCheck is the disk reference beside validate's engine runs.
type DiskCheck struct {
	// ModelBps is the profile's throughput for the reference's stream
	// (diskModelBps); MeasuredBps the reference's, over N readings.
	ModelBps, MeasuredBps float64
	N                     int
	// Ratio is MeasuredBps / ModelBps: above 1 the disk ran faster beside
	// the engine than the profile says.
	Ratio float64
	// Rescaled: the simulator's disk bandwidth was multiplied by Ratio
	// (ValidateOptions.RescaleDisk).
	Rescaled bool
}

// diskModelBps is the throughput the storage model s gives a stream of
// s.Request-byte reads with s.DeviceQD (else TaskQD) outstanding: its
// bandwidth at that depth, unless the depth does not cover the latency.
func diskModelBps(s *costmodel.Storage) float64 {
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

// diskRefFile is the file the disk reference reads and its size, or an
// error naming it where it cannot hold a reference in s's requests.
func diskRefFile(ds *dataset.Dataset, s *costmodel.Storage) (string, int64, error) {
	path, size, err := readFile(ds)
	if err != nil {
		return "", 0, err
	}
	if req := int64(s.Request); req <= 0 || size < diskRefBytes {
		return "", 0, fmt.Errorf("calibrate: --rescale-disk: the disk reference reads %d MiB of %s in requests of %d bytes; the file holds %d MiB (use a dataset of SF 0.25 or more)",
			diskRefBytes>>20, path, req, size>>20)
	}
	return path, size, nil
}

// diskReference reads diskRefBytes of ds's lineitem file in s's requests
// at its depth with r, and returns the bytes read and the time taken.
func diskReference(ctx context.Context, r *storage.Reader, ds *dataset.Dataset, s *costmodel.Storage) (int64, time.Duration, error) {
	path, size, err := diskRefFile(ds, s)
	if err != nil {
		return 0, 0, err
	}
	req := int64(s.Request)
	depth := s.DeviceQD
	if depth <= 0 {
		depth = max(s.TaskQD, 1)
	}
	n := int(diskRefBytes / req)
	start := time.Now()
	if err := readBatch(ctx, r, path, size, 0, req, depth, n, nil); err != nil {
		return 0, 0, err
	}
	return int64(n) * req, time.Since(start), nil
}
