package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"gostachio/dataset"
)

// VerifyOnce checks every buffer of ds against the checksums its manifest
// recorded (dataset.Dataset.Verify) and writes one line about it to log.
// Commands that time queries call it before their first run and then run
// with QueryOptions.NoVerify: the per-read check costs the CPU engine
// 7–14% of a warm query at SF1 (q1, q3, q6 on the dev VM), which would
// otherwise be in every timing and in none of the calibration's
// micro-benchmarks. A dataset without checksums is not an error: log
// says it could not be checked.
func VerifyOnce(ctx context.Context, ds *dataset.Dataset, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	start := time.Now()
	r, err := ds.Verify(ctx, nil)
	if errors.Is(err, dataset.ErrNoChecksums) {
		fmt.Fprintf(log, "%s: not verified: %v\n", ds.Dir, dataset.ErrNoChecksums)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "%s: verified %d buffers (%.1f MB) against their checksums in %.1f s; timed runs skip the per-read check\n",
		ds.Dir, r.Buffers, float64(r.Bytes)/1e6, time.Since(start).Seconds())
	return nil
}
