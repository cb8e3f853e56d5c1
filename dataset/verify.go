package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"gostachio/dataset/arrowipc"
	"gostachio/tpch/schema"
)

// ErrChecksum: a buffer's bytes do not match the checksum the manifest
// recorded when the dataset was written (the file changed since, or the
// storage returned other bytes). It wraps ErrCorrupt.
var ErrChecksum = fmt.Errorf("%w: checksum mismatch", ErrCorrupt)

// ErrNoChecksums: the dataset was written before datasets recorded
// checksums (Manifest.Checksums is empty), so nothing can be verified.
var ErrNoChecksums = errors.New("the manifest records no checksums (written before format checksums; regenerate the dataset to get them)")

// Checksummed reports whether every buffer of ds records a checksum.
func (ds *Dataset) Checksummed() bool { return ds.Manifest.Checksums == ChecksumCRC32C }

// VerifyBuffer checks data, the Len bytes of buffer ref as read, against
// the checksum the manifest recorded. It returns nil when the dataset
// records no checksums. The error wraps ErrChecksum and names the offset;
// callers add the file, table, chunk and column.
func (ds *Dataset) VerifyBuffer(ref BufferRef, data []byte) error {
	if !ds.Checksummed() {
		return nil
	}
	if int64(len(data)) != ref.Len {
		return fmt.Errorf("buffer at offset %d: %d bytes to verify, want %d", ref.Off, len(data), ref.Len)
	}
	if got := arrowipc.CRC32C(data); got != ref.CRC {
		return fmt.Errorf("%w: buffer of %d bytes at offset %d has CRC-32C %08x, the manifest recorded %08x",
			ErrChecksum, ref.Len, ref.Off, got, ref.CRC)
	}
	return nil
}

// VerifyReport is what Verify checked.
type VerifyReport struct {
	Dir       string `json:"dir"`
	Checksums string `json:"checksums"`
	// Digest is the manifest digest's state: "ok", "absent" (a manifest
	// written before digests), or what differs.
	Digest  string `json:"digest"`
	Tables  int    `json:"tables"`
	Chunks  int    `json:"chunks"`
	Buffers int    `json:"buffers"`
	Bytes   int64  `json:"bytes"`
	// Bad lists the buffers that did not match (at most maxBadBuffers).
	Bad []BadBuffer `json:"bad"`
	// BadCount counts every buffer that did not match.
	BadCount int `json:"bad_count"`
	// Mismatches lists manifest fields that disagree with the data they
	// describe (at most maxBadBuffers); MismatchCount counts them all.
	Mismatches    []Mismatch `json:"mismatches"`
	MismatchCount int        `json:"mismatch_count"`
}

// Failed reports whether the verification found anything wrong.
func (r *VerifyReport) Failed() bool {
	return r.BadCount > 0 || r.MismatchCount > 0 || (r.Digest != "ok" && r.Digest != "absent")
}

// BadBuffer is one buffer whose bytes do not match its checksum.
type BadBuffer struct {
	File   string `json:"file"`
	Table  string `json:"table"`
	Chunk  int    `json:"chunk"`
	Column string `json:"column"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	Want   uint32 `json:"want_crc"`
	Got    uint32 `json:"got_crc"`
}

func (b BadBuffer) String() string {
	return fmt.Sprintf("%s: table %s chunk %d column %s: %d bytes at offset %d: CRC-32C %08x, recorded %08x",
		b.File, b.Table, b.Chunk, b.Column, b.Length, b.Offset, b.Got, b.Want)
}

// Mismatch is one field of the manifest that disagrees with the data: a
// chunk's statistic recomputed from its values, or the form of its bytes.
type Mismatch struct {
	File     string `json:"file"`
	Table    string `json:"table"`
	Chunk    int    `json:"chunk"`
	Column   string `json:"column"`
	Field    string `json:"field"`
	Manifest string `json:"manifest"`
	Data     string `json:"data"`
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s: table %s chunk %d column %s: %s is %s in the manifest, %s in the data",
		m.File, m.Table, m.Chunk, m.Column, m.Field, m.Manifest, m.Data)
}

// maxBadBuffers bounds VerifyReport.Bad and Mismatches: a file overwritten
// wholesale would list every buffer.
const maxBadBuffers = 20

// Verify reads every buffer of every chunk of ds, checks it against its
// recorded checksum, and recomputes every chunk's min and max per column
// from its values to compare with the manifest's (the row counts, buffer
// offsets and lengths were checked against the record batches' metadata
// when ds was opened). progress, if not nil, is called after each chunk
// with the bytes verified so far and the total. It returns the report and
// an error wrapping ErrChecksum when any buffer does not match, ErrCorrupt
// when a statistic or the manifest's digest does not (the report lists
// them all), ErrNoChecksums when the manifest records no checksums and
// nothing else was found wrong, or the first read error (a file shorter
// than its buffers: ErrCorrupt).
func (ds *Dataset) Verify(ctx context.Context, progress func(done, total int64)) (*VerifyReport, error) {
	r := &VerifyReport{Dir: ds.Dir, Checksums: ds.Manifest.Checksums, Digest: ds.digestState()}
	var total int64
	for ti := range ds.Manifest.Tables {
		for _, ch := range ds.Manifest.Tables[ti].Chunks {
			for _, cc := range ch.Columns {
				for _, b := range cc.Buffers {
					total += b.Len
				}
			}
		}
	}
	for ti := range ds.Manifest.Tables {
		if err := ds.verifyTable(ctx, &ds.Manifest.Tables[ti], r, total, progress); err != nil {
			return r, err
		}
		r.Tables++
	}
	switch {
	case r.BadCount > 0:
		return r, fmt.Errorf("dataset: %s: %w: %d of %d buffers differ from their recorded checksums, first: %s",
			ds.Dir, ErrChecksum, r.BadCount, r.Buffers, r.Bad[0])
	case r.MismatchCount > 0:
		return r, fmt.Errorf("dataset: %s: %w: %d manifest fields disagree with the data, first: %s",
			ds.Dir, ErrCorrupt, r.MismatchCount, r.Mismatches[0])
	case r.Failed():
		return r, fmt.Errorf("dataset: %s: %w: %s", ds.Dir, ErrDigest, r.Digest)
	case !ds.Checksummed():
		return r, fmt.Errorf("dataset: %s: %w", ds.Dir, ErrNoChecksums)
	}
	return r, nil
}

// digestState is VerifyReport.Digest for ds.
func (ds *Dataset) digestState() string {
	m := ds.Manifest
	if m.Digest == "" {
		return "absent"
	}
	got, err := m.ComputeDigest()
	if err != nil {
		return err.Error()
	}
	if got != m.Digest {
		return fmt.Sprintf("the manifest records %s, its content hashes to %s", m.Digest, got)
	}
	return "ok"
}

// verifyTable verifies every chunk of tm into r.
func (ds *Dataset) verifyTable(ctx context.Context, tm *TableMeta, r *VerifyReport, total int64, progress func(done, total int64)) error {
	files := make([]*os.File, len(tm.Files))
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}()
	for ci := range tm.Chunks {
		if err := ctx.Err(); err != nil {
			return err
		}
		ch := &tm.Chunks[ci]
		path := ds.filePath(tm, ch.File)
		if files[ch.File] == nil {
			f, err := os.Open(path)
			if err != nil {
				return fmt.Errorf("dataset: verify %s: %w", tm.Name, err)
			}
			files[ch.File] = f
		}
		for k := range ch.Columns {
			if err := ds.verifyColumn(files[ch.File], path, tm, ci, k, r); err != nil {
				return err
			}
		}
		r.Chunks++
		if progress != nil {
			progress(r.Bytes, total)
		}
	}
	return nil
}

// verifyColumn reads column k of chunk ci of tm from f, checks each buffer
// against its checksum and, when they all match (or none is recorded),
// recomputes the column's statistics and compares them with the
// manifest's.
func (ds *Dataset) verifyColumn(f io.ReaderAt, path string, tm *TableMeta, ci, k int, r *VerifyReport) error {
	ch := &tm.Chunks[ci]
	col := tm.Schema.Columns[k]
	cc := &ch.Columns[k]
	rows := int(ch.Rows)
	var v schema.Vector
	data := make([][]byte, len(cc.Buffers))
	switch col.Type {
	case schema.Int64, schema.Decimal, schema.Float64:
		v.I64 = make([]int64, rows)
		data[1] = asBytes(v.I64)
	case schema.Int32, schema.Date:
		v.I32 = make([]int32, rows)
		data[1] = asBytes(v.I32)
	case schema.String:
		v.Offsets = make([]int32, rows+1)
		v.Bytes = make([]byte, cc.Buffers[2].Len)
		data[1], data[2] = asBytes(v.Offsets), v.Bytes
	}
	intact := true
	for bi, b := range cc.Buffers {
		if data[bi] == nil {
			data[bi] = make([]byte, b.Len)
		}
		if err := readInto(f, b, data[bi]); err != nil {
			return corrupt(path, "table %s chunk %d column %s: %v", tm.Name, ci, col.Name, err)
		}
		r.Buffers++
		r.Bytes += b.Len
		if !ds.Checksummed() {
			continue
		}
		if got := arrowipc.CRC32C(data[bi]); got != b.CRC {
			intact = false
			r.BadCount++
			if len(r.Bad) < maxBadBuffers {
				r.Bad = append(r.Bad, BadBuffer{File: path, Table: tm.Name, Chunk: ci,
					Column: col.Name, Offset: b.Off, Length: b.Len, Want: b.CRC, Got: got})
			}
		}
	}
	if !intact {
		return nil
	}
	mismatch := func(field, manifest, data string) {
		r.MismatchCount++
		if len(r.Mismatches) < maxBadBuffers {
			r.Mismatches = append(r.Mismatches, Mismatch{File: path, Table: tm.Name, Chunk: ci, Column: col.Name,
				Field: field, Manifest: manifest, Data: data})
		}
	}
	if col.Type == schema.String {
		if err := checkOffsets(v.Offsets, len(v.Bytes)); err != nil {
			mismatch("string offsets", "valid", err.Error())
			return nil
		}
	}
	lo, hi := columnStats(col.Type, &v, rows)
	if lo != cc.Min {
		mismatch("min", statString(cc.Min), statString(lo))
	}
	if hi != cc.Max {
		mismatch("max", statString(cc.Max), statString(hi))
	}
	return nil
}
