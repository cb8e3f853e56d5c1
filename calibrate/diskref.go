package calibrate

import (
	"context"
	"fmt"
	"time"

	"gostachio/costmodel"
	"gostachio/dataset"
	"gostachio/engine/storage"
	"gostachio/internal/diskref"
)

// The disk reference (package diskref) beside validate's and
// validate-reference's runs, its errors named as --rescale-disk's.

// diskRefFile checks that ds holds a disk reference in s's requests.
func diskRefFile(ds *dataset.Dataset, s *costmodel.Storage) (string, int64, error) {
	path, size, err := diskref.File(ds, s, diskref.Bytes)
	if err != nil {
		return "", 0, fmt.Errorf("calibrate: --rescale-disk: %w", err)
	}
	return path, size, nil
}

// diskReference times one disk reference with r (diskref.Time).
func diskReference(ctx context.Context, r *storage.Reader, ds *dataset.Dataset, s *costmodel.Storage) (int64, time.Duration, error) {
	b, d, err := diskref.Time(ctx, r, ds, s, diskref.Bytes)
	if err != nil {
		return 0, 0, fmt.Errorf("calibrate: --rescale-disk: %w", err)
	}
	return b, d, nil
}

// DiskCheck is the disk reference beside validate's engine runs.
type DiskCheck struct {
	// ModelBps is the profile's throughput for the reference's stream
	// (diskref.ModelBps); MeasuredBps the reference's, over N readings.
	ModelBps, MeasuredBps float64
	N                     int
	// Ratio is MeasuredBps / ModelBps: above 1 the disk ran faster beside
	// the engine than the profile says.
	Ratio float64
	// Rescaled: the simulator's disk bandwidth was multiplied by Ratio
	// (ValidateOptions.RescaleDisk).
	Rescaled bool
}
