package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"gostachio/dataset/arrowipc"
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
	Tables    int    `json:"tables"`
	Chunks    int    `json:"chunks"`
	Buffers   int    `json:"buffers"`
	Bytes     int64  `json:"bytes"`
	// Bad lists the buffers that did not match (at most maxBadBuffers).
	Bad []BadBuffer `json:"bad"`
	// BadCount counts every buffer that did not match.
	BadCount int `json:"bad_count"`
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

// maxBadBuffers bounds VerifyReport.Bad: a file overwritten wholesale
// would list every buffer.
const maxBadBuffers = 20

// Verify reads every buffer of every chunk of ds and checks it against its
// recorded checksum. progress, if not nil, is called after each chunk with
// the bytes verified so far and the total. It returns the report and an
// error wrapping ErrChecksum when any buffer does not match (the report
// then lists them), ErrNoChecksums when the manifest records none, or the
// first read error (a file shorter than its buffers: ErrCorrupt).
func (ds *Dataset) Verify(ctx context.Context, progress func(done, total int64)) (*VerifyReport, error) {
	r := &VerifyReport{Dir: ds.Dir, Checksums: ds.Manifest.Checksums}
	if !ds.Checksummed() {
		return r, fmt.Errorf("dataset: %s: %w", ds.Dir, ErrNoChecksums)
	}
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
	var buf []byte
	for ti := range ds.Manifest.Tables {
		tm := &ds.Manifest.Tables[ti]
		r.Tables++
		files := make([]*os.File, len(tm.Files))
		closeAll := func() {
			for _, f := range files {
				if f != nil {
					f.Close()
				}
			}
		}
		for ci := range tm.Chunks {
			if err := ctx.Err(); err != nil {
				closeAll()
				return r, err
			}
			ch := &tm.Chunks[ci]
			path := ds.filePath(tm, ch.File)
			if files[ch.File] == nil {
				f, err := os.Open(path)
				if err != nil {
					closeAll()
					return r, fmt.Errorf("dataset: verify %s: %w", tm.Name, err)
				}
				files[ch.File] = f
			}
			f := files[ch.File]
			for k, cc := range ch.Columns {
				for _, b := range cc.Buffers {
					if int64(cap(buf)) < b.Len {
						buf = make([]byte, b.Len)
					}
					data := buf[:b.Len]
					if _, err := f.ReadAt(data, b.Off); err != nil {
						if err == io.EOF {
							err = io.ErrUnexpectedEOF
						}
						closeAll()
						return r, corrupt(path, "table %s chunk %d column %s: read %d bytes at offset %d: %v",
							tm.Name, ci, tm.Schema.Columns[k].Name, b.Len, b.Off, err)
					}
					r.Buffers++
					r.Bytes += b.Len
					if got := arrowipc.CRC32C(data); got != b.CRC {
						r.BadCount++
						if len(r.Bad) < maxBadBuffers {
							r.Bad = append(r.Bad, BadBuffer{File: path, Table: tm.Name, Chunk: ci,
								Column: tm.Schema.Columns[k].Name, Offset: b.Off, Length: b.Len, Want: b.CRC, Got: got})
						}
					}
				}
			}
			r.Chunks++
			if progress != nil {
				progress(r.Bytes, total)
			}
		}
		closeAll()
	}
	if r.BadCount > 0 {
		return r, fmt.Errorf("dataset: %s: %w: %d of %d buffers differ from their recorded checksums, first: %s",
			ds.Dir, ErrChecksum, r.BadCount, r.Buffers, r.Bad[0])
	}
	return r, nil
}
