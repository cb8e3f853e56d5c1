// Package dataset stores tables as gostachio datasets: a folder with
// manifest.json and one Arrow IPC file per table and stripe, every column
// buffer of every chunk at a 4096-byte-aligned file offset and zero-padded
// to a multiple of 4096 (see package arrowipc), so that one column of one
// chunk can be read with O_DIRECT into an aligned buffer and used as is.
//
// Layout of a dataset folder DIR (stripe 0) and of each extra stripe folder
// <stripe>/<base(DIR)>.stripe<k>:
//
//	DIR/manifest.json      written last (see Writer.Commit)
//	DIR/<table>.arrow      chunks 0, S, 2S, ... of <table> (S stripes)
//	<stripe k>/<table>.arrow  chunks k, k+S, ...
//
// Physical types follow tpch/schema: identifiers int64, integers int32,
// decimals int64 scaled by 10^scale (Arrow Int64 + field metadata
// gostachio.logical_type=decimal(15,2); the manifest column records the
// precision and scale: 15, 2, cents, for TPC-H), dates Arrow Date32 (days
// since 1970-01-01), text Arrow Utf8. No nulls. Each manifest column also
// records its estimated distinct values ("distinct", a HyperLogLog sketch
// of every row written; absent in manifests written before).
//
// A manifest (abridged; offsets are absolute file offsets, lengths exclude
// padding, buffers in Arrow order: validity (always empty), values or
// offsets + data):
//
//	{
//	 "format_version": 1, "name": "sf1", "scale_factor": 1,
//	 "generator": {"name": "gostachio-dbgen", "version": "1", "seed": 0},
//	 "alignment": 4096,
//	 "stripes": [".", "/nvme1/sf1.stripe1"],
//	 "tables": [{
//	  "name": "nation",
//	  "columns": [{"name": "n_nationkey", "type": "int64", "distinct": 25}, {"name": "n_name", "type": "utf8", "distinct": 25}, ...],
//	  "rows": 25,
//	  "files": [{"path": "nation.arrow", "stripe": 0, "size": 29018}],
//	  "chunks": [{
//	   "file": 0, "batch": 0, "rows": 25,
//	   "offset": 848, "meta_length": 3248, "body_length": 24576,
//	   "columns": [
//	    {"buffers": [{"off": 4096, "len": 0}, {"off": 4096, "len": 200}], "min": 0, "max": 24},
//	    {"buffers": [{"off": 8192, "len": 0}, {"off": 8192, "len": 104}, {"off": 12288, "len": 171}],
//	     "min": "ALGERIA", "max": "VIETNAM"}, ...]}]}]
//	}
//
// Writing: Create → Writer.Table → TableWriter.Append (one chunk per call)
// → Writer.Commit (or Abort). Reading: Open (validated, cached per process)
// → Dataset.Table / Chunk / ReadChunk / Arrow. Interchange: Export
// (Parquet), ImportParquet, ImportTbl; Inspect prints a summary.
package dataset
