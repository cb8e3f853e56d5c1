package dataset

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"

	"gostachio/dataset/internal/synth"
	"gostachio/tpch/schema"
)

func TestParquetRoundTrip(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	data := sampleData()
	writeDataset(t, src, CreateOptions{Meta: Meta{ScaleFactor: 0.5}}, data)
	ds, err := Open(src)
	if err != nil {
		t.Fatal(err)
	}
	pq := filepath.Join(root, "pq")
	var progress bytes.Buffer
	if err := Export(ds, pq, ExportOptions{}, &progress); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "export lineitem: 2801 rows, 3 chunks") {
		t.Fatalf("progress: %s", progress.String())
	}
	if err := Export(ds, pq, ExportOptions{}, nil); err == nil {
		t.Fatal("Export overwrote files without Force")
	}
	// The Parquet types other engines see: DECIMAL(15,2) on INT64, DATE on
	// INT32, STRING on BYTE_ARRAY, all REQUIRED.
	pf, err := file.OpenParquetFile(filepath.Join(pq, "lineitem.parquet"), false)
	if err != nil {
		t.Fatal(err)
	}
	sc := pf.MetaData().Schema
	checks := map[string]struct {
		phys    parquet.Type
		logical string
	}{
		"l_orderkey":      {parquet.Types.Int64, pqschema.NewIntLogicalType(64, true).String()},
		"l_linenumber":    {parquet.Types.Int32, pqschema.NewIntLogicalType(32, true).String()},
		"l_extendedprice": {parquet.Types.Int64, pqschema.NewDecimalLogicalType(15, 2).String()},
		"l_shipdate":      {parquet.Types.Int32, pqschema.DateLogicalType{}.String()},
		"l_comment":       {parquet.Types.ByteArray, pqschema.StringLogicalType{}.String()},
	}
	for name, want := range checks {
		col := sc.Column(sc.ColumnIndexByName(name))
		if col.PhysicalType() != want.phys || col.LogicalType().String() != want.logical || col.MaxDefinitionLevel() != 0 {
			t.Fatalf("%s: %v %v def %d, want %v %s required", name, col.PhysicalType(), col.LogicalType(), col.MaxDefinitionLevel(), want.phys, want.logical)
		}
	}
	if pf.NumRowGroups() != 3 {
		t.Fatalf("%d row groups, want one per chunk", pf.NumRowGroups())
	}
	pf.Close()

	dst := filepath.Join(root, "dst")
	tables := []*schema.Table{&schema.Lineitem, &schema.Nation, &schema.Region, &allTypes}
	if err := ImportParquet(pq, dst, ImportOptions{ChunkRows: 1000, Tables: tables}, nil); err != nil {
		t.Fatal(err)
	}
	back, err := Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	if back.Manifest.ScaleFactor != 0.5 || back.Manifest.Generator.Name != "import-parquet" {
		t.Fatalf("imported manifest: sf %g generator %+v", back.Manifest.ScaleFactor, back.Manifest.Generator)
	}
	for _, td := range data {
		want := concat(td.table, td.chunks)
		if err := synth.Equal(want, readAll(t, back, td.table.Name)); err != nil {
			t.Fatalf("%s after export+import: %v", td.table.Name, err)
		}
	}
	tm, _ := back.Table("lineitem")
	var sizes []int64
	for _, c := range tm.Chunks {
		sizes = append(sizes, c.Rows)
	}
	if len(sizes) != 3 || sizes[0] != 1000 || sizes[1] != 1000 || sizes[2] != 801 {
		t.Fatalf("lineitem re-chunked as %v, want [1000 1000 801]", sizes)
	}
}

func TestImportTblHandChecked(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "ds")
	var progress bytes.Buffer
	if err := ImportTbl("testdata/tbl", dst, ImportOptions{ChunkRows: 2, ScaleFactor: 1}, &progress); err != nil {
		t.Fatal(err)
	}
	ds, err := Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	// Only the tables with files, in TPC-H order.
	if got := strings.Join(ds.Tables(), ","); got != "customer,lineitem,nation,region" {
		t.Fatalf("tables %s", got)
	}
	nat, _ := ds.Table("nation")
	if nat.Rows != 3 || len(nat.Chunks) != 2 || nat.Chunks[0].Rows != 2 || nat.Chunks[1].Rows != 1 {
		t.Fatalf("nation: %d rows in %d chunks", nat.Rows, len(nat.Chunks))
	}
	n := readAll(t, ds, "nation")
	if n.Cols[1].Str(2) != "BRAZIL" || n.Cols[2].I64[2] != 1 || n.Cols[0].I64[1] != 1 ||
		n.Cols[3].Str(0) != " haggle. carefully final deposits detect slyly agai" {
		t.Fatalf("nation values: %q %d", n.Cols[1].Str(2), n.Cols[2].I64[2])
	}
	r := readAll(t, ds, "region")
	if r.Rows != 5 || r.Cols[1].Str(4) != "MIDDLE EAST" || !strings.HasSuffix(r.Cols[2].Str(0), "according to ") {
		t.Fatalf("region values")
	}
	// lineitem line 1 and 2, values worked out by hand: decimals in cents,
	// dates in days since 1970-01-01 (1996-01-01 is day 9496).
	l := readAll(t, ds, "lineitem")
	c := func(name string) *schema.Vector { return &l.Cols[schema.Lineitem.Column(name)] }
	wantI64 := map[string][2]int64{
		"l_orderkey": {1, 1}, "l_partkey": {155190, 67310}, "l_suppkey": {7706, 7311},
		"l_quantity": {1700, 3600}, "l_extendedprice": {2116823, 4598316},
		"l_discount": {4, 9}, "l_tax": {2, 6},
	}
	for name, w := range wantI64 {
		if got := c(name).I64; got[0] != w[0] || got[1] != w[1] {
			t.Fatalf("%s = %v, want %v", name, got, w)
		}
	}
	wantI32 := map[string][2]int32{
		"l_linenumber": {1, 2}, "l_shipdate": {9568, 9598}, "l_commitdate": {9538, 9554}, "l_receiptdate": {9577, 9606},
	}
	for name, w := range wantI32 {
		if got := c(name).I32; got[0] != w[0] || got[1] != w[1] {
			t.Fatalf("%s = %v, want %v", name, got, w)
		}
	}
	if c("l_returnflag").Str(0) != "N" || c("l_shipinstruct").Str(1) != "TAKE BACK RETURN" || c("l_comment").Str(1) != "ly final packages. slyly " {
		t.Fatal("lineitem strings")
	}
	cu := readAll(t, ds, "customer")
	if got := cu.Cols[5].I64; got[0] != 71156 || got[1] != 12165 || got[2] != -91770 {
		t.Fatalf("c_acctbal = %v", got)
	}
	if cu.Cols[7].Str(2) != "" || cu.Cols[3].I64[0] != 15 {
		t.Fatalf("customer 3 comment %q", cu.Cols[7].Str(2))
	}
	li, _ := ds.Table("lineitem")
	if st := li.Chunks[0].Columns[schema.Lineitem.Column("l_shipdate")]; st.Min.Int != 9568 || st.Max.Int != 9598 {
		t.Fatalf("l_shipdate stats %v..%v", st.Min, st.Max)
	}
	if !strings.Contains(progress.String(), "import nation: 3 rows in 2 chunks") {
		t.Fatalf("progress: %s", progress.String())
	}
}

func TestImportTblErrors(t *testing.T) {
	tests := []struct {
		name, content, mention string
	}{
		{"too few fields", "0|AFRICA|\n", "region.tbl:1: want 3"},
		{"no trailing bar", "0|AFRICA|x\n", "region.tbl:1: want 3"},
		{"too many fields", "0|AFRICA|x|y|\n", "region.tbl:1: want 3"},
		{"bad key", "0|AFRICA|x|\nzero|ASIA|y|\n", "region.tbl:2: column r_regionkey"},
		{"empty key", "|AFRICA|x|\n", "region.tbl:1: column r_regionkey"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			os.WriteFile(filepath.Join(src, "region.tbl"), []byte(tc.content), 0o644)
			dst := filepath.Join(t.TempDir(), "ds")
			err := ImportTbl(src, dst, ImportOptions{}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %v, want mention of %q", err, tc.mention)
			}
			if _, err := os.Stat(dst); !os.IsNotExist(err) {
				t.Fatal("a failed import left the dataset folder")
			}
			if ents, _ := os.ReadDir(filepath.Dir(dst)); len(ents) != 0 {
				t.Fatalf("a failed import left %d entries", len(ents))
			}
		})
	}
	// Bad values of other types, via lineitem.
	line := "1|155190|7706|1|17|21168.23|0.04|0.02|N|O|1996-03-13|1996-02-12|1996-03-22|DELIVER IN PERSON|TRUCK|c|\n"
	for name, tc := range map[string][2]string{
		"decimal digits": {"21168.23", "21168.234"},
		"decimal text":   {"21168.23", "2e4"},
		"no such day":    {"1996-02-12", "1995-02-29"},
		"month 13":       {"1996-02-12", "1996-13-01"},
		"int32 overflow": {"|1|17|", "|4294967296|17|"},
	} {
		src := t.TempDir()
		os.WriteFile(filepath.Join(src, "lineitem.tbl"), []byte(line+strings.Replace(line, tc[0], tc[1], 1)), 0o644)
		err := ImportTbl(src, filepath.Join(t.TempDir(), "ds"), ImportOptions{}, nil)
		if err == nil || !strings.Contains(err.Error(), "lineitem.tbl:2: column") {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if err := ImportTbl(t.TempDir(), filepath.Join(t.TempDir(), "ds"), ImportOptions{}, nil); err == nil {
		t.Fatal("import of an empty folder")
	}
}

func TestParseCentsAndDate(t *testing.T) {
	cents := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"17", 1700, true}, {"0.04", 4, true}, {"21168.23", 2116823, true},
		{"-917.75", -91775, true}, {"-0.5", -50, true}, {"+3.1", 310, true}, {".5", 50, true},
		{"1.", 100, true}, {"9.990", 999, true}, {"92233720368547758.07", 9223372036854775807, true},
		{"", 0, false}, {"-", 0, false}, {".", 0, false}, {"1.234", 0, false}, {"1e3", 0, false},
		{"1.2.3", 0, false}, {"92233720368547758.08", 0, false}, {" 1", 0, false},
	}
	for _, c := range cents {
		got, err := ParseCents([]byte(c.in))
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParseCents(%q) = %d, %v; want %d ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
	dates := []struct {
		in   string
		want int32
		ok   bool
	}{
		{"1970-01-01", 0, true}, {"1969-12-31", -1, true}, {"1992-01-01", 8035, true},
		{"1998-12-31", 10591, true}, {"2000-02-29", 11016, true}, {"1900-03-01", -25508, true},
		{"1900-02-29", 0, false}, {"1992-00-10", 0, false}, {"1992-1-10", 0, false}, {"1992/01/10", 0, false},
	}
	for _, c := range dates {
		got, err := ParseDate([]byte(c.in))
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParseDate(%q) = %d, %v; want %d ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestInspect(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	writeDataset(t, dir, CreateOptions{Meta: Meta{ScaleFactor: 0.01, Generator: Generator{Name: "synth", Version: "2", Seed: 7}},
		Stripes: []string{t.TempDir()}}, sampleData())
	var js bytes.Buffer
	if err := Inspect(dir, true, &js); err != nil {
		t.Fatal(err)
	}
	var r InspectReport
	if err := json.Unmarshal(js.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.FormatVersion != 1 || r.ScaleFactor != 0.01 || len(r.Stripes) != 2 || len(r.Tables) != 4 {
		t.Fatalf("report %+v", r)
	}
	li := r.Tables[0]
	if li.Name != "lineitem" || li.Rows != 2801 || li.Chunks != 3 || li.Files != 2 {
		t.Fatalf("lineitem %+v", li)
	}
	// l_orderkey: 2801 int64 values = 22408 bytes; each of 3 chunks pads to
	// whole 4096-byte pages: 700*8 -> 8192, 1*8 -> 4096, 2100*8 -> 20480.
	if c := li.Columns[0]; c.Bytes != 2801*8 || c.PaddedBytes != 8192+4096+20480 {
		t.Fatalf("l_orderkey bytes %d padded %d", c.Bytes, c.PaddedBytes)
	}
	var files int64
	for _, p := range []string{filepath.Join(dir, "lineitem.arrow"), filepath.Join(r.Stripes[1], "lineitem.arrow")} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		files += st.Size()
	}
	if li.FileBytes != files {
		t.Fatalf("file bytes %d, stat says %d", li.FileBytes, files)
	}
	if rg := r.Tables[2]; rg.Name != "region" || rg.Rows != 0 || rg.Columns[0].Min != nil {
		t.Fatalf("region %+v", rg)
	}
	var txt bytes.Buffer
	if err := Inspect(dir, false, &txt); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"format version  1", "scale factor    0.01", "lineitem  2801", "stripe 1"} {
		if !strings.Contains(txt.String(), want) {
			t.Fatalf("text output lacks %q:\n%s", want, txt.String())
		}
	}
	if err := Inspect(filepath.Join(dir, "nope"), false, &txt); err == nil {
		t.Fatal("Inspect of a missing dataset")
	}
}
