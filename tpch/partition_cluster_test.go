package tpch_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gostachio/dataset"
	"gostachio/engine"
	"gostachio/engine/cluster"
	"gostachio/tpch"
	"gostachio/tpch/queries"
)

// TestPartitionedCluster runs the 22 queries on an in-process cluster of
// 2 workers x 2 devices over SF0.01 partitioned into 2 and 3 (placed chunks
// dealt to node p mod 2, every worker opening the same folder) and
// compares each result with the single-process engine's on the
// unpartitioned dataset.
func TestPartitionedCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("generates SF0.01 and runs a cluster")
	}
	ctx := context.Background()
	root := t.TempDir()
	base := filepath.Join(root, "base")
	if err := tpch.Gen(ctx, tpch.GenOptions{ScaleFactor: 0.01, Out: base, ChunkRows: 4096, Workers: 2}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	src, err := dataset.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	names := queries.Names()
	want := map[string][]string{}
	for _, q := range names {
		p, err := engine.BuildQuery(src, queries.Catalog(), q)
		if err != nil {
			t.Fatal(err)
		}
		r, err := engine.Query(ctx, src, p, engine.QueryOptions{Devices: 2, Set: "chunk=64KiB", Buffered: true, Mem: 1 << 30})
		if err != nil {
			t.Fatalf("single-process %s: %v", q, err)
		}
		want[q] = rowsOf(r)
	}
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("partitions=%d", n), func(t *testing.T) {
			dir := filepath.Join(root, fmt.Sprintf("p%d", n))
			if err := dataset.Partition(ctx, src, dir, dataset.PartitionOptions{Partitions: n, Workers: 2}); err != nil {
				t.Fatal(err)
			}
			job := cluster.Job{Data: dir, Queries: names, Policy: "overlap", Set: "chunk=64KiB", Devices: 2, Mem: 1 << 30, Buffered: true}
			results, errs := runCluster(t, 2, job)
			for r, err := range errs {
				if err != nil {
					t.Fatalf("worker %d: %v", r, err)
				}
			}
			if len(results) != len(names) {
				t.Fatalf("%d results for %d queries", len(results), len(names))
			}
			for i, r := range results {
				if got := rowsOf(r); r.Query != names[i] || !slices.Equal(got, want[names[i]]) {
					t.Errorf("%s (result %d: %s): cluster result on %d partitions differs from the unpartitioned single-process one:\n%s\nwant\n%s",
						names[i], i, r.Query, n, strings.Join(got, "\n"), strings.Join(want[names[i]], "\n"))
				}
			}
		})
	}
}

// runCluster runs job on `world` in-process workers over loopback TCP (the
// pattern of engine/cluster's tests) and returns rank 0's results and each
// worker's error.
func runCluster(t *testing.T, world int, job cluster.Job) ([]*engine.QueryResult, []error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, world)
	var results []*engine.QueryResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	for r := range world {
		o := cluster.Options{Rank: r, World: world, Addr: ln.Addr().String(), Timeout: 10 * time.Second, JoinTimeout: 20 * time.Second, Catalog: queries.Catalog()}
		if r == 0 {
			o.Listener, o.Job = ln, job
			o.OnResult = func(res *engine.QueryResult) error {
				mu.Lock()
				results = append(results, res)
				mu.Unlock()
				return nil
			}
		}
		wg.Go(func() { errs[r] = cluster.Run(context.Background(), o) })
	}
	wg.Wait()
	return results, errs
}
