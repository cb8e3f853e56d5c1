package tpch

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"gostachio/dataset"
)

// BenchmarkGenSF1 generates the whole SF1 dataset to disk on every core and
// reports rows/s and MB/s written (make bench-gen).
func BenchmarkGenSF1(b *testing.B) {
	var rows, bytes int64
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(b.TempDir(), "sf1")
		if err := Gen(context.Background(), GenOptions{ScaleFactor: 1, Out: dir}, io.Discard, io.Discard); err != nil {
			b.Fatal(err)
		}
		ds, err := dataset.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		rep := reportOf(ds)
		rows += rep.Rows
		bytes += rep.Bytes
	}
	b.SetBytes(bytes / int64(b.N))
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(rows)/s, "rows/s")
	b.ReportMetric(float64(bytes)/1e6/s, "MB/s")
}
