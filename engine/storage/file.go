package storage

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// minAlign is the smallest alignment the reader uses for O_DIRECT offsets, lengths and buffer
// addresses: one page. Every logical block size in use (512, 4096) divides it, so one rule serves
// every device; reading up to 4 KiB more around an unaligned range is the price.
const minAlign = 4096

// Expect is what the caller (the manifest) recorded about a file. Zero fields are not checked.
type Expect struct {
	Size    int64     // exact size in bytes, if > 0
	Inode   uint64    // inode number, if > 0
	ModTime time.Time // modification time to the nanosecond, if non-zero
}

// File is a file opened for reading by a Reader. Files live as long as their Reader.
type File struct {
	Path    string
	Direct  bool  // opened with O_DIRECT (false: the filesystem refused it; buffered reads)
	Align   int64 // alignment of offsets, lengths and addresses used for this file's reads
	Size    int64 // size at open
	Dev     uint64
	Inode   uint64
	ModTime time.Time

	fd int
	id int // index in the reader's file table; the registered-file slot when < RegisteredFiles
}

// openFile opens path read-only, with O_DIRECT unless the filesystem rejects it (EINVAL, e.g. an
// old tmpfs) or direct is false, and checks it against exp. onBuffered is called when a direct
// open had to fall back to buffered I/O.
func openFile(path string, exp Expect, direct bool, onBuffered func(path string)) (*File, error) {
	flags := unix.O_RDONLY | unix.O_CLOEXEC
	fd, err := -1, error(nil)
	isDirect := false
	if direct {
		fd, err = unix.Open(path, flags|unix.O_DIRECT, 0)
		isDirect = err == nil
		if errors.Is(err, unix.EINVAL) {
			onBuffered(path)
		}
	}
	if fd < 0 && (err == nil || errors.Is(err, unix.EINVAL)) {
		fd, err = unix.Open(path, flags, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("engine/storage: open %s: %w", path, err)
	}
	f := &File{Path: path, Direct: isDirect, Align: minAlign, fd: fd}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("engine/storage: stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("engine/storage: open %s: %w", path, ErrNotRegular)
	}
	f.Size, f.Dev, f.Inode = st.Size, st.Dev, st.Ino
	f.ModTime = time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
	if isDirect {
		var sx unix.Statx_t
		if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &sx) == nil && sx.Mask&unix.STATX_DIOALIGN != 0 {
			a := int64(max(sx.Dio_offset_align, sx.Dio_mem_align))
			if a > minAlign {
				// Buffers are only page aligned; a device needing more cannot be served directly.
				unix.Close(fd)
				return nil, fmt.Errorf("engine/storage: open %s: O_DIRECT alignment %d exceeds the page size", path, a)
			}
		}
	}
	if err := f.check(exp); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return f, nil
}

// check compares the file as opened with the caller's expectation.
func (f *File) check(exp Expect) error {
	switch {
	case exp.Size > 0 && f.Size != exp.Size:
		return fmt.Errorf("engine/storage: open %s: size %d, expected %d: %w", f.Path, f.Size, exp.Size, ErrChanged)
	case exp.Inode > 0 && f.Inode != exp.Inode:
		return fmt.Errorf("engine/storage: open %s: inode %d, expected %d (replaced): %w", f.Path, f.Inode, exp.Inode, ErrChanged)
	case !exp.ModTime.IsZero() && !f.ModTime.Equal(exp.ModTime):
		return fmt.Errorf("engine/storage: open %s: modified %s, expected %s: %w", f.Path, f.ModTime.Format(time.RFC3339Nano), exp.ModTime.Format(time.RFC3339Nano), ErrChanged)
	}
	return nil
}

// currentSize re-reads the size through the open descriptor (to explain a short read).
func (f *File) currentSize() (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return 0, err
	}
	return st.Size, nil
}

func (f *File) close() error { return unix.Close(f.fd) }
