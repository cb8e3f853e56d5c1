package engine

import (
	"context"
	"os"
	"testing"

	"gostachio/dataset"
	"gostachio/tpch/queries"
)

// BenchmarkQuery runs TPC-H queries on the dataset in
// $GOSTACHIO_BENCH_DATA (e.g. out/data/sf1 from `make bench-tpch`);
// $GOSTACHIO_BENCH_QUERY picks them (default q1,q6);
// $GOSTACHIO_BENCH_BUFFERED=1 reads through the page cache (warm: isolates
// the CPU side).
func BenchmarkQuery(b *testing.B) {
	dir := os.Getenv("GOSTACHIO_BENCH_DATA")
	if dir == "" {
		b.Skip("set GOSTACHIO_BENCH_DATA to a dataset directory")
	}
	ds, err := dataset.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	spec := os.Getenv("GOSTACHIO_BENCH_QUERY")
	if spec == "" {
		spec = "q1,q6"
	}
	names, err := ParseQueries(spec, queries.Names())
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range names {
		b.Run(q, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := runQuery(context.Background(), ds, q, QueryOptions{Buffered: os.Getenv("GOSTACHIO_BENCH_BUFFERED") != ""}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
