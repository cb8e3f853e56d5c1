package dataset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gostachio/dataset/internal/synth"
	"gostachio/kernels/cpu"
	"gostachio/tpch/schema"
)

// TestPartitionOfIsEngineHash: the partition hash is the engine's row hash
// of a one-column integer key, for int64 and int32 columns alike.
func TestPartitionOfIsEngineHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 1000
	i64 := make([]int64, n)
	i32 := make([]int32, n)
	for i := range i64 {
		i64[i] = int64(rng.Uint64())
		if i < 10 {
			i64[i] = int64(i - 5) // small and negative keys too
		}
		i32[i] = int32(i64[i])
	}
	b := &cpu.Batch{Names: []string{"a", "b"}, Rows: n,
		Cols: []cpu.Vec{{Type: cpu.TInt64, I64: i64}, {Type: cpu.TInt32, I32: i32}}}
	h64 := cpu.HashColumns(b, []int{0}, nil)
	h32 := cpu.HashColumns(b, []int{1}, nil)
	for i := range n {
		if got := KeyHash(i64[i]); got != h64[i] {
			t.Fatalf("KeyHash(%d) = %#x, engine hash %#x", i64[i], got, h64[i])
		}
		if got := KeyHash(int64(i32[i])); got != h32[i] {
			t.Fatalf("KeyHash(int32 %d) = %#x, engine hash %#x", i32[i], got, h32[i])
		}
		for _, parts := range []int{1, 2, 3, 7} {
			if got, want := PartitionOf(i64[i], parts), int(h64[i]%uint64(parts)); got != want {
				t.Fatalf("PartitionOf(%d, %d) = %d, want %d", i64[i], parts, got, want)
			}
		}
	}
}

// rowStrings renders every row of b as one string (a multiset of rows,
// sorted, compares tables regardless of row order).
func rowStrings(b *schema.Batch) []string {
	out := make([]string, b.Rows)
	for i := range b.Rows {
		var sb strings.Builder
		for c, col := range b.Table.Columns {
			v := &b.Cols[c]
			switch col.Type {
			case schema.Int64, schema.Decimal, schema.Float64:
				fmt.Fprintf(&sb, "%d|", v.I64[i])
			case schema.Int32, schema.Date:
				fmt.Fprintf(&sb, "%d|", v.I32[i])
			default:
				fmt.Fprintf(&sb, "%q|", v.Str(i))
			}
		}
		out[i] = sb.String()
	}
	slices.Sort(out)
	return out
}

// coChunkedSource returns orders and lineitem chunks as gen writes them:
// chunk i of orders holds keys [100i, 100i+per) ascending, chunk i of
// lineitem 1..3 lines of each of them.
func coChunkedSource(chunks, per int) (orders, lines []*schema.Batch) {
	for i := range chunks {
		o := synth.Random(&schema.Orders, per, uint64(100+i))
		var keys []int64
		for k := range per {
			key := int64(100*i + k)
			o.Cols[0].I64[k] = key
			for range 1 + (k*7+i)%3 {
				keys = append(keys, key)
			}
		}
		l := synth.Random(&schema.Lineitem, len(keys), uint64(200+i))
		copy(l.Cols[0].I64, keys)
		orders, lines = append(orders, o), append(lines, l)
	}
	return orders, lines
}

// partitionSource writes a source dataset: co-chunked orders and lineitem,
// nation, alltypes (partitioned on its int32 column in some tests) and an
// empty region.
func partitionSource(t *testing.T, dir string) []tableData {
	orders, lines := coChunkedSource(5, 40)
	data := []tableData{
		{&schema.Orders, orders},
		{&schema.Lineitem, lines},
		{&schema.Nation, []*schema.Batch{synth.Random(&schema.Nation, 25, 4)}},
		{&schema.Region, nil},
		{&allTypes, []*schema.Batch{synth.Random(&allTypes, 70, 5), synth.Random(&allTypes, 33, 6)}},
	}
	writeDataset(t, dir, CreateOptions{Meta: Meta{Name: "src", ScaleFactor: 0.5, Generator: Generator{Name: "test", Params: map[string]string{"k": "v"}}}}, data)
	return data
}

var testPlacement = map[string]TablePlacement{
	"orders":   {Key: "o_orderkey"},
	"lineitem": {Key: "l_orderkey", With: "orders"},
	"alltypes": {Key: "n"},
}

func TestPartitionConservesRowsAndPlacesThem(t *testing.T) {
	root := t.TempDir()
	srcDir := filepath.Join(root, "src")
	partitionSource(t, srcDir)
	src, err := Open(srcDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			out := filepath.Join(root, fmt.Sprintf("p%d", n))
			if err := Partition(context.Background(), src, out, PartitionOptions{Partitions: n, Placement: testPlacement, Workers: 2}); err != nil {
				t.Fatal(err)
			}
			ds, err := Open(out)
			if err != nil {
				t.Fatal(err)
			}
			m := ds.Manifest
			if m.Partitions != n || m.Name != "src" || m.ScaleFactor != 0.5 || m.Generator.Params["k"] != "v" {
				t.Errorf("manifest partitions %d name %q sf %v generator %+v; want %d, src, 0.5, the source's", m.Partitions, m.Name, m.ScaleFactor, m.Generator, n)
			}
			if got, want := ds.Tables(), src.Tables(); !slices.Equal(got, want) {
				t.Errorf("tables %v, want the source's order %v", got, want)
			}
			for _, name := range src.Tables() {
				checkPartitionedTable(t, src, ds, name, n, testPlacement[name].Key)
			}
			checkCoChunked(t, ds)
		})
	}
}

// TestPartitionStripes: partition p's files go to stripe p mod S, and the
// result opens and holds the source's rows.
func TestPartitionStripes(t *testing.T) {
	root := t.TempDir()
	srcDir := filepath.Join(root, "src")
	partitionSource(t, srcDir)
	src, err := Open(srcDir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "out")
	if err := Partition(context.Background(), src, out, PartitionOptions{Partitions: 3, Placement: testPlacement, Stripes: []string{filepath.Join(root, "s1")}}); err != nil {
		t.Fatal(err)
	}
	ds, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	tm, _ := ds.Table("lineitem")
	for _, f := range tm.Files {
		var p int
		if _, err := fmt.Sscanf(f.Path, "lineitem.p%d.arrow", &p); err != nil || f.Stripe != p%2 {
			t.Errorf("file %s on stripe %d, want partition mod 2", f.Path, f.Stripe)
		}
	}
	for _, name := range src.Tables() {
		checkPartitionedTable(t, src, ds, name, 3, testPlacement[name].Key)
	}
}

// checkPartitionedTable: same rows as the source (multiset), every row of
// a partitioned table on its key's partition, chunks listed by partition,
// and a replicated table unchanged chunk for chunk.
func checkPartitionedTable(t *testing.T, src, ds *Dataset, name string, n int, key string) {
	t.Helper()
	st, _ := src.Table(name)
	tm, err := ds.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	if tm.Rows != st.Rows {
		t.Errorf("%s: %d rows, source %d", name, tm.Rows, st.Rows)
	}
	got, want := rowStrings(readAll(t, ds, name)), rowStrings(readAll(t, src, name))
	if !slices.Equal(got, want) {
		t.Errorf("%s: rows differ from the source (%d vs %d rows)", name, len(got), len(want))
	}
	if key == "" {
		if tm.Partitions != 0 || tm.PartitionKey != "" || len(tm.Chunks) != len(st.Chunks) {
			t.Errorf("%s: replicated table has partitions %d key %q, %d chunks (source %d)", name, tm.Partitions, tm.PartitionKey, len(tm.Chunks), len(st.Chunks))
		}
		for i := range tm.Chunks {
			if tm.Chunks[i].Partition != NoPartition || tm.Chunks[i].Rows != st.Chunks[i].Rows {
				t.Errorf("%s chunk %d: partition %d rows %d, want -1, %d", name, i, tm.Chunks[i].Partition, tm.Chunks[i].Rows, st.Chunks[i].Rows)
			}
		}
		return
	}
	if tm.Partitions != n || tm.PartitionKey != key {
		t.Errorf("%s: partitions %d key %q, want %d %q", name, tm.Partitions, tm.PartitionKey, n, key)
	}
	if len(tm.Files) != n {
		t.Errorf("%s: %d files, want one per partition", name, len(tm.Files))
	}
	kc := tm.Schema.Column(key)
	prev := 0
	for i := range tm.Chunks {
		p := tm.Chunks[i].Partition
		if p < prev {
			t.Errorf("%s: chunk %d on partition %d after partition %d: not listed by partition", name, i, p, prev)
		}
		prev = p
		if want := fmt.Sprintf("%s.p%d.arrow", name, p); tm.Files[tm.Chunks[i].File].Path != want {
			t.Errorf("%s chunk %d of partition %d is in %s, want %s", name, i, p, tm.Files[tm.Chunks[i].File].Path, want)
		}
		b, err := ds.ReadChunk(name, i, nil)
		if err != nil {
			t.Fatal(err)
		}
		for r := range b.Rows {
			var k int64
			if v := &b.Cols[kc]; v.I64 != nil {
				k = v.I64[r]
			} else {
				k = int64(v.I32[r])
			}
			if q := PartitionOf(k, n); q != p {
				t.Fatalf("%s chunk %d (partition %d) holds key %d of partition %d", name, i, p, k, q)
			}
		}
	}
}

// checkCoChunked: chunk j of lineitem holds only lines of orders in chunk j
// of orders, and both are on the same partition.
func checkCoChunked(t *testing.T, ds *Dataset) {
	t.Helper()
	ot, _ := ds.Table("orders")
	lt, _ := ds.Table("lineitem")
	if len(ot.Chunks) != len(lt.Chunks) {
		t.Fatalf("orders has %d chunks, lineitem %d: not co-chunked", len(ot.Chunks), len(lt.Chunks))
	}
	for j := range ot.Chunks {
		if ot.Chunks[j].Partition != lt.Chunks[j].Partition {
			t.Errorf("chunk %d: orders on partition %d, lineitem on %d", j, ot.Chunks[j].Partition, lt.Chunks[j].Partition)
		}
		o, _ := ds.ReadChunk("orders", j, []string{"o_orderkey"})
		l, _ := ds.ReadChunk("lineitem", j, []string{"l_orderkey"})
		keys := map[int64]bool{}
		for _, k := range o.Cols[0].I64 {
			keys[k] = true
		}
		for _, k := range l.Cols[0].I64 {
			if !keys[k] {
				t.Fatalf("lineitem chunk %d holds order %d, which is not in orders chunk %d", j, k, j)
			}
		}
	}
}

// TestSplitterChunkSizes: without a follower, chunks hold at most the
// target rows (batches here are smaller than the target) and every
// partition's rows keep their order.
func TestSplitterChunkSizes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	w, err := Create(dir, CreateOptions{Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := w.PartitionedTable(&allTypes, "k")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := NewSplitter(tw, 10)
	if err != nil {
		t.Fatal(err)
	}
	var all []*schema.Batch
	for i := range 9 {
		b := synth.Random(&allTypes, 7, uint64(i))
		all = append(all, b)
		if err := sp.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := sp.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	tm, _ := ds.Table("alltypes")
	src := concat(&allTypes, all)
	for p := range 2 {
		var want []int64 // partition p's keys in source order
		for _, k := range src.Cols[0].I64 {
			if PartitionOf(k, 2) == p {
				want = append(want, k)
			}
		}
		var got []int64
		for i := range tm.Chunks {
			if tm.Chunks[i].Partition != p {
				continue
			}
			if tm.Chunks[i].Rows > 10 {
				t.Errorf("chunk %d has %d rows, more than the 10 asked", i, tm.Chunks[i].Rows)
			}
			b, _ := ds.ReadChunk("alltypes", i, []string{"k"})
			got = append(got, b.Cols[0].I64...)
		}
		if !slices.Equal(got, want) {
			t.Errorf("partition %d keys %v, want %v", p, got, want)
		}
	}
}

func TestPartitionErrors(t *testing.T) {
	root := t.TempDir()
	srcDir := filepath.Join(root, "src")
	partitionSource(t, srcDir)
	src, err := Open(srcDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out := filepath.Join(root, "out")
	for _, n := range []int{0, -1} {
		if err := Partition(ctx, src, out, PartitionOptions{Partitions: n}); err == nil || !strings.Contains(err.Error(), "at least 1") {
			t.Errorf("%d partitions: err %v, want 'at least 1'", n, err)
		}
	}
	if err := Partition(ctx, src, srcDir, PartitionOptions{Partitions: 2, Force: true}); err == nil || !strings.Contains(err.Error(), "source") {
		t.Errorf("out = src: err %v, want a refusal", err)
	}
	bad := map[string]TablePlacement{"orders": {Key: "o_comment"}}
	if err := Partition(ctx, src, out, PartitionOptions{Partitions: 2, Placement: bad}); err == nil || !strings.Contains(err.Error(), "integer-coded") {
		t.Errorf("string key: err %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed partition left %s (%v)", out, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Partition(ctx, src, out, PartitionOptions{Partitions: 2, Placement: testPlacement}); !errors.Is(err, ErrExists) {
		t.Errorf("existing out: err %v, want ErrExists", err)
	}
	if err := Partition(ctx, src, out, PartitionOptions{Partitions: 2, Placement: testPlacement, Force: true}); err != nil {
		t.Errorf("existing out with force: %v", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	out2 := filepath.Join(root, "out2")
	if err := Partition(canceled, src, out2, PartitionOptions{Partitions: 2, Placement: testPlacement}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: err %v, want context.Canceled", err)
	}
	if _, err := os.Stat(out2); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a canceled partition left %s", out2)
	}
	// Writer misuse.
	w, err := Create(filepath.Join(root, "w"), CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, err := w.PartitionedTable(&schema.Orders, "o_orderkey"); err == nil {
		t.Error("PartitionedTable in an unpartitioned dataset succeeded")
	}
	tw, _ := w.Table(&schema.Nation)
	if err := tw.AppendPartition(0, synth.Random(&schema.Nation, 1, 1)); err == nil {
		t.Error("AppendPartition on an unpartitioned table succeeded")
	}
	if _, err := Create(filepath.Join(root, "neg"), CreateOptions{Partitions: -2}); err == nil {
		t.Error("Create with -2 partitions succeeded")
	}
}

// TestManifestPartitionRoundTrip: the partition fields survive JSON (with
// partition 0 written, -1 omitted), and a manifest without them (as
// written before partitioning existed) reads as unpartitioned.
func TestManifestPartitionRoundTrip(t *testing.T) {
	m := Manifest{FormatVersion: 1, Name: "x", Partitions: 3, Stripes: []string{"."}, Tables: []TableMeta{
		{Name: "a", Partitions: 3, PartitionKey: "k", Chunks: []ChunkMeta{{Rows: 1, Partition: 0}, {Rows: 2, Partition: 2}}},
		{Name: "b", Chunks: []ChunkMeta{{Rows: 3, Partition: NoPartition}}},
	}}
	data, err := json.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(data), `"partition":`); got != 2 {
		t.Errorf("%d chunk partitions written, want 2 (the unplaced chunk's omitted): %s", got, data)
	}
	var back Manifest
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, back) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, m)
	}
	var old ChunkMeta
	if err := json.Unmarshal([]byte(`{"file":0,"batch":0,"rows":5,"offset":8,"meta_length":16,"body_length":0,"columns":[]}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.Partition != NoPartition || old.Rows != 5 {
		t.Errorf("old chunk reads as partition %d rows %d, want -1, 5", old.Partition, old.Rows)
	}
}

// TestUnpartitionedManifestUnchanged: an unpartitioned dataset's manifest
// carries no partition fields (it is what older builds wrote and read),
// and every chunk opens as unplaced.
func TestUnpartitionedManifestUnchanged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	writeDataset(t, dir, CreateOptions{}, sampleData())
	data, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "partition") {
		t.Errorf("unpartitioned manifest mentions partitions")
	}
	ds, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range ds.Manifest.Tables {
		for i, c := range tm.Chunks {
			if c.Partition != NoPartition {
				t.Errorf("%s chunk %d on partition %d", tm.Name, i, c.Partition)
			}
		}
	}
}

// TestOpenRejectsBadPlacement: placement fields that disagree are corrupt.
func TestOpenRejectsBadPlacement(t *testing.T) {
	root := t.TempDir()
	srcDir := filepath.Join(root, "src")
	partitionSource(t, srcDir)
	src, err := Open(srcDir)
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(root, "good")
	if err := Partition(context.Background(), src, good, PartitionOptions{Partitions: 2, Placement: testPlacement}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(good, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(m *Manifest)
		want string
	}{
		{"chunk partition out of range", func(m *Manifest) { m.Tables[0].Chunks[0].Partition = 2 }, "partition 2"},
		{"placed chunk of replicated table", func(m *Manifest) { m.Tables[2].Chunks[0].Partition = 0 }, "unpartitioned table"},
		{"unplaced chunk of partitioned table", func(m *Manifest) { m.Tables[0].Chunks[0].Partition = NoPartition }, "partition -1"},
		{"table count differs", func(m *Manifest) { m.Tables[0].Partitions = 3 }, "3 partitions"},
		{"no key", func(m *Manifest) { m.Tables[0].PartitionKey = "" }, "partition key"},
		{"string key", func(m *Manifest) { m.Tables[0].PartitionKey = "o_comment" }, "integer-coded"},
		{"key without partitions", func(m *Manifest) { m.Tables[2].PartitionKey = "n_nationkey" }, "without partitions"},
		{"negative dataset partitions", func(m *Manifest) { m.Partitions = -1 }, "negative"},
	} {
		var m Manifest
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		tc.edit(&m)
		dir := filepath.Join(root, strings.ReplaceAll(tc.name, " ", "_"))
		if err := os.CopyFS(dir, os.DirFS(good)); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(&m)
		if err := os.WriteFile(filepath.Join(dir, ManifestName), out, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want ErrCorrupt mentioning %q", tc.name, err, tc.want)
		}
	}
}
